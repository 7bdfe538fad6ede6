import { execa } from 'execa'

/**
 * Runs a hardware probe (`nvidia-smi`, `rocm-smi`, ...) with a time limit. A probe that is missing, fails
 * or hangs means "not present": the answer is null, never an exception.
 */
export async function runProbe (command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 3000): Promise<string | null> {
  try {
    const result = await execa(command, args, { env, extendEnv: false, timeout: timeoutMs, reject: false, stdin: 'ignore', forceKillAfterDelay: 500 })
    if (result.exitCode !== 0 || result.timedOut) return null
    return result.stdout
  } catch {
    return null
  }
}
