import { readFile } from 'node:fs/promises'
import t from 'tap'
import { withEnv } from '../../../runtimes/process/env-command.js'
import { startRpcWorker } from '../../../runtimes/rpc/rpc-worker.js'
import { freePort } from '../../../runtimes/process/free-port.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { until } from '../../helpers/until.js'

// A runtime kind's variables reach the programs started for it (llama-server: test/core/runtime-kind-example.case.ts).

t.test('withEnv: env(1) in front only when there are variables', async (t) => {
  t.same(withEnv(['/bin/llama-server', '--port', '1'], undefined), ['/bin/llama-server', '--port', '1'])
  t.same(withEnv(['/bin/llama-server'], {}), ['/bin/llama-server'])
  t.same(withEnv(['/bin/llama-server', '-x'], { A: '1', B: 'two words' }), ['/usr/bin/env', 'A=1', 'B=two words', '/bin/llama-server', '-x'])
})

t.test('an RPC worker starts with its kind\'s variables, in place (its pid is the worker\'s)', async (t) => {
  const build = await cpuRuntime()
  const lines: string[] = []
  const worker = await startRpcWorker({ build, host: '127.0.0.1', port: await freePort(), threads: 1, env: { ZES_ENABLE_SYSMAN: '1' }, onLine: (line) => lines.push(line) })
  t.teardown(() => worker.stop())
  await until('the worker runs its binary', async () => (await readFile(`/proc/${worker.pid}/cmdline`, 'latin1')).startsWith(build.rpcServerPath!))
  t.ok((await readFile(`/proc/${worker.pid}/environ`, 'latin1')).split('\0').includes('ZES_ENABLE_SYSMAN=1'), `the variable is in its environment (its output: ${lines.join(' | ')})`)
})
