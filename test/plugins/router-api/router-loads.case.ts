// A router load answered at once and run behind: its status while it runs and after, and the release of what the
// asking key's admission held for it, once, whether the load succeeds or fails.
import t from 'tap'
import { RouterLoads, type RouterScheduler } from '../../../plugins/router-api/router-loads.js'

function deferred (): { promise: Promise<void>, resolve: () => void, reject: (err: Error) => void } {
  let resolve!: () => void
  let reject!: (err: Error) => void
  const promise = new Promise<void>((res, rej) => { resolve = res; reject = rej })
  return { promise, resolve, reject }
}

t.test('the release comes once the load is over, loaded or failed', async (t) => {
  const pending = new Map<string, ReturnType<typeof deferred>>()
  const scheduler: RouterScheduler = {
    load: async (name) => { const d = deferred(); pending.set(name, d); return d.promise },
    expire: async () => {},
    snapshot: () => [],
  }
  const warnings: unknown[] = []
  const loads = new RouterLoads(scheduler, { warn: (...args: unknown[]) => { warnings.push(args) } } as never)
  const released = { good: 0, bad: 0 }
  loads.start('acme/good', 'generate', () => { released.good++ })
  loads.start('acme/bad', 'generate', () => { released.bad++ })
  t.same(released, { good: 0, bad: 0 }, 'held while the loads run')
  t.same(loads.status('acme/good'), { value: 'loading' })

  pending.get('acme/good')!.resolve()
  pending.get('acme/bad')!.reject(new Error('no room'))
  await new Promise((resolve) => setImmediate(resolve))
  t.same(released, { good: 1, bad: 1 }, 'released once each, whichever way the load ended')
  t.same(loads.status('acme/bad'), { value: 'unloaded', failed: true, exit_code: 1 })
  t.equal(warnings.length, 1, 'the failed load logged')
})
