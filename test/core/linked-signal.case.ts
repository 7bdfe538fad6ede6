import { getEventListeners } from 'node:events'
import t from 'tap'
import { linkedSignal } from '../../core/base/linked-signal.js'

const listeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length

t.test('aborts with the reason of the source that aborted, and lets go of the others', async (t) => {
  const instance = new AbortController()
  const client = new AbortController()
  const linked = linkedSignal([instance.signal, client.signal])
  t.equal(linked.signal.aborted, false)
  t.equal(listeners(instance.signal), 1, 'one listener on each source while linked')
  const gone = new Error('client disconnected')
  client.abort(gone)
  t.equal(linked.signal.aborted, true)
  t.equal(linked.signal.reason, gone, 'the reason says which source')
  t.equal(listeners(instance.signal), 0, 'nothing left on the source that did not abort')
  t.equal(listeners(client.signal), 0)
})

t.test('a source already aborted: the signal is aborted at once, nothing is left on the others', async (t) => {
  const instance = new AbortController()
  const stopped = new Error('model stopped')
  const client = new AbortController()
  client.abort(stopped)
  const linked = linkedSignal([instance.signal, client.signal])
  t.equal(linked.signal.aborted, true)
  t.equal(linked.signal.reason, stopped)
  t.equal(listeners(instance.signal), 0)
})

t.test('after unlink() a source that aborts no longer aborts it; unlink twice is harmless', async (t) => {
  const instance = new AbortController()
  const client = new AbortController()
  const linked = linkedSignal([instance.signal, client.signal])
  linked.unlink()
  linked.unlink()
  t.equal(listeners(instance.signal), 0)
  t.equal(listeners(client.signal), 0)
  instance.abort(new Error('unloaded'))
  t.equal(linked.signal.aborted, false)
})

t.test('a long-lived source holds no listener of 20,000 signals linked to it and unlinked; one still linked follows it', async (t) => {
  const instance = new AbortController()
  for (let i = 0; i < 20_000; i++) {
    const linked = linkedSignal([instance.signal, new AbortController().signal])
    linked.signal.addEventListener('abort', () => {}, { once: true })
    linked.unlink()
  }
  t.equal(listeners(instance.signal), 0)
  // What is still linked still follows the source.
  const live = linkedSignal([instance.signal, new AbortController().signal])
  instance.abort(new Error('unloaded'))
  t.equal(live.signal.aborted, true)
})
