import t from 'tap'
import { EventHub } from '../../core/base/event-hub.js'

interface Events { loaded: [model: string, seconds: number], gone: [] }

t.test('listeners get their event\'s arguments, in the order they were added', async (t) => {
  const hub = new EventHub<Events>()
  const seen: string[] = []
  hub.emit('loaded', 'nobody listens', 1)
  hub.on('loaded', (model, seconds) => seen.push(`a ${model} ${seconds}`))
  hub.on('loaded', (model) => seen.push(`b ${model}`))
  hub.on('gone', () => seen.push('gone'))
  hub.emit('loaded', 'acme/tiny', 0.5)
  hub.emit('gone')
  t.same(seen, ['a acme/tiny 0.5', 'b acme/tiny', 'gone'])
})

t.test('a listener that throws is reported, and neither the emitter nor the other listeners notice', async (t) => {
  const errors: unknown[] = []
  const hub = new EventHub<Events>((err) => errors.push(err))
  let after = 0
  hub.on('gone', () => { throw new Error('observer bug') })
  hub.on('gone', () => { after++ })
  t.doesNotThrow(() => hub.emit('gone'))
  t.equal(after, 1, 'the next listener still ran')
  t.match(errors, [{ message: 'observer bug' }])
  const quiet = new EventHub<Events>()
  quiet.on('gone', () => { throw new Error('x') })
  t.doesNotThrow(() => quiet.emit('gone'), 'without a reporter: ignored')
})

t.test('off: a listener removed hears nothing more, and one removed during an emit does not make another miss it', async (t) => {
  const hub = new EventHub<Events>()
  const heard: string[] = []
  const first = (): void => { heard.push('first'); hub.off('gone', first) }
  hub.on('gone', first)
  hub.on('gone', () => heard.push('second'))
  hub.emit('gone')
  hub.emit('gone')
  t.same(heard, ['first', 'second', 'second'])
  hub.off('gone', () => {})
  hub.emit('gone')
  t.same(heard, ['first', 'second', 'second', 'second'], 'removing a listener never added changes nothing')
})
