// Whether each restored save served (plugins/prompt-cache/restore-checks.ts): judged by the first task its slot takes,
// from what llama-server says of that task (the patch set's n_prompt_tokens_common beside n_prompt_tokens_cache).
// The runtime is a stand-in here; prompt-cache-patches.case.ts checks the same with the real llama-server.
import t from 'tap'
import type { SlotCache } from '../../../runtimes/index.js'
import { judgeSlot, RestoreChecks } from '../../../plugins/prompt-cache/restore-checks.js'

const restored = { slot: 0, save: 'abc-1', tokens: 4000 }
const slot = (fields: Partial<SlotCache>): SlotCache => ({ id: 0, nCtx: 8192, tokens: 4100, busy: false, salt: '', task: 7, ...fields })

t.test('judgeSlot: reused, missed, or nothing to say', async (t) => {
  const options = { minTokens: 1024, checkpoints: true }
  t.same(judgeSlot(slot({ common: 4000, reused: 3990 }), restored, options), { reused: true }, 'reused all but the template\'s tail')
  t.same(judgeSlot(slot({ common: 4000, reused: 2000 }), restored, options), { reused: true }, 'half of what it shared: a rollback past a long answer')
  const miss = judgeSlot(slot({ common: 4000, reused: 0 }), restored, options)
  t.match(miss, { reused: false, reason: /shared 4000 tokens of the 4000 restored with the prompt and reused 0: the runtime evaluated the prompt again/ })
  t.match(judgeSlot(slot({ common: 4000, reused: 12 }), restored, { minTokens: 1024, checkpoints: false }), { reused: false, reason: /carry no context checkpoints.*patch set/ }, 'a build without the checkpoints says why')
  t.equal(judgeSlot(slot({ common: 300, reused: 0 }), restored, options), null, 'another conversation took the slot: it says nothing of the save')
  t.equal(judgeSlot(slot({ reused: 0 }), restored, options), null, 'a build that does not say what the cache shared')
})

t.test('RestoreChecks: each restored slot judged once, by its first finished task', async (t) => {
  let slots: SlotCache[] = [slot({ id: 0, task: undefined }), slot({ id: 1, busy: true, common: 4000, reused: 0 })]
  let reads = 0
  const endpoint = { slotCaches: async () => { reads++; return slots } }
  const misses: Array<[string, string]> = []
  const reused: number[] = []
  const checks = new RestoreChecks({
    model: 'm', endpoint, minTokens: 1024, checkpoints: true,
    restored: [{ slot: 0, save: 's0', tokens: 4000 }, { slot: 1, save: 's1', tokens: 3000 }],
    onReused: (_model, tokens) => reused.push(tokens),
    onMiss: (_model, save, reason) => { misses.push([save, reason]) },
  })
  await checks.check()
  t.same([misses, reused, checks.done], [[], [], false], 'a slot that took no task yet and a busy one wait')
  slots = [slot({ id: 0, common: 3900, reused: 3890 }), slot({ id: 1, common: 3000, reused: 0 })]
  await Promise.all([checks.check(), checks.check()])
  t.equal(reads, 2, 'two checks at once read the slots once')
  t.same(reused, [3890], 'slot 0 served')
  t.same(misses.map(([save]) => save), ['s1'], 'slot 1 missed')
  t.ok(checks.done)
  await checks.check()
  t.equal(reads, 2, 'nothing left to read')
})

t.test('RestoreChecks: a runtime that does not answer is asked again later', async (t) => {
  let fail = true
  const endpoint = { slotCaches: async () => { if (fail) throw new Error('timeout'); return [slot({ common: 4000, reused: 4000 })] } }
  const reused: number[] = []
  const checks = new RestoreChecks({ model: 'm', endpoint, minTokens: 1, checkpoints: true, restored: [restored], onReused: (_m, n) => reused.push(n), onMiss: () => {} })
  await checks.check()
  t.notOk(checks.done)
  fail = false
  await checks.check()
  t.same(reused, [4000])
})

t.test('RestoreChecks: a miss whose deletion fails still leaves check() resolved', async (t) => {
  const endpoint = { slotCaches: async () => [slot({ common: 4000, reused: 0 })] }
  const checks = new RestoreChecks({ model: 'm', endpoint, minTokens: 1, checkpoints: true, restored: [restored], onMiss: async () => { throw new Error('disk gone') } })
  await t.resolves(checks.check())
  t.ok(checks.done, 'judged all the same')
})
