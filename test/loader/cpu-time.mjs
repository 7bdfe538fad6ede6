// CPU seconds of a test process and of the children it waited for (llama-servers, CLIs, browsers): what a test
// file costs the suite on a machine of two cores, where its wall time says more about what ran beside it.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'

// Linux's clock ticks per second (sysconf(_SC_CLK_TCK)): 100 on every kernel Node runs on there.
const TICKS = 100

/** This process's CPU and its reaped children's, in seconds; null where /proc is not there. */
export function cpuSeconds () {
  try {
    // The fields after the command's closing parenthesis: utime, stime, cutime, cstime are the 12th to 15th.
    const stat = readFileSync('/proc/self/stat', 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0) / TICKS
  } catch {
    return null
  }
}

/** In a test file's own process (a `*.test.ts` tap runs), writes its CPU seconds to `.tap/cpu-times` at exit. */
export function recordCpuTime () {
  const file = process.argv[1] ?? ''
  if (process.env.TAP !== '1' || !file.endsWith('.test.ts')) return
  const root = process.env._TAPJS_PROCESSINFO_CWD_ || process.cwd()
  process.once('exit', () => {
    const seconds = cpuSeconds()
    if (seconds === null) return
    const name = relative(root, file)
    const dir = join(root, '.tap', 'cpu-times')
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, `${name.replaceAll('/', '_')}.json`), JSON.stringify({ file: name, seconds, ended: Date.now() }))
  })
}
