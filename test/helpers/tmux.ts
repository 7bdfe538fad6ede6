import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { childEnv } from './child-env.js'
import { until } from './until.js'

const run = promisify(execFile)

export interface Terminal {
  /** Types keys as tmux names them: text, or `Enter`, `C-c`, `C-d`, `Up`, ... (each argument one key or string). */
  keys: (...keys: string[]) => Promise<void>
  /** Types text literally (no key names), without Enter. */
  type: (text: string) => Promise<void>
  /** What the screen shows now, with the scroll-back (lines joined that the terminal wrapped, no trailing blanks). */
  screen: () => Promise<string>
  /** Waits until the screen matches, and returns it; fails naming the pattern and showing the screen. */
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<string>
  /** The program's exit status once it has ended, else null. */
  exitStatus: () => Promise<number | null>
  /** Waits for the program to end and returns its exit status. */
  exited: (timeoutMs?: number) => Promise<number>
}

/**
 * Starts `command` in a real terminal: a tmux server of its own (a private socket), one window of `width` ×
 * `height`, TERM=xterm-256color and only `env` besides PATH and HOME (test/helpers/child-env.ts). The program
 * runs under a shell that writes its exit status to a file, since tmux 3.3 may call a pane dead without ever
 * learning the status; the shell's no-op trap keeps Ctrl-C, which the terminal sends it too, from ending it
 * before the program. The pane stays after the program exits, so that its last screen can be read; the server is
 * killed on teardown. The test's keys and screen reads go through one tmux client in control mode.
 */
export async function startTerminal (
  t: { teardown: (fn: () => unknown) => void },
  command: string[],
  env: NodeJS.ProcessEnv = {},
  size = { width: 120, height: 40 },
): Promise<Terminal> {
  const socket = `llamagate-test-${randomUUID().slice(0, 8)}`
  const tmuxEnv = childEnv({ TERM: 'xterm-256color' })
  const tmux = async (...args: string[]): Promise<string> => (await run('tmux', ['-L', socket, ...args], { env: tmuxEnv })).stdout
  const vars = Object.entries(childEnv({ ...env, TERM: 'xterm-256color' })).map(([k, v]) => `${k}=${v}`)
  const statusFile = join(tmpdir(), `${socket}.status`)
  await tmux('new-session', '-d', '-s', 'main', '-x', String(size.width), '-y', String(size.height),
    'env', '-i', ...vars, 'sh', '-c', `trap : INT; "$@"; echo $? > '${statusFile}'`, 'sh', ...command,
    ';', 'set-option', '-t', 'main', 'remain-on-exit', 'on')
  const control = new ControlClient(socket, tmuxEnv)
  t.teardown(async () => {
    await tmux('kill-server').catch(() => {})
    await control.close()
    await rm(statusFile, { force: true })
  })
  const screen = async (): Promise<string> => (await control.send('capture-pane -p -J -S - -t main')).replace(/[ \t]+$/gm, '')
  const exitStatus = async (): Promise<number | null> => {
    const text = await readFile(statusFile, 'utf8').catch(() => '')
    return /^\d+\n$/.test(text) ? Number(text) : null
  }
  return {
    keys: async (...keys) => { await control.send(`send-keys -t main ${keys.map(quoted).join(' ')}`) },
    type: async (text) => { await control.send(`send-keys -t main -l ${quoted(text)}`) },
    screen,
    waitFor: async (pattern, timeoutMs = 60_000) => {
      let last = ''
      try {
        return await until(`the terminal to show ${pattern}`, async () => { last = await screen(); return pattern.test(last) ? last : null }, timeoutMs, 100)
      } catch (err) {
        throw new Error(`${(err as Error).message}\n--- the screen ---\n${last}`)
      }
    },
    exitStatus,
    exited: async (timeoutMs = 30_000) => (await until('the program in the terminal to exit', async () => {
      const status = await exitStatus()
      return status === null ? null : { status }
    }, timeoutMs, 100).catch(async (err) => {
      throw new Error(`${(err as Error).message}\n--- the screen ---\n${await screen()}`)
    })).status,
  }
}

/** A word for tmux's command parser: single quotes keep everything in them as it is. */
function quoted (text: string): string {
  if (/['\n\r]/.test(text)) throw new Error(`cannot send ${JSON.stringify(text)} through tmux's control mode: a quote or a line end`)
  return `'${text}'`
}

/**
 * A tmux client in control mode (`tmux -C`): each command is a line on its stdin, and its output comes back between
 * `%begin` and `%end` (or `%error`) lines. The screen is read every 100 ms while a test waits: a `tmux` process
 * per read would start a process each time, this one client serves them all. It takes no pane output
 * (`no-output`) and leaves the window's size alone (`ignore-size`).
 */
class ControlClient {
  private readonly closed: Promise<void>
  private readonly child: ChildProcess
  private readonly waiting: Array<{ resolve: (output: string) => void, reject: (err: Error) => void }> = []
  private block: string[] | null = null
  private partial = ''
  private ended: Error | null = null

  constructor (socket: string, env: NodeJS.ProcessEnv) {
    this.child = spawn('tmux', ['-L', socket, '-C', 'attach-session', '-t', 'main', '-f', 'no-output,ignore-size'], { env, stdio: ['pipe', 'pipe', 'pipe'] })
    let stderr = ''
    this.child.stderr!.on('data', (d) => { stderr += d })
    this.child.stdout!.setEncoding('utf8')
    this.child.stdout!.on('data', (chunk: string) => this.read(chunk))
    // The client's stdin closes with it; a write after that is an error the pending command reports.
    this.child.stdin!.on('error', () => {})
    this.closed = new Promise((resolve) => {
      this.child.once('close', (code) => {
        this.ended = new Error(`the tmux control client exited (${code})${stderr ? `: ${stderr.trim()}` : ''}`)
        for (const { reject } of this.waiting.splice(0)) reject(this.ended)
        resolve()
      })
    })
  }

  /** Ends the client (stdin's end detaches it, if the server's end has not ended it already). */
  async close (): Promise<void> {
    this.child.stdin!.end()
    await this.closed
  }

  /** Runs one tmux command and returns its output. */
  send (command: string): Promise<string> {
    if (this.ended) return Promise.reject(this.ended)
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject })
      this.child.stdin!.write(`${command}\n`)
    })
  }

  private read (chunk: string): void {
    const lines = (this.partial + chunk).split('\n')
    this.partial = lines.pop()!
    for (const line of lines) this.line(line)
  }

  /**
   * Output lines belong to the open block; everything else outside a block is a notification. The blocks of the
   * commands sent on stdin have flags 1; the attach command's own block (flags 0) answers nobody.
   */
  private line (line: string): void {
    if (this.block === null) {
      if (line.startsWith('%begin ')) this.block = []
      return
    }
    const end = /^%(end|error) \d+ \d+ (\d+)$/.exec(line)
    if (end === null) { this.block.push(line); return }
    const output = this.block.length > 0 ? `${this.block.join('\n')}\n` : ''
    this.block = null
    if (end[2] !== '1') return
    const next = this.waiting.shift()
    if (next === undefined) return
    if (end[1] === 'error') next.reject(new Error(`tmux: ${output.trim()}`))
    else next.resolve(output)
  }
}
