import { join } from 'node:path'
import t from 'tap'
import { TEMPLATE_RENDER_MS, TemplateRenderer } from '../../../plugins/decisions/template-renderer.js'
import { writeRealisticModel } from '../../../scripts/fixtures/realistic-model.js'
import { tempDir } from '../../helpers/app.js'
import { post, serveRealisticModels } from '../../helpers/inference.js'
import { REALISTIC, runtimeSource } from '../../helpers/realistic-models.js'

// A decision model's question template comes from a file in the models folder: hostile until shown otherwise. It is
// rendered on a thread of its own, stopped past TEMPLATE_RENDER_MS or its heap, and the server goes on.

// Ten billion turns of a loop that holds no memory: only the deadline stops it.
const ENDLESS = '{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}'
// A list doubled forty times: it takes the thread's heap long before it ends.
const GREEDY = '{% set l = [0] %}{% for i in range(40) %}{% set l = l + l %}{% endfor %}{{ l | length }}'

t.test('the renderer: a template that does not end is stopped, one that eats memory too; the next renders go on', async (t) => {
  const renderer = new TemplateRenderer()
  t.teardown(() => renderer.close())
  t.equal(await renderer.render('state: {{ state }}', { state: 'fine' }), 'state: fine')
  const [endless, after] = await Promise.allSettled([renderer.render(ENDLESS, {}), renderer.render('{{ 1 + 1 }}', {})])
  t.match(endless, { status: 'rejected', reason: { statusCode: 500, code: 'template_error', message: `the model's decision template (tokenizer.chat_template.systemone) took longer than ${TEMPLATE_RENDER_MS} ms to render one question: it was stopped` } })
  t.same(after, { status: 'fulfilled', value: '2' }, 'the render queued behind it is rendered on a fresh thread')
  // The heap's bound alone: a renderer that waits long enough for its heap to run out, however slow the machine, with
  // a small heap that runs out in a moment (at the server's 256 MiB a busy machine took 6-8 s).
  const patient = new TemplateRenderer(10 * 60_000, 16)
  t.teardown(() => patient.close())
  await t.rejects(patient.render(GREEDY, {}), { code: 'template_error', message: /stopped its rendering thread: .*memory limit/ }, 'a template that takes the heap: stopped at its limit')
  t.equal(await patient.render('{{ 2 + 2 }}', {}), '4', 'and the next render goes on')
  await t.rejects(renderer.render("{% set s = 'xxxxxxxxxxxxxxxx' %}{% for i in range(40) %}{% set s = s + s %}{% endfor %}{{ s }}", {}), { code: 'template_error' }, 'one that writes without end: refused')
  await t.rejects(renderer.render('{% if %}', {}), { code: 'template_error', message: /could not be rendered/ }, 'a broken template: its parser\'s words')
  t.equal(await renderer.render('{{ x }}', { x: 'still here' }), 'still here')
})

t.test('a decision model whose template does not end: its request fails with 500, another model\'s is answered meanwhile', async (t) => {
  const file = join(await tempDir(t), 'hostile.gguf')
  await writeRealisticModel({
    ...REALISTIC.openjev, file, llamaCppSrc: (await runtimeSource()).source, name: 'hostile openjev',
    metadata: { ...REALISTIC.openjev.metadata, 'tokenizer.chat_template.systemone': { type: 'string', value: ENDLESS } },
  })
  const { app, url } = await serveRealisticModels(t, { 'acme/openjev': 'openjev' }, { models: { 'acme/hostile': { options: { num_parallel: 1 } } } })
  await app.store.import('acme/hostile', file)
  const ask = { state: 'A parcel came late.', questions: { late: { type: 'noul', instructions: 'Is it late?' } } }
  const hostile = post(`${url}/v1/systemone`, { model: 'acme/hostile', ...ask })
  const fine = await post(`${url}/v1/systemone`, { model: 'acme/openjev', ...ask })
  t.equal(fine.status, 200, `the other model answers: ${await fine.clone().text()}`)
  const refused = await hostile
  t.equal(refused.status, 500)
  t.match(await refused.json(), { error: { code: 500, type: 'server_error', message: /decision template .* took longer than/ } }, 'in llama-server\'s shape, naming the template')
  const again = await post(`${url}/v1/systemone`, { model: 'acme/openjev', ...ask })
  t.equal(again.status, 200, 'and answers after it')
})
