import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { tempDir } from '../../helpers/app.js'
import { startServe } from '../../helpers/serve-process.js'

/** How many times the process's main thread has gone to sleep and been woken (Linux: each blocking wait is one). */
async function wakeups (pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/task/${pid}/status`, 'utf8')
  return Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)![1])
}

// A local model server runs all day on laptops: idle, it must let the CPU sleep. prom-client's event-loop lag
// histogram samples on a timer, every 10 ms by default: 100 wake-ups a second with nothing to do.
t.test('an idle gateway sleeps: its event loop wakes a few times a second, not a hundred', async (t) => {
  const dir = await tempDir(t)
  const config = join(dir, 'config.yaml')
  await writeFile(config, `data_dir: ${dir}\nport: 0\n`)
  const serve = await startServe(['--config', config])
  t.teardown(() => { serve.child.kill('SIGKILL') })
  const metrics = await (await fetch(`${serve.address}/metrics`)).text()
  t.match(metrics, /^nodejs_eventloop_lag_p99_seconds \d/m, 'the event loop\'s lag is still measured')
  await sleep(1500) // past the start's own work
  const before = await wakeups(serve.child.pid!)
  await sleep(2500)
  const perSecond = (await wakeups(serve.child.pid!) - before) / 2.5
  t.ok(perSecond < 30, `${perSecond} wake-ups a second`)
})
