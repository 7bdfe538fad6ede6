import t from 'tap'
import { modelOptions, resolveOptions, topLevelOverrides } from '../../core/config/request-options.js'

t.test('options are layered, split into load-time and sampling, and unknown keys go nowhere', async (t) => {
  const resolved = resolveOptions({ defaults: { temperature: 0.7, num_ctx: 4096 }, configured: { temperature: 0.2 }, request: { top_k: 5, num_ctx: 512, tool_choice: 'required', grammar: 'root ::= "x"' } })
  t.same(resolved.load, { num_ctx: 512 }, 'load-time options: the request wins')
  t.same(resolved.loadRequested, { num_ctx: 512 }, 'what the request set itself')
  t.same(resolved.sampling, { temperature: 0.2, top_k: 5 }, 'sampling: per-model over defaults, the request over both; tool_choice and grammar dropped')
  t.same(resolved.unknown, ['tool_choice', 'grammar'], 'the request\'s unknown keys, to be logged')
})

t.test('num_predict is max_tokens in every layer, and a later layer wins whichever name it uses', async (t) => {
  const defaults = { max_tokens: 2048 }
  t.same(resolveOptions({ defaults, request: { num_predict: 3 } }).sampling, { max_tokens: 3 }, 'the request\'s num_predict over the default max_tokens')
  t.same(resolveOptions({ defaults: { num_predict: 7 } }).sampling, { max_tokens: 7 }, 'config.yaml default_options.num_predict')
  t.same(resolveOptions({ defaults, configured: { num_predict: 9 } }).sampling, { max_tokens: 9 }, 'models.<name>.options.num_predict')
  t.same(resolveOptions({ defaults, parameters: { num_predict: 4 } }).sampling, { max_tokens: 4 }, 'the model\'s own parameters')
  t.same(resolveOptions({ defaults, parameters: { max_tokens: 4 }, configured: { num_predict: 9 } }).sampling, { max_tokens: 9 }, 'config.yaml over the model\'s own, across names')
  t.same(resolveOptions({ defaults, parameters: { num_predict: 4 }, configured: { max_tokens: 9 } }).sampling, { max_tokens: 9 }, 'and the other way round')
  t.same(resolveOptions({ defaults, request: { num_predict: 3 }, overrides: { max_tokens: 5 } }).sampling, { max_tokens: 5 }, 'a top-level max_tokens over options.num_predict')
  t.same(resolveOptions({ defaults, request: { num_predict: 3, max_tokens: 5 } }).sampling, { max_tokens: 5 }, 'both in one layer: max_tokens, the contract\'s name')
  t.same(resolveOptions({ defaults, request: { num_predict: -2 } }).sampling, { max_tokens: -1 }, 'Ollama\'s -2 (fill the context) is llama-server\'s -1')
})

t.test('a model\'s own options, as /api/show lists them: config.yaml\'s over those it was created with, names kept', async (t) => {
  t.same(modelOptions({ num_predict: 3, temperature: 0.1 }, { temperature: 0.5 }), { num_predict: 3, temperature: 0.5 })
  t.same(modelOptions({ num_predict: 3 }, { max_tokens: 8 }), { max_tokens: 8 }, 'one setting under either name')
  t.same(modelOptions(null, undefined), {})
})

t.test('an API\'s top-level fields as overrides: each under the option it sets; null and absent set nothing', async (t) => {
  const fields = { temperature: 'temperature', max_output_tokens: 'max_tokens', top_p: 'top_p' }
  t.same(topLevelOverrides({ temperature: 0.2, max_output_tokens: 9, top_p: null, model: 'm' }, fields), { temperature: 0.2, max_tokens: 9 })
  const resolved = resolveOptions({ defaults: {}, request: { max_tokens: 100, temperature: 1 }, overrides: topLevelOverrides({ max_output_tokens: 9 }, fields) })
  t.equal(resolved.sampling.max_tokens, 9, 'the top-level field wins over the same option in `options`')
  t.equal(resolved.sampling.temperature, 1)
})

t.test('a request\'s num_thread is held to the machine\'s CPUs (1024 started 1,036 threads); config\'s is the admin\'s', async (t) => {
  const { availableParallelism } = await import('node:os')
  const cpus = availableParallelism()
  t.throws(() => resolveOptions({ defaults: {}, request: { num_thread: cpus + 1 } }), { statusCode: 400, code: 'invalid_option', message: `options num_thread ${cpus + 1}: this machine has ${cpus} CPUs, so at most ${cpus}` })
  t.same(resolveOptions({ defaults: {}, request: { num_thread: cpus } }).load, { num_thread: cpus }, 'as many as there are CPUs')
  t.same(resolveOptions({ defaults: { num_thread: cpus + 1 }, request: {} }).load, { num_thread: cpus + 1 }, 'config.yaml\'s default is not refused')
})
