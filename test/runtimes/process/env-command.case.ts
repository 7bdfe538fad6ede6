import { execFile } from 'node:child_process'
import { mkdir, readFile, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { withEnv } from '../../../runtimes/process/env-command.js'
import { startRpcWorker } from '../../../runtimes/rpc/rpc-worker.js'
import { freePort } from '../../../runtimes/process/free-port.js'
import { tempDir } from '../../helpers/app.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { until } from '../../helpers/until.js'

// A runtime kind's variables reach the programs started for it (llama-server: test/core/runtime-kind-example.case.ts).

t.test('withEnv: env(1) in front only when there are variables', async (t) => {
  t.same(withEnv(['/bin/llama-server', '--port', '1'], undefined), ['/bin/llama-server', '--port', '1'])
  t.same(withEnv(['/bin/llama-server'], {}), ['/bin/llama-server'])
  t.same(withEnv(['/bin/llama-server', '-x'], { A: '1', B: 'two words' }), ['/usr/bin/env', 'A=1', 'B=two words', '/bin/llama-server', '-x'])
})

t.test('withEnv: a program whose path holds "=" runs, with the variables, not read as one more variable', async (t) => {
  const dir = join(await tempDir(t), 'build=2')
  await mkdir(dir)
  await symlink('/usr/bin/printenv', join(dir, 'printenv'))
  const [file, ...args] = withEnv([join(dir, 'printenv'), 'ZES_ENABLE_SYSMAN'], { ZES_ENABLE_SYSMAN: '1' })
  const { stdout } = await promisify(execFile)(file!, args)
  t.equal(stdout, '1\n', 'the program ran with its variable')
})

t.test('an RPC worker starts with its kind\'s variables, in place (its pid is the worker\'s)', async (t) => {
  const build = await cpuRuntime()
  const lines: string[] = []
  const worker = await startRpcWorker({ build, host: '127.0.0.1', port: await freePort(), threads: 1, env: { ZES_ENABLE_SYSMAN: '1' }, onLine: (line) => lines.push(line) })
  t.teardown(() => worker.stop())
  await until('the worker runs its binary', async () => (await readFile(`/proc/${worker.pid}/cmdline`, 'latin1')).startsWith(build.rpcServerPath!))
  t.ok((await readFile(`/proc/${worker.pid}/environ`, 'latin1')).split('\0').includes('ZES_ENABLE_SYSMAN=1'), `the variable is in its environment (its output: ${lines.join(' | ')})`)
})
