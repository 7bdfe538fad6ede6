import { execa } from 'execa'

export interface ToolRun { exitCode: number | null, tail: string[], timedOut: boolean, aborted: boolean, spawnError: string | null }

/**
 * Runs a conversion tool in its own process group, keeping the last lines of its output (the reason when it
 * fails), reporting progress lines, and killing the whole group on the time limit or the abort signal, so
 * that no orphan is left behind.
 */
export async function runTool (command: string, args: string[], opts: { env?: NodeJS.ProcessEnv, cwd?: string, timeoutMs: number, signal?: AbortSignal, onLine?: (line: string) => void }): Promise<ToolRun> {
  const child = execa(command, args, { env: opts.env, cwd: opts.cwd, detached: true, reject: false, stdin: 'ignore', buffer: false, all: true, cleanup: true })
  const tail: string[] = []
  let timedOut = false
  let aborted = false
  const killGroup = (): void => { try { process.kill(-child.pid!, 'SIGKILL') } catch { /* gone */ } }
  const timer = setTimeout(() => { timedOut = true; killGroup() }, opts.timeoutMs)
  const onAbort = (): void => { aborted = true; killGroup() }
  opts.signal?.addEventListener('abort', onAbort, { once: true })
  if (opts.signal?.aborted) onAbort()
  let pending = ''
  child.all?.setEncoding('utf8')
  child.all?.on('data', (chunk: string) => {
    // tqdm redraws with \r: treat it as a line end too.
    const parts = (pending + chunk).split(/\r|\n/)
    pending = parts.pop()!
    for (const line of parts) {
      if (line.trim() === '') continue
      tail.push(line)
      if (tail.length > 40) tail.shift()
      opts.onLine?.(line)
    }
  })
  const result = await child
  clearTimeout(timer)
  opts.signal?.removeEventListener('abort', onAbort)
  if (pending.trim()) tail.push(pending)
  const spawnError = result.exitCode === undefined && result.signal === undefined ? (result.originalMessage ?? result.shortMessage ?? 'could not start') : null
  return { exitCode: result.exitCode ?? null, tail, timedOut, aborted, spawnError }
}
