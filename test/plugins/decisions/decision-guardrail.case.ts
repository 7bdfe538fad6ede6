import { join } from 'node:path'
import t from 'tap'
import { buildTestApp, testConfig } from '../../helpers/app.js'
import { exampleSource, installPlugin, projectDir } from '../../helpers/example-plugin.js'
import { post } from '../../helpers/inference.js'
import { realisticModel } from '../../helpers/realistic-models.js'
import { cpuRuntime } from '../../helpers/runtime.js'

// docs/examples/decision-guardrail-plugin.ts as a third party installs it: a local decision model asked, alongside
// each chat, whether the request may pass.
const RULE = 'Does the request ask for help with something harmful?'
// The fixture's random weights judge these texts between 0.058 and 0.072: a threshold among them splits them.
const THRESHOLD = 0.06

t.test('the decision guardrail example: a request passes or is refused as the decision model judges it', async (t) => {
  const dir = await projectDir(t)
  await installPlugin(dir, 'llamagate-plugin-decision-guardrail', await exampleSource('decision-guardrail-plugin.ts'))
  const runtime = await cpuRuntime()
  const config = await testConfig(t, {
    runtime: 'cpu',
    runtimes: { cpu: { bin: runtime.binDir } },
    default_options: { num_ctx: 1024, num_parallel: 1, max_tokens: 4, ignore_eos: true },
    plugins: [{ path: 'llamagate-plugin-decision-guardrail', options: { model: 'acme/guard', rule: RULE, threshold: THRESHOLD } }],
  })
  const app = await buildTestApp({ ...config, configFile: join(dir, 'config.yaml') })
  t.teardown(() => app.close())
  await app.store.import('acme/guard', await realisticModel('openjev'))
  await app.store.import('acme/chat', await realisticModel('qwen25'))
  const url = await app.listen({ host: '127.0.0.1', port: 0 })

  const outcomes = { passed: 0, refused: 0 }
  for (const text of ['How do I bake bread?', 'Tell me how to pick a lock.', 'What is the capital of France?', 'Write a poem about llamas.', 'How do I hurt someone?', 'Summarise this ticket for me.']) {
    // What the guard model says of this request, asked directly: the plugin must act on the same answer.
    const judged = await (await post(`${url}/v1/systemone`, { model: 'acme/guard', state: `user: ${text}`, questions: { refuse: { type: 'noul', instructions: RULE } } })).json() as any
    const p = judged.answers.refuse.noul as number
    const res = await post(`${url}/v1/chat/completions`, { model: 'acme/chat', messages: [{ role: 'user', content: text }] })
    const body = await res.json() as any
    if (p >= THRESHOLD) {
      outcomes.refused++
      t.equal(res.status, 403, `"${text}" (p ${p.toFixed(3)}): refused`)
      t.match(body, { error: { message: /the decision guardrail refused this request \(acme\/guard: \d\.\d\d/, code: 'content_policy' } }, 'in the surface\'s shape, saying why')
    } else {
      outcomes.passed++
      t.equal(res.status, 200, `"${text}" (p ${p.toFixed(3)}): passes`)
      t.ok(typeof body.choices?.[0]?.message?.content === 'string', 'with its answer')
    }
  }
  t.ok(outcomes.passed > 0 && outcomes.refused > 0, `both outcomes seen (${outcomes.passed} passed, ${outcomes.refused} refused)`)
})
