import t from 'tap'
import { resolveOptions } from '../../core/request-options.js'

t.test('options are layered, split into load-time and sampling, and unknown keys go nowhere', async (t) => {
  const resolved = resolveOptions({ temperature: 0.7, num_ctx: 4096 }, { temperature: 0.2 }, { top_k: 5, num_ctx: 512, tool_choice: 'required', grammar: 'root ::= "x"' })
  t.same(resolved.load, { num_ctx: 512 }, 'load-time options: the request wins')
  t.same(resolved.loadRequested, { num_ctx: 512 }, 'what the request set itself')
  t.same(resolved.sampling, { temperature: 0.2, top_k: 5 }, 'sampling: per-model over defaults, the request over both; tool_choice and grammar dropped')
})
