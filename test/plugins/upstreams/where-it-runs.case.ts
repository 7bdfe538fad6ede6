import t from 'tap'
import { cpuRuntime } from '../../helpers/runtime.js'
import { buildTestApp, testConfig } from '../../helpers/app.js'
import { axeViolations, openPage, sharedBrowser, skipUnlessChromium } from '../../helpers/browser.js'
import { importLongContextModel, post, serveTinyModels } from '../../helpers/inference.js'
import { runCli } from '../../helpers/serve-process.js'
import { streamText } from '../../helpers/stream-text.js'
import { until } from '../../helpers/until.js'

// Where each model runs, as /api/ps, `llamagate ps` and the web page tell it: a front llamagate with a local model
// loaded and a back llamagate (upstream "gpu-box") answering a long streamed request for its model.

type Entry = Record<string, any>
const skip = skipUnlessChromium(t)
const browser = sharedBrowser(t)

async function ps (url: string): Promise<Entry[]> {
  return ((await (await fetch(`${url}/api/ps`)).json()) as { models: Entry[] }).models
}

t.test('a request in flight on an upstream: /api/ps, `llamagate ps` and the page say where each model runs', async (t) => {
  // The back: a model with room for a long answer (32k of context), so that the request is still running while we look.
  const runtime = await cpuRuntime()
  const back = await buildTestApp(await testConfig(t, {
    runtime: 'cpu', runtimes: { cpu: { bin: runtime.binDir } },
    default_options: { num_thread: 1, num_ctx: 32_768, num_parallel: 1, max_tokens: 32_000, ignore_eos: true },
  }))
  t.teardown(() => back.close())
  await importLongContextModel(t, back, 'acme/backchat')
  const backUrl = await back.listen({ host: '127.0.0.1', port: 0 })
  const front = await serveTinyModels(t, ['acme/local'], {
    upstreams: [{ name: 'gpu-box', url: backUrl, kind: 'llamagate', prefix: 'back/' }],
    default_options: { num_thread: 1, num_ctx: 512, num_parallel: 1, max_tokens: 32_000 },
  })
  await until('the upstream\'s model listed', async () => (await (await fetch(`${front.url}/api/tags`)).text()).includes('back/acme/backchat'))
  t.equal((await post(`${front.url}/api/generate`, { model: 'acme/local', prompt: 'hi', stream: false, options: { num_predict: 2 } })).status, 200)
  t.same((await ps(front.url)).map((m) => m.name), ['acme/local'], 'an upstream model with nothing in flight is not listed')

  const holder = new AbortController()
  t.teardown(() => holder.abort())
  const running = streamText(await post(`${front.url}/api/chat`, {
    model: 'back/acme/backchat', messages: [{ role: 'user', content: 'go on' }], options: { num_predict: 32_000 },
  }, { accept: 'application/x-ndjson' }, holder.signal))
  await running.readUntil('its first token', (text) => /"content":"[^"]/.test(text))

  const models = await ps(front.url)
  t.equal(models.length, 2, 'the local model and the upstream one')
  t.match(models.find((m) => m.name === 'acme/local'), { where: 'local', runtime: 'cpu', format: 'gguf' })
  t.notOk('upstream' in models.find((m) => m.name === 'acme/local')!, 'a local model names no upstream')
  const remote = models.find((m) => m.name === 'back/acme/backchat')!
  t.match(remote, {
    where: 'upstream', upstream: 'gpu-box', remote_host: backUrl, remote_model: 'acme/backchat',
    size: 0, size_vram: 0, pid: null, runtime: null, format: 'remote', active_requests: 1, queued_requests: 0, state: 'loaded',
  })
  // The back runs it in a llama-server of its own, and says so in its own /api/ps.
  t.match((await ps(backUrl)).find((m) => m.name === 'acme/backchat'), { where: 'local', active_requests: 1 })

  const table = await runCli(['ps', '--host', front.url])
  t.equal(table.code, 0, table.stderr)
  const lines = table.stdout.trimEnd().split('\n')
  t.match(lines[0], /^NAME\s+ID\s+SIZE\s+WHERE\s+PROCESSOR\s+CONTEXT\s+REQUESTS\s+UNTIL$/)
  t.match(lines.find((l) => l.startsWith('acme/local ')), /^acme\/local\s+[0-9a-f]{12}\s+\S+ [KM]iB\s+local \(cpu\)\s+100% CPU\s+512\s+0\s+/, 'the local model: here, on the CPU backend')
  t.match(lines.find((l) => l.startsWith('back/acme/backchat ')), /^back\/acme\/backchat\s+-\s+-\s+upstream gpu-box\s+-\s+-\s+1\s+-$/, 'the upstream model: its upstream, one request')
  const json = JSON.parse((await runCli(['ps', '--json', '--host', front.url])).stdout) as { models: Entry[] }
  t.match(json.models.find((m) => m.name === 'back/acme/backchat'), { where: 'upstream', upstream: 'gpu-box', remote_host: backUrl, active_requests: 1 }, '--json: the server\'s answer')

  await t.test('the web page\'s models view', { skip }, async (t) => {
    const { page, problems } = await openPage(t, await browser())
    await page.goto(`${front.url}/ui/`)
    await page.getByRole('button', { name: 'Models', exact: true }).click()
    const loaded = page.getByRole('region', { name: 'Loaded models' })
    const upstreamRow = loaded.getByRole('row').filter({ hasText: 'back/acme/backchat' })
    await upstreamRow.waitFor()
    t.match(await upstreamRow.locator('.runs-on').textContent(), `upstream gpu-box (${backUrl})`)
    t.equal(await upstreamRow.getByRole('button').count(), 0, 'nothing to unload there')
    t.equal(await loaded.getByRole('row').filter({ hasText: 'acme/local' }).locator('.runs-on').textContent(), 'local (cpu)')
    const listed = page.getByRole('region', { name: 'Upstream models' }).getByRole('row').filter({ hasText: 'back/acme/backchat' })
    t.match(await listed.textContent(), backUrl, 'the model list marks it with its upstream\'s address')
    t.match(await listed.textContent(), 'acme/backchat')
    t.equal(await page.getByRole('region', { name: 'Local models' }).getByRole('row').filter({ hasText: 'back/acme/backchat' }).count(), 0, 'not among the local models')
    const serious = (await axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical')
    t.same(serious, [], 'no serious or critical accessibility violation')
    t.same(problems, [])
  })

  // Its request ends: nothing of it is kept here, so it leaves the list.
  holder.abort()
  await until('the upstream model off /api/ps', async () => !(await ps(front.url)).some((m) => m.name === 'back/acme/backchat'))
  t.same((await ps(front.url)).map((m) => m.name), ['acme/local'])
})
