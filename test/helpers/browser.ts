import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { tempDir } from './app.js'
import { once } from './once.js'

type Test = { teardown: (fn: () => unknown) => void, fail: (message: string) => void }

/** Debian's chromium (`apt-get install chromium`): playwright-core drives it; no browser is downloaded. */
export const CHROMIUM = process.env.LLAMAGATE_CHROMIUM ?? '/usr/bin/chromium'

/**
 * For `t.test(name, { skip }, fn)`: false where Chromium is installed, else why the browser tests skip (said on
 * stderr too). In CI (`CI` set, as .ci/run is run) a missing browser is a failure instead: .ci/run installs it.
 */
export function skipUnlessChromium (t: Test): string | false {
  if (existsSync(CHROMIUM)) return false
  const reason = `no Chromium at ${CHROMIUM} (apt-get install chromium, or set LLAMAGATE_CHROMIUM)`
  if (process.env.CI) t.fail(`the browser tests must run in CI: ${reason}`)
  else process.stderr.write(`\n*** browser tests SKIPPED: ${reason} ***\n\n`)
  return `browser tests SKIPPED: ${reason}`
}

/** Chromium, closed when the test ends. */
export async function openBrowser (t: Test): Promise<Browser> {
  // The sandbox needs user namespaces that a root shell in a container does not have; the pages are our own.
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] })
  t.teardown(() => browser.close())
  return browser
}

/**
 * One Chromium for the tests of a file, launched on first use and closed when the file ends (`t` is the file's
 * own): a launch costs a second or two of CPU, a context (as openPage makes, with its own storage) next to none.
 */
export function sharedBrowser (t: Test): () => Promise<Browser> {
  return once(() => openBrowser(t))
}

export interface WatchedPage {
  page: Page
  context: BrowserContext
  /** Script errors and Content-Security-Policy refusals seen so far: a test expects none. */
  problems: string[]
}

/**
 * A page in a context of its own (its own localStorage), with its script errors and CSP refusals collected; the
 * context is closed when the test ends.
 */
export async function openPage (t: Test, browser: Browser, options: { colorScheme?: 'light' | 'dark', viewport?: { width: number, height: number } } = {}): Promise<WatchedPage> {
  const context = await browser.newContext({ colorScheme: options.colorScheme ?? 'light', viewport: options.viewport ?? { width: 1280, height: 800 } })
  t.teardown(() => context.close())
  const page = await context.newPage()
  return { page, context, problems: watch(page) }
}

/** Collects a page's uncaught errors and CSP refusals (the failed loads of 401s and 404s are not problems). */
export function watch (page: Page): string[] {
  const problems: string[] = []
  page.on('pageerror', (err) => problems.push(`script error: ${err.message}`))
  page.on('console', (message) => {
    const text = message.text()
    if (/Content Security Policy|Refused to/i.test(text)) problems.push(`CSP: ${text}`)
  })
  return problems
}

let axeSource: Promise<string> | undefined

export interface AxeViolation { id: string, impact: string | null, help: string, targets: string[] }

/**
 * Runs axe-core in the page and returns its violations. The script goes in through the DevTools protocol
 * (page.evaluate), which the page's CSP does not govern, so that the check runs against the real policy.
 */
export async function axeViolations (page: Page): Promise<AxeViolation[]> {
  axeSource ??= readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
  // Once per document: its half a megabyte is sent and compiled again only after a navigation or reload.
  if (await page.evaluate('typeof axe') === 'undefined') await page.evaluate(await axeSource)
  return page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => String(n.target)),
  })))`)
}

/**
 * Where a test's screenshots go: docs/ when `probe` (one of them) is missing there or LLAMAGATE_UPDATE_SCREENSHOTS=1
 * says to replace them; a temporary folder otherwise, so that a test run does not leave docs/ changed (the times in
 * the pictures differ on every run).
 */
export async function screenshotsDir (t: Test, probe: string): Promise<string> {
  const docs = join(PACKAGE_ROOT, 'docs')
  if (process.env.LLAMAGATE_UPDATE_SCREENSHOTS === '1' || !existsSync(join(docs, probe))) return docs
  return tempDir(t)
}
