import { readFile } from 'node:fs/promises'
import t, { type Test } from 'tap'
import type { Locator, Page } from 'playwright-core'
import { build } from '../../helpers/app.js'
import { heldSlot } from '../../helpers/held-slot.js'
import { axeViolations, openPage, sharedBrowser, skipUnlessChromium } from '../../helpers/browser.js'
import { until } from '../../helpers/until.js'

// The page's Batches view in a real Chromium against the real gateway: a key's batches of both APIs, each with its
// status, a progress bar that follows it, its result files to download, and a cancel. A batch that waits stays
// waiting: its model's one slot is held by a person's stream (background work takes free slots only).

const skip = skipUnlessChromium(t)
const browser = sharedBrowser(t)

const jsonl = (lines: unknown[]): string => lines.map((l) => JSON.stringify(l)).join('\n') + '\n'
const chat = (id: string, model: string): unknown =>
  ({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model, max_tokens: 2, messages: [{ role: 'user', content: id }] } })

async function openAiBatch (t: Test, url: string, lines: unknown[]): Promise<{ id: string }> {
  const form = new FormData()
  form.append('purpose', 'batch')
  form.append('file', new Blob([jsonl(lines)]), 'page.jsonl')
  const file = await (await fetch(`${url}/v1/files`, { method: 'POST', body: form })).json() as { id: string }
  const res = await fetch(`${url}/v1/batches`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }) })
  t.equal(res.status, 200, 'a batch made')
  return await res.json() as { id: string }
}

async function status (url: string, path: string): Promise<string> {
  const batch = await (await fetch(`${url}${path}`)).json() as { status?: string, processing_status?: string }
  return batch.status ?? batch.processing_status ?? ''
}

/** The text of a downloaded file, started by clicking `button`. */
async function downloaded (page: Page, button: Locator): Promise<{ name: string, text: string }> {
  const [download] = await Promise.all([page.waitForEvent('download'), button.click()])
  return { name: download.suggestedFilename(), text: await readFile((await download.path())!, 'utf8') }
}

t.test('a key\'s batches: status, a progress bar that follows, result files, cancel', { skip }, async (t) => {
  const { url, release } = await heldSlot(t)
  // Over at once: its model is not there, so each request's answer is an error line.
  const failed = await openAiBatch(t, url, [chat('gone-1', 'acme/none'), chat('gone-2', 'acme/none')])
  await until('the first batch over', async () => await status(url, `/v1/batches/${failed.id}`) === 'completed' || null)
  const anthropic = await (await fetch(`${url}/v1/messages/batches`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ requests: [{ custom_id: 'msg-1', params: { model: 'acme/none', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] } }] }),
  })).json() as { id: string }
  await until('the message batch over', async () => await status(url, `/v1/messages/batches/${anthropic.id}`) === 'ended' || null)
  // Waits behind the held slot.
  const waiting = await openAiBatch(t, url, [chat('wait-1', 'acme/long'), chat('wait-2', 'acme/long'), chat('wait-3', 'acme/long')])
  await until('the waiting batch in progress', async () => await status(url, `/v1/batches/${waiting.id}`) === 'in_progress' || null)

  const { page, problems } = await openPage(t, await browser())
  await page.goto(`${url}/ui/`)
  await page.getByRole('button', { name: 'Batches', exact: true }).click()
  const view = page.getByRole('region', { name: 'Batches' })
  const row = (id: string): Locator => view.getByRole('row', { name: new RegExp(`^${id}`) })
  await row(waiting.id).waitFor()
  t.equal(await page.getByRole('button', { name: 'Batches', exact: true }).getAttribute('aria-current'), 'page')

  const cells = async (id: string): Promise<string[]> => (await row(id).locator('th, td').allTextContents()).slice(0, 4)
  t.same(await cells(failed.id), [failed.id, '/v1/chat/completions', 'completed', '2 of 2 (2 failed)'], 'an OpenAI batch over, every request failed')
  t.same(await cells(anthropic.id), [anthropic.id, '/v1/messages', 'ended', '1 of 1 (1 failed)'], 'a message batch over')
  t.same(await cells(waiting.id), [waiting.id, '/v1/chat/completions', 'in_progress', '0 of 3'], 'a batch waiting for a free slot')
  const bar = row(waiting.id).getByRole('progressbar')
  t.equal(await bar.getAttribute('max'), '3')
  t.equal(await bar.getAttribute('value'), '0')
  t.same(await axeViolations(page), [], 'no accessibility violations')

  const errors = await downloaded(page, row(failed.id).getByRole('button', { name: `Download errors of ${failed.id}` }))
  t.equal(errors.name, `${failed.id}_errors.jsonl`)
  t.same(errors.text.trim().split('\n').map((l) => (JSON.parse(l) as { custom_id: string, response: { status_code: number } }).custom_id).sort(), ['gone-1', 'gone-2'], 'the error file, each request once')
  t.equal(await row(failed.id).getByRole('button', { name: /^Download results/ }).count(), 0, 'no output file where nothing succeeded')
  const results = await downloaded(page, row(anthropic.id).getByRole('button', { name: `Download results of ${anthropic.id}` }))
  t.match(JSON.parse(results.text.trim()), { custom_id: 'msg-1', result: { type: 'errored' } }, 'a message batch\'s results')

  // Cancelled from the page: nothing more is sent; what already waits runs once the slot frees, then it is over.
  t.equal(await row(failed.id).getByRole('button', { name: /^Cancel/ }).count(), 0, 'no cancel for a batch that is over')
  await row(waiting.id).getByRole('button', { name: `Cancel ${waiting.id}` }).click()
  await row(waiting.id).getByRole('cell', { name: 'cancelling', exact: true }).waitFor()
  t.equal(await row(waiting.id).getByRole('button', { name: /^Cancel/ }).count(), 0, 'cancel is asked once')
  await release()
  // Followed without a click: the row turns over on its own, its bar full.
  await row(waiting.id).getByRole('cell', { name: 'cancelled', exact: true }).waitFor()
  t.equal(await bar.getAttribute('value'), '3', 'every request accounted for')
  t.same(problems, [])
})

t.test('no batches yet: the view says how to send one', { skip }, async (t) => {
  const url = await (await build(t)).listen({ host: '127.0.0.1', port: 0 })
  const { page, problems } = await openPage(t, await browser())
  await page.goto(`${url}/ui/`)
  await page.getByRole('button', { name: 'Batches', exact: true }).click()
  const view = page.getByRole('region', { name: 'Batches' })
  await view.getByText(/^No batches yet/).waitFor()
  t.match(await view.textContent(), 'llamagate batch submit')
  t.equal(await view.getByRole('progressbar').count(), 0)
  t.same(problems, [])
})
