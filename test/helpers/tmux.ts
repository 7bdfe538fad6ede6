import { execFile } from 'node:child_process'
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
 * killed on teardown.
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
  const statusFile = join(tmpdir(), `${socket}.status`)
  await tmux('new-session', '-d', '-s', 'main', '-x', String(size.width), '-y', String(size.height),
    'env', '-i', ...vars, 'sh', '-c', `trap : INT; "$@"; echo $? > '${statusFile}'`, 'sh', ...command,
    ';', 'set-option', '-t', 'main', 'remain-on-exit', 'on')
  t.teardown(async () => {
    await tmux('kill-server').catch(() => {})
    await rm(statusFile, { force: true })
  })
  const screen = async (): Promise<string> => (await tmux('capture-pane', '-p', '-J', '-S', '-', '-t', 'main')).replace(/[ \t]+$/gm, '')
  const exitStatus = async (): Promise<number | null> => {
    const text = await readFile(statusFile, 'utf8').catch(() => '')
    return /^\d+\n$/.test(text) ? Number(text) : null
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
    exited: async (timeoutMs = 30_000) => (await until('the program in the terminal to exit', async () => {
      const status = await exitStatus()
      return status === null ? null : { status }
    }, timeoutMs, 100).catch(async (err) => {
      throw new Error(`${(err as Error).message}\n--- the screen ---\n${await screen()}`)
    })).status,
  }
}
