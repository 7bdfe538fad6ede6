import t from 'tap'
import { axeViolations, openPage, sharedBrowser, skipUnlessChromium } from '../../helpers/browser.js'
import { serveRealisticModels } from '../../helpers/inference.js'

// The page's Decide view in a real Chromium against the real gateway and a tiny decision model.

const skip = skipUnlessChromium(t)
const browser = sharedBrowser(t)

t.test('Decide: a state and questions asked of a decision model, a bar for each probability', { skip }, async (t) => {
  const { url } = await serveRealisticModels(t, { 'acme/openjev': 'openjev', 'acme/chat': 'qwen25' })
  const { page, problems } = await openPage(t, await browser())
  await page.goto(`${url}/ui/`)
  await page.getByRole('button', { name: 'Decide', exact: true }).click()
  const view = page.getByRole('region', { name: 'Decide' })
  t.equal(await view.getByLabel('Decision model').inputValue(), 'acme/openjev', 'the decision model is chosen first')
  await view.getByLabel('State').fill('My parcel never came and nobody answers my mails.')
  await view.getByLabel('Question', { exact: true }).fill('Is the customer angry?')
  await view.getByRole('button', { name: 'Add a question' }).click()
  await view.locator('#decide-instructions-1').fill('Which team?')
  await view.getByLabel('Options, separated by commas').fill('refunds, shipping, sales')
  await view.getByRole('button', { name: 'Ask' }).click()
  await view.locator('.decide-answer').nth(1).waitFor()
  const headings = await view.getByRole('heading', { level: 3 }).allTextContents()
  t.match(headings[0], /^Is the customer angry\?: (yes|no)$/)
  t.match(headings[1], /^Which team\?: (refunds|shipping|sales) \(confidence 0\.\d\d\)$/)
  const meters = view.locator('meter')
  t.equal(await meters.count(), 5, 'yes and no, and the three options')
  const values = await meters.evaluateAll((ms) => ms.map((m) => (m as unknown as { value: number }).value))
  t.ok(Math.abs(values[0]! + values[1]! - 1) < 1e-6 && Math.abs(values[2]! + values[3]! + values[4]! - 1) < 1e-3, 'each answer\'s bars sum to 1')
  t.match(await view.textContent(), /acme\/openjev, \d+ prompt tokens/)
  t.same(await axeViolations(page), [], 'no accessibility violation')

  await view.getByLabel('Options, separated by commas').fill(Array.from({ length: 53 }, (_, i) => `o${i}`).join(','))
  await view.getByRole('button', { name: 'Ask' }).click()
  await view.getByRole('alert').waitFor()
  t.match(await view.getByRole('alert').textContent(), /"criteria" has 53 options, at most 52 are supported/, 'the server\'s refusal, in its words')
  t.same(problems, [], 'no script error')
})
