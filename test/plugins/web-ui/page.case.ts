import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Page, Route } from 'playwright-core'
import t, { type Test } from 'tap'
import { writeTinyGguf } from '../../../scripts/fixtures/tiny-model.js'
import { build, tempDir } from '../../helpers/app.js'
import { axeViolations, openPage, screenshotsDir, sharedBrowser, skipUnlessChromium } from '../../helpers/browser.js'
import { FakeHub } from '../../helpers/fake-hub.js'
import { until } from '../../helpers/until.js'

// The page in a real Chromium against the real gateway, where no model has to answer: the API-key prompt, a pull
// from the loopback hub, deleting a model, the phone layout, and what the page does with hostile model output.
// A model that writes a given hostile answer cannot be had from random weights, so those tests script /api/chat's
// stream in the browser (page.route) and everything else is the real server. Answers from the real llama-server
// are in chat.case.ts.

const skip = skipUnlessChromium(t)
// One Chromium for the file: each test has a context of its own (its own storage), which is what keeps them apart.
const browser = sharedBrowser(t)

/** The gateway on a socket with a tiny model (no llama-server is started: nothing here generates). */
async function servePage (t: Test, values: Record<string, unknown> = {}, models = ['acme/tiny']): Promise<string> {
  const app = await build(t, values)
  const dir = await tempDir(t)
  let seed = 1
  for (const name of models) {
    const file = join(dir, `${seed}.gguf`)
    await writeTinyGguf({ file, seed: seed++, name })
    await app.store.import(name, file)
  }
  return app.listen({ host: '127.0.0.1', port: 0 })
}

/** Answers the page's /api/chat with these NDJSON events, as the server would stream them. */
async function scriptChat (page: Page, events: unknown[]): Promise<void> {
  await page.route('**/api/chat', (route: Route) => route.fulfill({
    status: 200,
    contentType: 'application/x-ndjson',
    body: events.map((e) => JSON.stringify(e)).join('\n') + '\n',
  }))
}

function fragments (text: string, size: number, field: 'content' | 'thinking' = 'content'): unknown[] {
  const events: unknown[] = []
  for (let i = 0; i < text.length; i += size) events.push({ model: 'acme/tiny', message: { role: 'assistant', content: '', [field]: text.slice(i, i + size) }, done: false })
  return events
}

const DONE = { model: 'acme/tiny', message: { role: 'assistant', content: '' }, done: true, done_reason: 'stop', eval_count: 64, eval_duration: 1_600_000_000, prompt_eval_count: 12, prompt_eval_duration: 40_000_000 }

async function send (page: Page, text: string): Promise<void> {
  const box = page.getByLabel('Message', { exact: true })
  await box.fill(text)
  await box.press('Enter')
  await page.locator('.message.assistant').last().locator('.stats').filter({ hasText: 'tokens/s' }).waitFor()
}

// Each payload, should it ever run, sets window.__pwned; none may.
const HOSTILE = [
  'Hello <img src=x onerror="window.__pwned=1"> there',
  '<script>window.__pwned=2</script>',
  '[click me](javascript:window.__pwned=3) and [data](data:text/html,<script>window.__pwned=4</script>)',
  '![pic](x" onerror="window.__pwned=5)',
  '<a href="javascript:window.__pwned=6">raw link</a> <iframe src="javascript:window.__pwned=7"></iframe>',
  '<svg onload="window.__pwned=8"><circle r="1"/></svg> <div style="position:fixed;inset:0" onclick="window.__pwned=9">overlay</div>',
  '<details open ontoggle="window.__pwned=10">x</details> <form action="/api/delete"><button formaction="javascript:window.__pwned=11">go</button></form>',
  '[a good link](https://example.com/page)',
  '```html\n<img src=x onerror="window.__pwned=12">\n```',
  '```js\nconst answer = 42\n```',
].join('\n\n')

// A tool call is model output too: its name and arguments are shown as text.
const HOSTILE_CALL = { model: 'acme/tiny', message: { role: 'assistant', content: '', tool_calls: [{ function: { name: '<img src=x onerror="window.__pwned=14">', arguments: { html: '<script>window.__pwned=15</script>' } } }] }, done: false }

t.test('hostile model output goes through the page\'s renderer inert: no script runs, nothing loads, raw HTML is text', { skip }, async (t) => {
  const url = await servePage(t)
  const { page, problems } = await openPage(t, await browser())
  const dialogs: string[] = []
  page.on('dialog', (dialog) => { dialogs.push(dialog.message()); void dialog.dismiss() })
  // Fragments of 7 characters: half-written tags must be as harmless as whole ones.
  await scriptChat(page, [...fragments('<img src=x onerror="window.__pwned=13">thinking', 7, 'thinking'), ...fragments(HOSTILE, 7), HOSTILE_CALL, DONE])
  await page.goto(`${url}/ui/`)
  await until('the model in the picker', async () => (await page.getByLabel('Model', { exact: true }).inputValue()) === 'acme/tiny')
  await send(page, 'say something nasty')

  const answer = page.locator('.message.assistant').last()
  t.equal(await page.evaluate('window.__pwned'), undefined, 'no payload ran')
  t.same(dialogs, [], 'no dialog was opened')
  // Within the messages: the form under them, where the person types a tool's result, is the page's own.
  t.equal(await page.evaluate(`document.querySelectorAll('.messages article :is(img, script, iframe, svg, style, form, object, embed, video, audio)').length`), 0,
    'no image, script, frame, SVG, style, form or media element in the conversation')
  t.same(await page.evaluate(`[...document.querySelectorAll('.messages *')].flatMap((el) => [...el.attributes].map((a) => a.name)).filter((n) => n.startsWith('on') || n === 'style' || n === 'formaction')`), [],
    'no event handler or style attribute')
  t.same(await page.evaluate(`[...document.querySelectorAll('.messages a[href]')].map((a) => a.getAttribute('href'))`), ['https://example.com/page'],
    'the only link left is the https one: javascript: and data: links lost their href')
  const good = answer.getByRole('link', { name: 'a good link' })
  t.equal(await good.getAttribute('target'), '_blank')
  t.equal(await good.getAttribute('rel'), 'noopener noreferrer nofollow', 'a new tab without this page as its opener')
  const text = await answer.locator(':scope > .markdown').textContent() ?? ''
  t.match(text, '<img src=x onerror="window.__pwned=1">', 'raw HTML is shown as text')
  t.match(text, '<script>window.__pwned=2</script>')
  t.equal(await answer.locator('pre code .hljs-keyword').first().textContent(), 'const', 'code is highlighted')
  t.equal(await answer.locator('pre button.copy').count(), 2, 'each code block has a copy button')
  t.match(await answer.locator('details.thinking').textContent(), '<img src=x onerror="window.__pwned=13">', 'thinking is rendered the same way')
  t.equal(await answer.locator('.tool-call .tool-name').textContent(), '<img src=x onerror="window.__pwned=14">', 'a tool call\'s name is text')
  t.match(await answer.locator('.tool-call .tool-arguments').textContent(), '"html": "<script>window.__pwned=15</script>"', 'and so are its arguments')
  t.equal(await page.getByLabel('Result of <img src=x onerror="window.__pwned=14">').count(), 1, 'even in the label of its result field')
  t.equal(await page.evaluate('window.__pwned'), undefined, 'still nothing ran')
  t.same(problems, [], 'no script error, nothing refused by the CSP (nothing tried to load)')
})

t.test('while the first list of models is on its way, the page says it is loading, not that there is no model', { skip }, async (t) => {
  const url = await servePage(t, {}, [])
  const { page, problems } = await openPage(t, await browser())
  let release = (): void => {}
  const held = new Promise<void>((resolve) => { release = resolve })
  await page.route('**/api/tags', async (route: Route) => { await held; await route.continue() })
  await page.goto(`${url}/ui/`)
  await page.getByRole('status').filter({ hasText: 'Loading the models…' }).waitFor()
  t.equal(await page.getByText('No model yet').count(), 0, 'no "no model" before the list has come')
  t.equal(await page.locator('#model option').textContent(), 'loading…', 'nor in the model picker')
  await page.getByRole('button', { name: 'Models', exact: true }).click()
  await page.getByRole('status').filter({ hasText: 'Loading the models…' }).waitFor()
  t.equal(await page.getByText('No models yet.').count(), 0, 'the Models view waits for it too')

  release()
  await page.getByText('No models yet.').waitFor()
  await page.getByRole('button', { name: 'Chat', exact: true }).click()
  await page.getByText('No model yet: pull one under Models.').waitFor()
  t.equal(await page.getByText('Loading the models…').count(), 0, 'once listed, the page says there is none')
  t.equal(await page.locator('#model option').textContent(), 'no models')
  t.same(problems, [])
})

t.test('pull a model by name: a bar per file that fills and finishes; then delete it, after a confirmation', { skip }, async (t) => {
  const fake = await FakeHub.start()
  t.teardown(() => fake.close())
  const gguf = await readFile((await writeTinyGguf({ file: join(await tempDir(t), 'pulled.gguf'), seed: 7 })).file)
  fake.addRepo('acme/pulled-GGUF', { files: [
    { path: 'README.md', content: Buffer.from('# pulled'), lfs: false },
    { path: 'pulled-Q4_K_M.gguf', content: gguf },
  ] })
  // About three seconds for the file: time enough to see the bar part-way.
  fake.faults = { bytesPerSecond: Math.ceil(gguf.length / 3) }
  const url = await servePage(t, { hub: { endpoint: fake.url, token: null } }, [])
  const { page, problems } = await openPage(t, await browser())
  await page.goto(`${url}/ui/`)
  await page.getByText('No model yet: pull one under Models.').waitFor()

  await page.getByRole('button', { name: 'Models', exact: true }).click()
  await page.getByLabel('Model name').fill('acme/pulled-GGUF')
  await page.getByRole('button', { name: 'Pull', exact: true }).click()
  const bar = page.getByRole('progressbar', { name: 'pulled-Q4_K_M.gguf' })
  const partway = await until('the bar part-way', async () => {
    if (await bar.count() === 0) return null
    const value = Number(await bar.getAttribute('value'))
    return value > 0 && value < gguf.length ? value : null
  }, 30_000)
  t.ok(partway < gguf.length, `seen part-way: ${partway} of ${gguf.length} bytes`)
  t.equal(Number(await bar.getAttribute('max')), gguf.length, 'the bar\'s maximum is the file\'s size')
  const pull = page.getByRole('group', { name: 'Pull of acme/pulled-GGUF' })
  await pull.getByRole('status').filter({ hasText: 'done' }).waitFor({ timeout: 30_000 })
  t.equal(Number(await bar.getAttribute('value')), gguf.length, 'the bar is full')
  t.match(await pull.locator('.percent').textContent(), /^100%/)
  t.equal(await page.getByRole('progressbar').count(), 1, 'one bar: README.md is not a model file')

  const row = page.getByRole('row', { name: /acme\/pulled-GGUF/ })
  await row.waitFor()
  t.match(await row.textContent(), /KiB/, 'listed with its size')
  t.equal(await page.getByLabel('Model', { exact: true }).inputValue(), 'acme/pulled-GGUF', 'the picker offers it')

  // Delete: a confirmation first; declining keeps the model.
  page.once('dialog', (dialog) => { t.match(dialog.message(), 'Delete acme/pulled-GGUF?'); void dialog.dismiss() })
  await page.getByRole('button', { name: 'Delete acme/pulled-GGUF' }).click()
  t.equal(await row.count(), 1, 'declined: still there')
  t.equal((await (await fetch(`${url}/api/tags`)).json() as { models: unknown[] }).models.length, 1)
  page.once('dialog', (dialog) => { void dialog.accept() })
  await page.getByRole('button', { name: 'Delete acme/pulled-GGUF' }).click()
  await row.waitFor({ state: 'detached' })
  t.same((await (await fetch(`${url}/api/tags`)).json() as { models: unknown[] }).models, [], 'gone from the server')
  t.same(problems, [])
})

t.test('when keys are on, a 401 asks for the key once; a wrong one asks again; the right one is kept across a reload', { skip }, async (t) => {
  const url = await servePage(t, { auth: { api_keys: ['sekret'] } })
  const { page, problems } = await openPage(t, await browser())
  await page.goto(`${url}/ui/`)
  const dialog = page.getByRole('dialog', { name: 'API key needed' })
  await dialog.waitFor()
  t.match(await dialog.textContent(), 'missing API key')
  await dialog.getByLabel('API key', { exact: true }).fill('wrong')
  await dialog.getByRole('button', { name: 'Save key' }).click()
  await until('asked again, saying why', async () => /invalid API key/.test(await dialog.textContent({ timeout: 1000 }).catch(() => '') ?? ''))
  await dialog.getByLabel('API key', { exact: true }).fill('sekret')
  await dialog.getByRole('button', { name: 'Save key' }).click()
  await dialog.waitFor({ state: 'detached' })
  await until('the models listed with the key', async () => (await page.getByLabel('Model', { exact: true }).inputValue()) === 'acme/tiny')
  t.equal(await page.evaluate(`localStorage.getItem('llamagate.apiKey')`), 'sekret', 'kept in this browser')

  await page.reload()
  await until('listed again after a reload', async () => (await page.getByLabel('Model', { exact: true }).inputValue()) === 'acme/tiny')
  t.equal(await dialog.count(), 0, 'no prompt: the key was kept')
  await page.getByRole('button', { name: 'Models', exact: true }).click()
  await page.getByRole('row', { name: /acme\/tiny/ }).waitFor()
  t.match(await page.getByRole('row', { name: /acme\/tiny/ }).textContent(), 'completion', 'capabilities came from /api/show, with the key')
  t.same(problems, [])
})

t.test('phone width: the conversation list behind a menu button; the system\'s dark theme; keyboard reaches the message box', { skip }, async (t) => {
  const url = await servePage(t)
  const { page, problems } = await openPage(t, await browser(), { colorScheme: 'dark', viewport: { width: 390, height: 844 } })
  await page.goto(`${url}/ui/`)
  await until('the model in the picker', async () => (await page.getByLabel('Model', { exact: true }).inputValue()) === 'acme/tiny')
  t.equal(await page.evaluate('document.documentElement.dataset.theme'), 'dark', 'prefers-color-scheme: dark is followed')
  t.equal(await page.getByRole('button', { name: 'Dark theme' }).getAttribute('aria-pressed'), 'true')

  const nav = page.getByRole('navigation', { name: 'Conversations' })
  const menu = page.getByRole('button', { name: 'Conversations', exact: true })
  t.equal(await nav.isVisible(), false, 'the list is hidden at phone width')
  t.equal(await menu.getAttribute('aria-expanded'), 'false')
  await menu.click()
  t.equal(await nav.isVisible(), true, 'the menu button shows it')
  t.equal(await menu.getAttribute('aria-expanded'), 'true')
  await nav.locator('.new-chat').click()
  t.equal(await nav.isVisible(), false, 'choosing closes it')
  t.equal(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth'), true, 'nothing wider than the screen')

  // The toggle overrides the system's theme, and is remembered.
  await page.getByRole('button', { name: 'Dark theme' }).click()
  t.equal(await page.evaluate('document.documentElement.dataset.theme'), 'light')
  await page.reload()
  await page.getByRole('button', { name: 'Dark theme' }).waitFor()
  t.equal(await page.evaluate('document.documentElement.dataset.theme'), 'light', 'kept across a reload')

  await page.locator('body').click({ position: { x: 1, y: 400 } })
  let reached = false
  for (let i = 0; i < 20 && !reached; i++) {
    await page.keyboard.press('Tab')
    reached = await page.evaluate(`document.activeElement?.id === 'prompt'`) as boolean
  }
  t.ok(reached, 'Tab reaches the message box')
  t.same(problems, [])
})

// The test models have random weights and answer noise: for the pictures in docs/, the answer is scripted.
const SHOWCASE = `Here is a function that counts words, with a test:

\`\`\`python
from collections import Counter

def count_words(text: str) -> Counter:
    """Counts each word, ignoring case."""
    return Counter(word.lower() for word in text.split())

assert count_words("a b A")["a"] == 2
\`\`\`

- \`Counter\` keeps the counts in a dictionary;
- \`split()\` with no argument splits on any run of whitespace.

See the [collections documentation](https://docs.python.org/3/library/collections.html).`

t.test('screenshots for docs/ (light and dark, desktop and phone), each with no serious accessibility violation', { skip }, async (t) => {
  const shotsDir = await screenshotsDir(t, 'web-ui-light-desktop.png')
  const url = await servePage(t, {}, ['bartowski/Qwen2.5-0.5B-Instruct-GGUF', 'acme/tiny'])
  const { page, problems } = await openPage(t, await browser(), { viewport: { width: 1280, height: 800 } })
  await scriptChat(page, [
    ...fragments('The user wants a word counter in Python; Counter from collections does it in one line.', 12, 'thinking'),
    ...fragments(SHOWCASE, 24),
    DONE,
  ])
  await page.goto(`${url}/ui/`)
  await until('the models in the picker', async () => (await page.getByLabel('Model', { exact: true }).locator('option').count()) === 2)
  await page.getByLabel('Model', { exact: true }).selectOption('bartowski/Qwen2.5-0.5B-Instruct-GGUF')
  await send(page, 'Write a word counter in Python.')
  await page.locator('.new-chat').click()
  await send(page, 'Explain Counter in two sentences.')
  await page.getByRole('button', { name: 'Write a word counter in Python.', exact: true }).click()
  await page.locator('.message.user').first().waitFor()

  const shots: Array<{ theme: 'light' | 'dark', size: 'desktop' | 'phone' }> = [
    { theme: 'light', size: 'desktop' }, { theme: 'dark', size: 'desktop' }, { theme: 'dark', size: 'phone' }, { theme: 'light', size: 'phone' },
  ]
  for (const { theme, size } of shots) {
    await page.setViewportSize(size === 'desktop' ? { width: 1280, height: 800 } : { width: 390, height: 844 })
    if (await page.evaluate('document.documentElement.dataset.theme') !== theme) await page.getByRole('button', { name: 'Dark theme' }).click()
    const serious = (await axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical')
    t.same(serious, [], `${theme}, ${size}: no serious or critical accessibility violation`)
    t.equal(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth'), true, `${theme}, ${size}: nothing wider than the window`)
    await page.screenshot({ path: join(shotsDir, `web-ui-${theme}-${size}.png`) })
  }
  // The models view too (light, desktop).
  await page.setViewportSize({ width: 1280, height: 800 })
  await page.getByRole('button', { name: 'Models', exact: true }).click()
  await page.getByRole('heading', { name: 'Local models' }).waitFor()
  const serious = (await axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical')
  t.same(serious, [], 'the models view: no serious or critical accessibility violation')
  t.same(problems, [])
})
