import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { promisify } from 'node:util'
import { childEnv } from './child-env.js'
import { until } from './until.js'

const run = promisify(execFile)

export interface Terminal {
  /** Types keys as tmux names them: text, or `Enter`, `C-c`, `C-d`, `Up`, ... (each argument one key or string). */
  keys: (...keys: string[]) => Promise<void>
  /** Types text literally (no key names), without Enter. */
  type: (text: string) => Promise<void>
  /** What the screen shows now, with the scroll-back (lines joined that the terminal wrapped). */
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
 * `height`, TERM=xterm-256color and only `env` besides PATH and HOME (test/helpers/child-env.ts). The pane stays
 * after the program exits, so that its last screen and exit status can be read; the server is killed on teardown.
 */
export async function startTerminal (
  t: { teardown: (fn: () => unknown) => void },
  command: string[],
  env: NodeJS.ProcessEnv = {},
  size = { width: 120, height: 40 },
): Promise<Terminal> {
  const socket = `llamagate-test-${randomUUID().slice(0, 8)}`
  const tmux = async (...args: string[]): Promise<string> => (await run('tmux', ['-L', socket, ...args], { env: childEnv({ TERM: 'xterm-256color' }) })).stdout
  const vars = Object.entries(childEnv({ ...env, TERM: 'xterm-256color' })).map(([k, v]) => `${k}=${v}`)
  // remain-on-exit is set in the same tmux call that starts the program, so a quick exit cannot outrun it.
  await tmux('new-session', '-d', '-s', 'main', '-x', String(size.width), '-y', String(size.height),
    'env', '-i', ...vars, ...command, ';', 'set-option', '-t', 'main', 'remain-on-exit', 'on')
  t.teardown(() => tmux('kill-server').catch(() => {}))
  const screen = async (): Promise<string> => tmux('capture-pane', '-p', '-J', '-S', '-', '-t', 'main')
  const exitStatus = async (): Promise<number | null> => {
    const [dead, status] = (await tmux('display-message', '-p', '-t', 'main', '#{pane_dead} #{pane_dead_status}')).trim().split(' ')
    return dead === '1' ? Number(status) : null
  }
  return {
    keys: async (...keys) => { await tmux('send-keys', '-t', 'main', ...keys) },
    type: async (text) => { await tmux('send-keys', '-t', 'main', '-l', text) },
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
    // tmux marks the pane dead a moment before it has the status; 0 is a status too, so wait for a whole number.
    exited: async (timeoutMs = 30_000) => (await until('the program in the terminal to exit', async () => {
      const status = await exitStatus()
      return status !== null && Number.isInteger(status) ? { status } : null
    }, timeoutMs, 100).catch(async (err) => {
      throw new Error(`${(err as Error).message}\n--- the screen ---\n${await screen()}`)
    })).status,
  }
}
