import { execa } from 'execa'

/**
 * Runs a hardware probe (`nvidia-smi`, `rocm-smi`, ...) with a time limit. A probe that is missing, fails
 * or hangs means "not present": the answer is null, never an exception.
 */
export async function runProbe (command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 3000): Promise<string | null> {
  try {
    // Its own process group: a hung probe's children (a wrapper script's `sleep`, a stuck driver call) would
    // otherwise keep its output open after the probe itself was killed.
    const child = execa(command, args, { env, extendEnv: false, reject: false, stdin: 'ignore', detached: true })
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      try { process.kill(-child.pid!, 'SIGKILL') } catch { /* already gone */ }
    }, timeoutMs)
    const result = await child
    clearTimeout(timer)
    if (timedOut || result.exitCode !== 0) return null
    return result.stdout
  } catch {
    return null
  }
}
