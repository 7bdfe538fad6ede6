import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { clientFor } from '../../../core/cli/commands/command.js'
import { importCommand } from '../../../plugins/storage/import-command.js'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { serveForCli } from '../../helpers/cli-server.js'
import { sharedServer } from '../../helpers/inference.js'
import { runCli, runCliHere } from '../../helpers/serve-process.js'

// One server for the file's tests (its models folder a temporary one, as no shell's default home would be).
const served = sharedServer(() => serveForCli(t))

t.test('list, ps, show, cp, stop and rm against a real server: tables, --json, exit codes', async (t) => {
  const { url } = await served()
  // The commands in this process (runCliHere: main with its output captured), a process each would cost a second
  // or two; rm below runs as the program, its exit code and stderr as a shell sees them.
  const cli = (...args: string[]): ReturnType<typeof runCliHere> => runCliHere([...args, '--host', url])

  const list = await cli('list')
  t.equal(list.code, 0, list.stderr)
  t.match(list.stdout, /^NAME\s+ID\s+SIZE\s+FORMAT\s+MODIFIED\n/, 'a header line')
  t.match(list.stdout, /\nacme\/qwen\s+[0-9a-f]{12}\s+\d+(\.\d+)? MiB\s+gguf\s+(now|\d+ seconds? ago)\n$/, 'one row: name, short digest, human size, age')
  t.equal(list.stderr, '')
  const ls = await cli('ls', '--json')
  t.equal(ls.code, 0)
  const tags = JSON.parse(ls.stdout) as { models: Array<{ name: string, size: number, digest: string }> }
  t.same(tags.models.map((m) => m.name), ['acme/qwen'], '--json is the server\'s /api/tags, parsed back')
  t.ok(list.stdout.includes(tags.models[0]!.digest.replace(/^sha256:/, '').slice(0, 12)), 'the ID is the digest\'s start')

  const idle = await cli('ps')
  t.equal(idle.code, 0)
  t.equal(idle.stdout, 'NAME   ID   SIZE   WHERE   PROCESSOR   CONTEXT   REQUESTS   UNTIL\n', 'nothing loaded: the header alone')
  const load = await fetch(`${url}/api/generate`, { method: 'POST', body: JSON.stringify({ model: 'acme/qwen' }) })
  t.equal(load.status, 200)
  const ps = await cli('ps')
  t.match(ps.stdout, /\nacme\/qwen\s+[0-9a-f]{12}\s+\d+(\.\d+)? MiB\s+local \(cpu\)\s+100% CPU\s+512\s+0\s+(4|5) minutes from now\n$/, 'the loaded model, its context and when it unloads')
  const psJson = JSON.parse((await cli('ps', '--json')).stdout) as { models: Array<{ name: string, state: string, context_length: number }> }
  t.match(psJson.models, [{ name: 'acme/qwen', state: 'loaded', context_length: 512 }])

  const show = await cli('show', 'acme/qwen')
  t.equal(show.code, 0, show.stderr)
  t.match(show.stdout, /^ {2}Model\n {4}architecture {8}qwen2\n {4}parameters {10}\S+\n {4}context length {6}\d+\n {4}embedding length {4}64\n/, 'the Model section, aligned')
  t.match(show.stdout, /\n {2}Capabilities\n {4}completion\n {4}tools\n/)
  const showJson = JSON.parse((await cli('show', 'acme/qwen', '--json')).stdout) as { capabilities: string[], template: string }
  t.same(showJson.capabilities, ['completion', 'tools'])
  t.equal((await cli('show', 'acme/qwen', '--template')).stdout, `${showJson.template}\n`, '--template prints the template alone')
  t.match((await cli('show', 'acme/qwen', '--verbose')).stdout, /\n {2}Metadata\n[\s\S]*general\.architecture\s+qwen2/)

  const cp = await cli('cp', 'acme/qwen', 'acme/copy')
  t.equal(cp.code, 0, cp.stderr)
  t.equal(cp.stdout, "copied 'acme/qwen' to 'acme/copy'\n")
  t.match((await cli('list')).stdout, /acme\/copy[\s\S]*acme\/qwen|acme\/qwen[\s\S]*acme\/copy/, 'both names listed')

  const stop = await cli('stop', 'acme/qwen')
  t.equal(stop.code, 0, stop.stderr)
  t.equal(stop.stdout, "stopped 'acme/qwen'\n")
  t.equal((await cli('ps')).stdout.split('\n').length, 2, 'nothing loaded after stop')

  const rm = await runCli(['rm', 'acme/copy', 'acme/missing', '--host', url])
  t.equal(rm.code, 1, 'one of the names could not be deleted')
  t.equal(rm.stdout, "deleted 'acme/copy'\n", 'the other was')
  t.equal(rm.stderr, 'llamagate rm: model "acme/missing" not found, pull it first\n', 'one line for the one that failed')
  t.same((JSON.parse((await cli('list', '--json')).stdout) as typeof tags).models.map((m) => m.name), ['acme/qwen'])
})

t.test('import: through the running server into its store; with none, into this home\'s, and says which', async (t) => {
  const { app, url } = await served()
  const dir = await tempDir(t)
  const file = (await writeTinyGguf({ file: join(dir, 'tiny.gguf') })).file
  const through = await runCli(['import', 'acme/through', file, '--host', url], { LLAMAGATE_HOME: dir })
  t.equal(through.code, 0, through.stderr)
  t.match(through.stdout, new RegExp(`^imported acme/through \\(\\d+ bytes\\) through the server at ${url}\n$`))
  t.ok(app.store.lookup('acme/through'), 'in the server\'s store')
  t.notOk(existsSync(join(dir, 'models')), 'nothing in the home this shell would pick')

  // The command itself, in this process (a CLI process more would cost a second or two each).
  const config = join(dir, 'config.yaml')
  await writeFile(config, `data_dir: ${dir}\n`)
  const importing = async (host: string, path: string, name: string): Promise<{ code: number | null, out: string }> => {
    let out = ''
    const write = { write: (text: string) => { out += text; return true } } as unknown as NodeJS.WriteStream
    const values = { host, config }
    try {
      const code = await importCommand.run({ values, positionals: [name, path], stdout: write, stderr: write, stdin: process.stdin, client: clientFor(values, {}, undefined), config: async () => { throw new Error('not read') } })
      return { code, out }
    } catch (err) {
      return { code: null, out: (err as Error).message }
    }
  }
  const refused = await importing(url, join(dir, 'missing.gguf'), 'acme/nothing')
  t.equal(refused.code, null, 'a server that refuses says why; nothing goes to the disk instead')
  t.match(refused.out, /missing\.gguf/)
  t.notOk(existsSync(join(dir, 'models')))

  // Port 1: nothing listens there, the connection is refused at once.
  const closed = 'http://127.0.0.1:1'
  const alone = await importing(closed, file, 'acme/alone')
  t.equal(alone.code, 0, alone.out)
  const models = join(dir, 'models')
  t.match(alone.out, 'imported acme/alone (')
  t.match(alone.out, `\nno server answered at ${closed}: registered in the models folder ${models};`, 'says which home')
  t.ok(existsSync(join(models, 'acme', 'alone', 'manifest.json')), 'stored there')

  // Port 0 is no server's address (a config with `port: 0` takes any free one): nothing to ask, nothing to report.
  const anyPort = await importing('http://127.0.0.1:0', file, 'acme/anyport')
  t.equal(anyPort.code, 0, anyPort.out)
  t.match(anyPort.out, `imported acme/anyport (`)
  t.notMatch(anyPort.out, 'no server answered', 'no address was asked')
  t.ok(existsSync(join(models, 'acme', 'anyport', 'manifest.json')))
})
