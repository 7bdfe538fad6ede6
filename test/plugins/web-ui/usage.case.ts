import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { hashSecret, writeKeysFile } from '../../../plugins/security/keys-file.js'
import { build, tempDir } from '../../helpers/app.js'
import { axeViolations, openPage, sharedBrowser, skipUnlessChromium } from '../../helpers/browser.js'

// The page's Usage view in a real Chromium against the real gateway. The usage is the server's own file, written
// before it starts, as a restart finds it: nothing here has to generate.

const skip = skipUnlessChromium(t)
const browser = sharedBrowser(t)

const SECRET = 'lg-carol-0123456789abcdefghijklmnopqrstuvwxyzABCDEF'
const totals = (requests: number, prompt: number, cached: number, generated: number) =>
  ({ requests, prompt_tokens: prompt, cached_tokens: cached, generated_tokens: generated, queue_ms: 1250, runtime_ms: 4000 })

t.test('a key\'s usage: today\'s tokens against its daily limit, and each model\'s requests and tokens', { skip }, async (t) => {
  const dataDir = await tempDir(t)
  await writeKeysFile(join(dataDir, 'keys.yaml'), { keys: [{ name: 'carol', hash: hashSecret(SECRET), scopes: ['infer'], models: ['*'], limits: { tokens_per_day: 20_000 }, created: '2025-01-01T00:00:00Z' }] })
  const today = new Date().toISOString().slice(0, 10)
  await writeFile(join(dataDir, 'usage.json'), JSON.stringify({
    version: 1,
    keys: { carol: { 'acme/chat': totals(12, 3000, 1200, 2000), 'acme/embed': totals(3, 1000, 0, 0) }, dave: { 'acme/chat': totals(99, 9, 9, 9) } },
    days: { [today]: { carol: 5000, dave: 18 } },
  }))
  const app = await build(t, { data_dir: dataDir })
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const { page, problems } = await openPage(t, await browser())
  await page.goto(`${url}/ui/`)
  const dialog = page.getByRole('dialog', { name: 'API key needed' })
  await dialog.getByLabel('API key', { exact: true }).fill(SECRET)
  await dialog.getByRole('button', { name: 'Save key' }).click()
  await dialog.waitFor({ state: 'detached' })

  await page.getByRole('button', { name: 'Usage', exact: true }).click()
  const view = page.getByRole('region', { name: 'Usage' })
  await view.getByText('API key carol').waitFor()
  t.equal(await page.getByRole('button', { name: 'Usage', exact: true }).getAttribute('aria-current'), 'page')
  t.match(await view.textContent(), `5,000 of 20,000 tokens today (${today}, UTC): 25%`, 'today\'s tokens against the limit')
  const bar = view.getByRole('progressbar')
  t.equal(await bar.getAttribute('max'), '20000')
  t.equal(await bar.getAttribute('value'), '5000')
  const cells = async (name: RegExp): Promise<string[]> => view.getByRole('row', { name }).locator('th, td').allTextContents()
  t.same(await cells(/^acme\/chat/), ['acme/chat', '12', '3,000', '1,200', '2,000', '1.25 s', '4.00 s'], 'a model\'s requests, tokens and times')
  t.same(await cells(/^acme\/embed/), ['acme/embed', '3', '1,000', '0', '0', '1.25 s', '4.00 s'])
  t.same(await cells(/^All models/), ['All models', '15', '4,000', '1,200', '2,000', '2.50 s', '8.00 s'], 'and the sums')
  t.notMatch(await view.textContent(), 'dave', 'only its own usage')
  t.same(await axeViolations(page), [], 'no accessibility violations')
  t.same(problems, [])
})

t.test('without keys: counted as anonymous, no limit, nothing yet', { skip }, async (t) => {
  const app = await build(t)
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  const { page, problems } = await openPage(t, await browser())
  await page.goto(`${url}/ui/`)
  await page.getByRole('button', { name: 'Usage', exact: true }).click()
  const view = page.getByRole('region', { name: 'Usage' })
  await view.getByText('No requests counted yet.').waitFor()
  t.match(await view.textContent(), 'Counted without an API key (keys are off).')
  t.match(await view.textContent(), /0 tokens today \(\d{4}-\d{2}-\d{2}, UTC\); no daily limit/)
  t.equal(await view.getByRole('progressbar').count(), 0, 'no bar without a limit')
  t.same(problems, [])
})
