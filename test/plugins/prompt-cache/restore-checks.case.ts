// Whether each restored save served (plugins/prompt-cache/restore-checks.ts): judged once, by the first task its slot
// takes, from what llama-server says of that task (the patch set's prompt_reuse: what the cache shared, what it
// reused), or unused when its runtime stops first. The runtime is a stand-in here; prompt-cache-patches.case.ts and
// restore-verdicts.case.ts check the same with the real llama-server.
import t from 'tap'
import type { SlotCache } from '../../../runtimes/index.js'
import { judgeSlot, RestoreChecks, type RestoredSave, type RestoreVerdict } from '../../../plugins/prompt-cache/restore-checks.js'
import { until } from '../../helpers/until.js'

const restored = { slot: 0, save: 'abc-1', tokens: 4000 }
const slot = (fields: Partial<SlotCache>): SlotCache => ({ id: 0, nCtx: 8192, tokens: 4100, busy: false, salt: '', task: 7, ...fields })

/** A judge over stand-in slots, with each verdict listed as `save:outcome`. */
function judgeOver (read: () => SlotCache[] | Promise<SlotCache[]>, saves: RestoredSave[], minTokens = 1024): { checks: RestoreChecks, verdicts: string[], reads: () => number, all: RestoreVerdict[] } {
  let reads = 0
  const verdicts: string[] = []
  const all: RestoreVerdict[] = []
  const endpoint = { slotCaches: async () => { reads++; return read() } }
  const checks = new RestoreChecks({
    model: 'm', endpoint, minTokens, checkpoints: true, restored: saves,
    onVerdict: (save, verdict) => { verdicts.push(`${save.save}:${verdict.outcome}`); all.push(verdict) },
  })
  return { checks, verdicts, reads: () => reads, all }
}

t.test('judgeSlot: reused, missed, undecided, or nothing to say', async (t) => {
  const options = { minTokens: 1024, checkpoints: true }
  t.same(judgeSlot(slot({ common: 4000, reused: 3990 }), restored, options), { outcome: 'reused', reused: 3990 }, 'reused all but the template\'s tail')
  t.same(judgeSlot(slot({ common: 4000, reused: 2000 }), restored, options), { outcome: 'reused', reused: 2000 }, 'half of what it shared: a rollback past a long answer')
  t.same(judgeSlot(slot({ busy: true, common: 4000, reused: 3990 }), restored, options), { outcome: 'reused', reused: 3990 }, 'a running task that has read its prompt: judged without waiting for its end')
  t.match(judgeSlot(slot({ common: 4000, reused: 0 }), restored, options), { outcome: 'missed', broken: true, reason: /shared 4000 tokens of the 4000 restored with the prompt and reused 0: the runtime evaluated the prompt again/ })
  t.match(judgeSlot(slot({ common: 4000, reused: 12 }), restored, { minTokens: 1024, checkpoints: false }), { outcome: 'missed', broken: true, reason: /carry no context checkpoints.*patch set/ }, 'a build without the checkpoints says why')
  t.match(judgeSlot(slot({ common: 300, reused: 0 }), restored, options), { outcome: 'missed', broken: false, reason: /another conversation took the slot/ }, 'another conversation took the slot: missed, the save not blamed')
  t.equal(judgeSlot(slot({ busy: true, common: 0, reused: 0 }), restored, options), 'undecided', 'a task that has not begun its prompt')
  t.equal(judgeSlot(slot({ reused: 0 }), restored, options), null, 'a build that does not say what the cache shared')
})

t.test('RestoreChecks: each restored slot judged once, as soon as its first task read its prompt', async (t) => {
  let slots: SlotCache[] = [slot({ id: 0, task: undefined }), slot({ id: 1, busy: true, common: 0, reused: 0 }), slot({ id: 2, busy: true, common: 3000, reused: 2990 })]
  const { checks, verdicts, reads } = judgeOver(() => slots, [{ slot: 0, save: 's0', tokens: 4000 }, { slot: 1, save: 's1', tokens: 3000 }, { slot: 2, save: 's2', tokens: 3000 }])
  await checks.check()
  t.same(verdicts, ['s2:reused'], 'the busy slot that read its prompt is judged; one that took no task and one not begun wait')
  slots = [slot({ id: 0, common: 3900, reused: 3890 }), slot({ id: 1, common: 3000, reused: 0 }), slot({ id: 2, common: 3000, reused: 0, task: 9 })]
  await Promise.all([checks.check(), checks.check(), checks.check()])
  t.equal(reads(), 2, 'three checks at once read once (the look queued behind the read finds all judged)')
  t.same(verdicts, ['s2:reused', 's0:reused', 's1:missed'], 'each judged once: a later task on slot 2 changes nothing')
  t.ok(checks.done)
  await checks.check()
  await checks.stop()
  t.equal(reads(), 2, 'nothing left to read')
})

t.test('RestoreChecks: a check asked while a read is under way reads again after it', async (t) => {
  let answer = (): void => {}
  let slots: SlotCache[] = [slot({ task: undefined })]
  const { checks, verdicts, reads } = judgeOver(async () => {
    const then = slots
    if (reads() === 1) await new Promise<void>((resolve) => { answer = resolve })
    return then
  }, [restored])
  const first = checks.check()
  // A request took the slot after that read went out: its first token asks again.
  slots = [slot({ busy: true, common: 4000, reused: 3990 })]
  const second = checks.check()
  answer()
  await Promise.all([first, second])
  t.equal(reads(), 2)
  t.same(verdicts, ['abc-1:reused'], 'seen by the read after, not lost with the one before')
})

t.test('RestoreChecks: a slot whose task has not begun its prompt is looked at again by itself', async (t) => {
  let slots: SlotCache[] = [slot({ busy: true, common: 0, reused: 0 })]
  const { checks, verdicts } = judgeOver(() => slots, [restored])
  await checks.check()
  t.same(verdicts, [])
  slots = [slot({ busy: true, common: 4000, reused: 3990 })]
  await until('the retry\'s verdict', () => checks.done, 10_000)
  t.same(verdicts, ['abc-1:reused'], 'judged by the retry, with no request ending')
})

t.test('RestoreChecks: stop judges what the slots say, then every restore no task took is unused', async (t) => {
  const slots = [slot({ id: 0, common: 4000, reused: 3990 }), slot({ id: 1, task: undefined }), slot({ id: 2, busy: true, common: 0, reused: 0 })]
  const { checks, verdicts, all } = judgeOver(() => slots, [{ slot: 0, save: 's0', tokens: 4000 }, { slot: 1, save: 's1', tokens: 3000 }, { slot: 2, save: 's2', tokens: 2000 }])
  await Promise.all([checks.stop(), checks.stop()])
  t.same(verdicts, ['s0:reused', 's1:unused', 's2:unused'], 'a finished task\'s counts read at the stop; the others unused, once each')
  t.match(all[1], { reason: /stopped before a request took its slot/ })
  t.match(all[2], { reason: /stopped as a request on its slot began/ })
  t.ok(checks.done)
  await checks.check()
  t.same(verdicts.length, 3, 'nothing judged twice')
})

t.test('RestoreChecks: a stop while a read is under way (a swap right after the request) still judges it', async (t) => {
  // The read a request's end started answers after the stop began: the old judge dropped it with the rest.
  let answer = (): void => {}
  const { checks, verdicts, reads } = judgeOver(async () => {
    if (reads() === 1) await new Promise<void>((resolve) => { answer = resolve })
    return [slot({ common: 4000, reused: 3990 })]
  }, [restored])
  const ended = checks.check()
  const stopped = checks.stop()
  answer()
  await Promise.all([ended, stopped])
  t.same(verdicts, ['abc-1:reused'])
})

t.test('RestoreChecks: a runtime that cannot answer at its stop: its restores are unused, none left unjudged', async (t) => {
  const { checks, verdicts } = judgeOver(() => { throw new Error('connection refused') }, [restored, { slot: 1, save: 's1', tokens: 100 }])
  await checks.check()
  t.same(verdicts, [], 'a failed read judges nothing')
  await checks.stop()
  t.same(verdicts, ['abc-1:unused', 's1:unused'])
})

t.test('RestoreChecks: a runtime that does not answer is asked again later', async (t) => {
  let fail = true
  const { checks, verdicts } = judgeOver(() => { if (fail) throw new Error('timeout'); return [slot({ common: 4000, reused: 4000 })] }, [restored], 1)
  await checks.check()
  t.notOk(checks.done)
  fail = false
  await checks.check()
  t.same(verdicts, ['abc-1:reused'])
})

t.test('RestoreChecks: a verdict whose handling fails still leaves check() resolved', async (t) => {
  const endpoint = { slotCaches: async () => [slot({ common: 4000, reused: 0 })] }
  const checks = new RestoreChecks({ model: 'm', endpoint, minTokens: 1, checkpoints: true, restored: [restored], onVerdict: async () => { throw new Error('disk gone') } })
  await t.resolves(checks.check())
  t.ok(checks.done, 'judged all the same')
})
