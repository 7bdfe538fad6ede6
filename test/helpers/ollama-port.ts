import { writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import lockfile from 'proper-lockfile'
import { OLLAMA_ADDRESS } from '../../core/platform/config.js'

type Test = { teardown: (fn: () => unknown) => void }

// One file for every test process of the machine (the suite runs two at once, a developer may run another).
const LOCK_TARGET = join(tmpdir(), 'llamagate-test-ollama-port')
let held = 0

/** Whether this process holds Ollama's port for a test now (test/helpers/app.ts refuses `auto` otherwise). */
export function holdsOllamaPort (): boolean {
  return held > 0
}

/**
 * Ollama's real address, 127.0.0.1:11434, for this test alone, until it ends: what `ollama_listen: auto` takes and
 * what Ollama's clients reach with their default base URL. The suite's tests that take it are all in
 * test/plugins/native-api (one process, one after the other); the lock file keeps another run on this machine (a
 * developer's `npx tap` beside `npm test`) off it meanwhile. Every other test leaves the port alone
 * (`ollama_listen: off` in test/helpers/app.ts and child-env.ts).
 */
export async function holdOllamaPort (t: Test): Promise<{ url: string, port: number }> {
  await writeFile(LOCK_TARGET, '', { flag: 'a' })
  // Another process's test on the port lasts seconds to a minute or two (OpenClaw): up to five minutes.
  const release = await lockfile.lock(LOCK_TARGET, { retries: { retries: 300, minTimeout: 1000, maxTimeout: 1000 }, stale: 30_000, realpath: false })
  held++
  t.teardown(async () => {
    held--
    await release()
  })
  // Free, or the test would talk to whatever has it (a developer's Ollama) and fail for a reason it cannot name.
  const probe = createServer()
  await new Promise<void>((resolve, reject) => probe.once('error', reject).listen(OLLAMA_ADDRESS.port, OLLAMA_ADDRESS.host, resolve)).catch((err: NodeJS.ErrnoException) => {
    throw new Error(`this test needs Ollama's port ${OLLAMA_ADDRESS.host}:${OLLAMA_ADDRESS.port}, which another program holds (${err.code ?? err.message}): stop it (ollama serve?) and run the test again`)
  })
  await new Promise((resolve) => probe.close(resolve))
  return { url: `http://${OLLAMA_ADDRESS.host}:${OLLAMA_ADDRESS.port}`, port: OLLAMA_ADDRESS.port }
}
