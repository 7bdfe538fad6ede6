import { join } from 'node:path'
import type { Locator, Page, Request } from 'playwright-core'
import t from 'tap'
import { TINY_PROJECTOR, tinyPng } from '../../../scripts/fixtures/realistic-projector.js'
import { axeViolations, openBrowser, openPage, screenshotsDir, skipUnlessChromium } from '../../helpers/browser.js'
import { post, serveRealisticModels } from '../../helpers/inference.js'
import { until } from '../../helpers/until.js'

// What the page does with a model's capabilities, in a real Chromium against the real gateway and llama-server:
// tools the model calls (the "caller" fixture opens a call at once and llama-server's grammar writes it), images
// for a model with a vision projector, and the think toggle for a reasoning model.

const skip = skipUnlessChromium(t)

const WEATHER = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Tokyo'] } }, required: ['city'] },
  },
}]

interface SentChat {
  model: string
  messages: Array<{ role: string, content: string, images?: string[], tool_calls?: Array<{ function: { name: string, arguments: unknown } }>, tool_name?: string }>
  tools?: typeof WEATHER
  think?: boolean
}

const lastAnswer = (page: Page): Locator => page.locator('.message.assistant').last()
const finished = (answer: Locator): Promise<void> => answer.locator('.stats').filter({ hasText: 'tokens/s' }).waitFor({ timeout: 120_000 })
const isChat = (r: Request): boolean => new URL(r.url()).pathname === '/api/chat' && r.method() === 'POST'

/** Does `act`, and returns the body of the /api/chat request it made and the NDJSON events of the answer. */
async function chatRequest (page: Page, act: () => Promise<void>): Promise<{ sent: SentChat, events: Array<Record<string, any>> }> {
  const [response] = await Promise.all([page.waitForResponse((r) => isChat(r.request())), act()])
  const events = (await response.text()).split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Record<string, any>)
  return { sent: response.request().postDataJSON() as SentChat, events }
}

async function pickModel (page: Page, name: string): Promise<void> {
  await page.locator('.new-chat').click()
  await page.getByLabel('Model', { exact: true }).selectOption(name)
  await until(`${name}'s capabilities shown`, async () => /completion/.test(await page.locator('.capabilities').textContent() ?? ''))
}

async function setOption (page: Page, label: string, value: string): Promise<void> {
  const settings = page.locator('details.settings')
  if (await settings.getAttribute('open') === null) await settings.locator('summary').click()
  await page.getByLabel(label, { exact: true }).fill(value)
}

t.test('tools, images and thinking in a real browser, on models that have them', { skip }, async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/caller': 'caller', 'acme/seer': { kind: 'qwen25', projector: true }, 'acme/thinker': 'r1' }, {
    // Left alone, the qwen2 fixtures' random weights may write nothing but newlines, which Markdown shows as nothing.
    default_options: { repeat_penalty: 2 },
  })
  const browser = await openBrowser(t)
  const { page, problems } = await openPage(t, browser)
  await page.goto(`${url}/ui/`)
  await until('the models listed', async () => (await page.getByLabel('Model', { exact: true }).locator('option').count()) === 3)

  await t.test('tools: a typing mistake is caught before sending; the model\'s call is shown; the person\'s result goes back', async (t) => {
    await pickModel(page, 'acme/caller')
    t.equal(await page.getByRole('button', { name: 'Attach image' }).count(), 0, 'no image button for a model without vision')
    t.equal(await page.getByRole('button', { name: 'Think' }).count(), 0, 'no think toggle for a model that cannot think')
    await setOption(page, 'Max tokens', '200')
    await setOption(page, 'Temperature', '0.2')
    const tools = page.getByLabel(/^Tools/)
    const box = page.getByLabel('Message', { exact: true })
    await box.fill('What is the weather in Paris?')
    const send = page.getByRole('button', { name: 'Send', exact: true })

    await tools.fill('[{"type": "function", "function": ')
    t.match(await page.locator('#tools-problem').textContent(), /^Tools are not valid JSON: /, 'broken JSON: said where it is typed')
    t.equal(await tools.getAttribute('aria-invalid'), 'true')
    t.ok(await send.isDisabled(), 'and nothing can be sent')
    await tools.fill('{"type": "function"}')
    t.equal(await page.locator('#tools-problem').textContent(), 'Tools must be a JSON array of tool definitions.')
    await tools.fill('[{"type": "function", "function": {"description": "no name"}}]')
    t.equal(await page.locator('#tools-problem').textContent(), 'Tool 1 needs a function name.')
    await tools.fill(JSON.stringify(WEATHER, null, 2))
    t.equal(await page.locator('#tools-problem').count(), 0, 'valid tools: no problem shown')

    const asked = await chatRequest(page, () => send.click())
    t.same(asked.sent.tools, WEATHER, 'the tools sent as typed')
    const answer = lastAnswer(page)
    await finished(answer)
    const calls = answer.locator('.tool-call')
    t.ok(await calls.count() >= 1, 'the model\'s call shown under its answer')
    t.equal(await calls.first().locator('.tool-name').textContent(), 'get_weather')
    const args = JSON.parse(await calls.first().locator('.tool-arguments').textContent() ?? '') as { city?: string }
    t.ok(['Paris', 'Tokyo'].includes(args.city ?? ''), `its arguments, as JSON: ${JSON.stringify(args)}`)
    const streamedCalls = asked.events.flatMap((e) => e.message?.tool_calls ?? [])
    t.equal(await calls.count(), streamedCalls.length, 'one card per call the server sent')

    // The page runs no tool: the person answers each call.
    const fields = page.locator('.tool-results textarea')
    t.equal(await fields.count(), streamedCalls.length, 'a result field per call')
    const submit = page.locator('.tool-results button[type="submit"]')
    t.ok(await submit.isDisabled(), 'nothing to send before every result is typed')
    for (let i = 0; i < streamedCalls.length; i++) await fields.nth(i).fill(`{"temperature": ${20 + i}, "sky": "clear"}`)
    const followed = await chatRequest(page, () => submit.click())
    const history = followed.sent.messages
    const assistant = history.find((m) => m.role === 'assistant')
    t.same(assistant?.tool_calls, streamedCalls.map((c: { function: { name: string, arguments: unknown } }) => ({ function: { name: c.function.name, arguments: c.function.arguments } })), 'the calls go back in the history as the server sent them')
    t.same(history.filter((m) => m.role === 'tool'), streamedCalls.map((_: unknown, i: number) => ({ role: 'tool', content: `{"temperature": ${20 + i}, "sky": "clear"}`, tool_name: 'get_weather' })), 'each result as a "tool" message naming its tool')
    t.equal(followed.sent.messages.at(-1)?.role, 'tool', 'the model is asked to go on from the results')
    await finished(lastAnswer(page))
    const result = page.getByRole('article', { name: 'Result of get_weather' }).first()
    t.equal(await result.locator('.tool-output').textContent(), '{"temperature": 20, "sky": "clear"}', 'the result shown in the conversation')
    t.equal(await page.locator('.message.assistant').count(), 2, 'and the model\'s next answer after it')

    await page.reload()
    await page.getByRole('article', { name: 'Result of get_weather' }).first().waitFor()
    t.equal(await page.locator('.message.assistant').first().locator('.tool-call .tool-name').first().textContent(), 'get_weather', 'calls and results kept across a reload')
    t.equal(await page.getByLabel(/^Tools/).inputValue(), JSON.stringify(WEATHER, null, 2), 'and the conversation\'s tools')
  })

  await t.test('images: attach, remove, send; the image reaches the model (its tokens are in the prompt) and is shown', async (t) => {
    await pickModel(page, 'acme/seer')
    t.equal(await page.getByRole('button', { name: 'Think' }).count(), 0, 'no think toggle for a model that cannot think')
    await page.getByRole('button', { name: 'Attach image' }).waitFor()
    const png = tinyPng()
    const picker = page.locator('#attach-images')
    await picker.setInputFiles({ name: 'dot.png', mimeType: 'image/png', buffer: png })
    await picker.setInputFiles([{ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('not an image') }, { name: 'two.png', mimeType: 'image/png', buffer: png }])
    const pending = page.getByRole('list', { name: 'Images to send' }).locator('img')
    await until('two images waiting (the text file left out)', async () => (await pending.count()) === 2)
    await page.getByRole('button', { name: 'Remove image 2' }).click()
    await until('one left', async () => (await pending.count()) === 1)

    const question = 'What is in this picture?'
    await page.getByLabel('Message', { exact: true }).fill(question)
    const seen = await chatRequest(page, () => page.getByLabel('Message', { exact: true }).press('Enter'))
    t.same(seen.sent.messages.at(-1), { role: 'user', content: question, images: [png.toString('base64')] }, 'sent as base64, Ollama\'s images field')
    await finished(lastAnswer(page))
    t.equal(await page.getByRole('list', { name: 'Images to send' }).count(), 0, 'nothing left waiting after sending')
    const shown = page.getByRole('list', { name: 'Images sent' }).locator('img')
    t.equal(await shown.count(), 1, 'the image shown with the question')
    t.equal(await shown.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth), TINY_PROJECTOR.imageSize, 'and it decodes (the page\'s CSP lets data: images in)')

    const plain = await (await post(`${url}/api/chat`, { model: 'acme/seer', stream: false, messages: [{ role: 'user', content: question }], options: { num_predict: 1 } })).json() as { prompt_eval_count: number }
    const done = seen.events.at(-1) as { prompt_eval_count: number }
    t.equal(done.prompt_eval_count, plain.prompt_eval_count + TINY_PROJECTOR.tokensPerImage, `the image took ${TINY_PROJECTOR.tokensPerImage} positions of the prompt`)

    await page.locator('.message.user').last().getByRole('button', { name: 'Edit' }).click()
    await page.getByLabel('Edit your message').fill('And now?')
    const edited = await chatRequest(page, () => page.getByRole('button', { name: 'Save and send' }).click())
    t.same(edited.sent.messages.at(-1)?.images, [png.toString('base64')], 'an edited question keeps its image')
    await finished(lastAnswer(page))
  })

  await t.test('think toggle: on by default for a reasoning model, sent as think, kept with the conversation', async (t) => {
    await pickModel(page, 'acme/thinker')
    t.equal(await page.getByRole('button', { name: 'Attach image' }).count(), 0)
    await setOption(page, 'Max tokens', '12')
    const toggle = page.getByRole('button', { name: 'Think', exact: true })
    t.equal(await toggle.getAttribute('aria-pressed'), 'true', 'on to start with')
    const box = page.getByLabel('Message', { exact: true })
    await box.fill('Why?')
    const on = await chatRequest(page, () => box.press('Enter'))
    t.equal(on.sent.think, true)
    await finished(lastAnswer(page))
    t.equal(await lastAnswer(page).locator('details.thinking').count(), 1, 'the reasoning in its fold')

    await toggle.click()
    t.equal(await toggle.getAttribute('aria-pressed'), 'false')
    await box.fill('And without thinking?')
    const off = await chatRequest(page, () => box.press('Enter'))
    t.equal(off.sent.think, false)
    await finished(lastAnswer(page))
    t.equal(await lastAnswer(page).locator('details.thinking').count(), 0, 'no reasoning when it is off')
    t.ok((await lastAnswer(page).locator(':scope > .markdown').textContent() ?? '').trim().length > 0, 'the model answers straight away')
    t.notOk(off.events.some((e) => e.message?.thinking), 'the server sent no thinking')

    await page.reload()
    await page.getByRole('button', { name: 'Think', exact: true }).waitFor()
    t.equal(await page.getByRole('button', { name: 'Think', exact: true }).getAttribute('aria-pressed'), 'false', 'still off after a reload')
  })

  await t.test('no serious accessibility violation with calls, results and images on screen', async (t) => {
    await page.getByRole('button', { name: 'What is the weather in Paris?', exact: true }).click()
    await page.getByRole('article', { name: 'Result of get_weather' }).first().waitFor()
    const serious = (await axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical')
    t.same(serious, [], 'tools conversation')
    // The model's real call and the person's result, for the README.
    await page.screenshot({ path: join(await screenshotsDir(t, 'web-ui-tools.png'), 'web-ui-tools.png') })
    await page.getByRole('button', { name: 'What is in this picture?', exact: true }).click()
    await page.getByRole('list', { name: 'Images sent' }).first().waitFor()
    t.same((await axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical'), [], 'images conversation')
  })

  t.same(problems, [], 'no script error and no CSP refusal all along')
})
