import t from 'tap'
import { CallHooks } from '../../core/platform/call-hook-registry.js'
import { HookFailedError, type CallHook } from '../../core/platform/call-hooks.js'
import { ForbiddenError } from '../../core/base/errors.js'

// The registry and runner of call hooks, without a gateway: what a hook that throws, rejects or hangs becomes.

function logged (): { lines: Array<{ obj: object, msg: string }>, error (obj: object, msg: string): void } {
  const lines: Array<{ obj: object, msg: string }> = []
  return { lines, error: (obj, msg) => { lines.push({ obj, msg }) } }
}

t.test('a hook needs its plugin\'s name, and functions for its phases', async (t) => {
  const hooks = new CallHooks(1000)
  t.equal(hooks.empty, true)
  t.throws(() => hooks.add({ name: '' }), /needs the name of its plugin/)
  t.throws(() => hooks.add({ name: 'x', piece: 'cut' } as unknown as CallHook), /call hook "x": piece must be a function/)
  t.throws(() => hooks.add({ name: 'x', alongside: true } as unknown as CallHook), /call hook "x": alongside must be a function/)
  t.throws(() => hooks.add({ name: 'x', end: 'now' } as unknown as CallHook), /call hook "x": end must be a function/)
  hooks.add({ name: 'a', before () {} })
  hooks.add({ name: 'b', piece () {} })
  t.equal(hooks.empty, false)
  t.same(hooks.of('before').map((h) => h.name), ['a'])
  t.same(hooks.of('piece').map((h) => h.name), ['b'])
  hooks.add({ name: 'c', alongside () {} })
  t.same(hooks.of('alongside').map((h) => h.name), ['c'])
  hooks.add({ name: 'd', end () {} })
  t.same(hooks.of('piece', 'end').map((h) => h.name), ['b', 'd'], 'of several phases: in registration order')
})

t.test('a throw, a rejection or a hang fails as a HookFailedError naming the plugin; a 4xx passes as it is', async (t) => {
  const hooks = new CallHooks(30)
  const hook: CallHook = { name: 'guard' }
  const log = logged()
  t.equal(hooks.run(hook, 'piece', log, () => 'cut'), 'cut', 'an answer at once is not awaited')
  t.throws(() => hooks.run(hook, 'before', log, () => { throw new Error('broke') }), HookFailedError)
  await t.rejects(Promise.resolve(hooks.run(hook, 'after', log, () => Promise.reject(new Error('rejected')))), { statusCode: 500, message: 'the plugin "guard" failed in its after hook: see the server log' })
  const hung = await Promise.resolve(hooks.run(hook, 'before', log, () => new Promise(() => {}))).catch((err: unknown) => err)
  t.type(hung, HookFailedError)
  t.match(hung, { plugin: 'guard', phase: 'before', statusCode: 500 })
  t.same(log.lines.map((l) => l.msg), ['the plugin "guard" failed in its before hook', 'the plugin "guard" failed in its after hook', 'the plugin "guard" failed in its before hook'])
  t.match(log.lines[2]!.obj, { plugin: 'guard', hook: 'before', err: { message: /limits\.hook_timeout \(30 ms\)/ } })
  const refusal = new ForbiddenError('no')
  t.throws(() => hooks.run(hook, 'before', log, () => { throw refusal }), refusal)
  t.equal(log.lines.length, 3, 'a refusal is no failure of the plugin')
})
