import { execa } from 'execa'

export interface ToolRun {
  exitCode: number | null
  /** The last lines of its output (stdout and stderr together, in order): the reason when it fails. */
  tail: string[]
  timedOut: boolean
  aborted: boolean
  /** Set when the program could not be started at all (not found, not executable). */
  spawnError: string | null
}

const TAIL_LINES = 40

// Process groups of the tools now running. execa's `cleanup` does nothing for detached children, so a gateway
// that exits (even on an uncaught error) kills them here, synchronously: no converter outlives it.
const liveGroups = new Set<number>()
let exitHookInstalled = false
function killGroup (pid: number): void {
  try { process.kill(-pid, 'SIGKILL') } catch { /* already gone */ }
}

/**
 * Runs a conversion tool in its own process group (python may start workers; llama-quantize threads), keeping
 * the last lines of its output, reporting each line as it comes (tqdm's `\r` redraws count as lines), and
 * killing the whole group on the time limit or the abort signal, so that nothing is left behind.
 */
export async function runTool (command: string, args: string[], opts: {
  env?: NodeJS.ProcessEnv
  cwd?: string
  timeoutMs: number
  signal?: AbortSignal
  onLine?: (line: string) => void
}): Promise<ToolRun> {
  if (!exitHookInstalled) {
    exitHookInstalled = true
    process.once('exit', () => { for (const pid of liveGroups) killGroup(pid) })
  }
  const child = execa(command, args, { env: opts.env, cwd: opts.cwd, detached: true, reject: false, stdin: 'ignore', buffer: false, all: true })
  const pid = child.pid
  if (pid !== undefined) liveGroups.add(pid)
  const tail: string[] = []
  let timedOut = false
  let aborted = false
  const stop = (): void => { if (pid !== undefined) killGroup(pid) }
  const timer = setTimeout(() => { timedOut = true; stop() }, opts.timeoutMs)
  const onAbort = (): void => { aborted = true; stop() }
  opts.signal?.addEventListener('abort', onAbort, { once: true })
  if (opts.signal?.aborted) onAbort()
  let pending = ''
  const take = (line: string): void => {
    if (line.trim() === '') return
    tail.push(line)
    if (tail.length > TAIL_LINES) tail.shift()
    opts.onLine?.(line)
  }
  child.all?.setEncoding('utf8')
  child.all?.on('data', (chunk: string) => {
    const parts = (pending + chunk).split(/\r\n|\r|\n/)
    pending = parts.pop()!
    for (const line of parts) take(line)
  })
  const result = await child
  clearTimeout(timer)
  opts.signal?.removeEventListener('abort', onAbort)
  // Children that outlive the leader keep the output pipe open, so `await child` returns only once the
  // whole group is gone (or killed above): nothing is left to kill here.
  if (pid !== undefined) liveGroups.delete(pid)
  take(pending)
  const spawnError = result.failed && result.exitCode === undefined && result.signal === undefined
    ? ((result as { code?: string }).code === 'ENOENT' ? `${command}: not found` : (result.shortMessage ?? `${command}: could not start`))
    : null
  return { exitCode: result.exitCode ?? null, tail, timedOut, aborted, spawnError }
}
