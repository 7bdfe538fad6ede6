import childProcess from 'node:child_process'
import { syncBuiltinESMExports } from 'node:module'

/** Counts the processes started through child_process.spawn while `fn` runs (execa starts them with it). */
export async function spawnsDuring (fn: () => Promise<unknown>): Promise<number> {
  const original = childProcess.spawn
  let count = 0
  childProcess.spawn = ((...args: Parameters<typeof original>) => { count++; return original(...args) }) as typeof original
  syncBuiltinESMExports()
  try {
    await fn()
  } finally {
    childProcess.spawn = original
    syncBuiltinESMExports()
  }
  return count
}
