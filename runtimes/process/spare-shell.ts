import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'

/**
 * Reads the command line from stdin, a count and then one argument per line, into "$@". `read` takes a pipe
 * byte by byte, so nothing past the last argument is consumed and stdin stays the pipe the script may watch.
 * An EOF before the command (the gateway went without using this shell) ends it.
 */
const READ_COMMAND = [
  'IFS= read -r n || exit 0',
  'set --',
  'while [ "$n" -gt 0 ]; do IFS= read -r a || exit 0; set -- "$@" "$a"; n=$((n-1)); done',
].join('\n')

/**
 * Runs commands under a shell script (which ends in `exec "$@"`), each in its own process group with piped
 * stdio, from a shell forked ahead of need when it can.
 *
 * Why: Node forks its whole process to spawn (page tables of 100+ MiB, then the wait for the exec) with the
 * event loop blocked, on the path of a cold start that takes tens of milliseconds (docs/benchmarks.md). The owner
 * forks the spare at a quiet moment (`prepare()`); the next launch writes the command line to it and it runs the
 * script at once.
 *
 * The spare is one idle `sh` (about 1 MiB). It goes when its stdin closes, so it never outlives the gateway.
 */
export class SpareShell {
  private spare: ChildProcessWithoutNullStreams | null = null

  constructor (private readonly script: string, private readonly name: string) {}

  /** Whether a forked shell waits for the next launch. */
  get hasSpare (): boolean { return this.spare !== null && alive(this.spare) }

  /** The waiting shell's pid, if one waits. */
  get pid (): number | undefined { return this.hasSpare ? this.spare!.pid : undefined }

  /** Starts the command (program and arguments) under the script; the spare shell runs it when there is one. */
  launch (command: readonly string[]): ChildProcessWithoutNullStreams {
    const spare = this.spare
    this.spare = null
    // An argument with a newline cannot go through `read` line by line: such a command gets a fresh shell.
    if (spare !== null && alive(spare) && !command.some((arg) => arg.includes('\n'))) {
      spare.removeAllListeners('error')
      setRef(spare, true)
      spare.stdin.write(`${command.length}\n${command.map((arg) => `${arg}\n`).join('')}`)
      return spare
    }
    if (spare !== null) spare.kill('SIGKILL')
    return this.fork(['-c', this.script, this.name, ...command])
  }

  /** Forks a spare shell now unless one is ready. */
  prepare (): void {
    if (this.hasSpare) return
    const spare = this.fork(['-c', `${READ_COMMAND}\n${this.script}`, this.name])
    // Nobody else listens to it yet: a failed spawn or a write to a gone spare must not become an uncaught error.
    spare.once('error', () => { if (this.spare === spare) this.spare = null })
    spare.stdin.on('error', () => {})
    spare.once('exit', () => { if (this.spare === spare) this.spare = null })
    // Waiting, it must not keep the gateway's event loop alive.
    setRef(spare, false)
    this.spare = spare
  }

  /** Ends the spare shell, if any: the owner is closing. */
  close (): void {
    this.spare?.kill('SIGKILL')
    this.spare = null
  }

  private fork (args: string[]): ChildProcessWithoutNullStreams {
    return spawn('sh', args, { detached: true, stdio: ['pipe', 'pipe', 'pipe'] })
  }
}

/** Whether the child (its handle and its pipes) keeps the event loop alive, as a started program does. */
function setRef (child: ChildProcessWithoutNullStreams, ref: boolean): void {
  for (const handle of [child, child.stdin, child.stdout, child.stderr] as Array<{ ref?: () => void, unref?: () => void }>) {
    if (ref) handle.ref?.(); else handle.unref?.()
  }
}

function alive (child: ChildProcessWithoutNullStreams): boolean {
  return child.pid !== undefined && child.exitCode === null && child.signalCode === null && !child.killed
}
