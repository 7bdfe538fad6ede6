// Coverage of the processes a test starts (a CLI, a gateway, a worker), without tap's process tracker in them.
// tap's @tapjs/processinfo puts its loader into every child's NODE_OPTIONS; under Node 20 that loader runs on a
// thread of its own and every module load crosses to it, which cost a gateway start 1.4 s of CPU (a CLI run
// 0.4 s), most of the suite's time in children. The children instead get V8's own coverage (NODE_V8_COVERAGE,
// which also records their source maps), and the test process hands what they wrote to tap's report, in the form
// tap's tracker writes, when it exits. Only a tap run with coverage on is changed.
import { randomUUID } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

// tap writes it quoted: `"--import=file:///…/@tapjs/processinfo/dist/esm/import.mjs"`.
const TRACKER = /(^|\s)"?--import=[^\s"]*@tapjs[\\/]processinfo[^\s"]*"?/g
const TRACKER_ARG = /@tapjs[\\/]processinfo/
const CHILD = 'LLAMAGATE_TEST_CHILD_COVERAGE'

/**
 * In a test process that tap tracks with coverage on: every spawn from now on carries V8's coverage instead of
 * tap's tracker, and the coverage its children wrote joins tap's at exit. Elsewhere (a child, a plain run), nothing.
 */
export function coverChildren () {
  const env = process.env
  if (env._TAPJS_PROCESSINFO_COVERAGE_ !== '1' || env[CHILD] !== undefined) return
  const root = env._TAPJS_PROCESSINFO_CWD_ || process.cwd()
  const dir = join(root, '.tap', 'child-coverage', `${process.pid}-${randomUUID()}`)
  // The tracker re-adds itself to every spawn through this package's listeners (a process-wide singleton); a
  // listener added after its own runs after it and takes it out again.
  const state = global[Symbol.for('process-on-spawn@*:singletonId')]
  if (state === undefined) return
  state.listeners.push((spawn) => {
    // A node started with the test's own execArgv carries the tracker in its arguments: it stays tracked.
    if (spawn.args.some((arg) => TRACKER_ARG.test(arg))) return
    const childEnv = { ...spawn.env }
    for (const name of Object.keys(childEnv)) if (name.startsWith('_TAPJS_PROCESSINFO_')) delete childEnv[name]
    if (childEnv.NODE_OPTIONS !== undefined) {
      childEnv.NODE_OPTIONS = childEnv.NODE_OPTIONS.replace(TRACKER, '').trim()
      if (childEnv.NODE_OPTIONS === '') delete childEnv.NODE_OPTIONS
    }
    spawn.env = { ...childEnv, NODE_V8_COVERAGE: dir, [CHILD]: '1' }
  })
  process.on('exit', () => collect(dir, root))
}

/** The children's coverage of the project's own files, written where tap's report reads it. */
function collect (dir, root) {
  let names
  try { names = readdirSync(dir) } catch { return }
  const out = join(root, '.tap', 'coverage')
  mkdirSync(out, { recursive: true })
  const ours = pathToFileURL(`${root}/`).href
  const kept = (url) => url.startsWith(ours) && !/\/(node_modules|\.tap|dist\/vendor)\//.test(url.slice(ours.length - 1))
  for (const name of names.filter((n) => n.endsWith('.json'))) {
    let raw
    try { raw = JSON.parse(readFileSync(join(dir, name), 'utf8')) } catch { continue }
    const result = raw.result.filter((script) => kept(script.url))
    if (result.length === 0) continue
    const maps = raw['source-map-cache'] ?? {}
    const sourceMaps = Object.fromEntries(result.filter((s) => maps[s.url]).map((s) => [s.url, maps[s.url]]))
    writeFileSync(join(out, `${randomUUID()}.json`), JSON.stringify({ result, 'source-map-cache': sourceMaps }))
  }
  rmSync(dir, { recursive: true, force: true })
}
