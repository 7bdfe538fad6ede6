import type { OllamaAddress } from '../../config/resolved-config.js'
import { formatHostPort } from '../../base/host-port.js'
import { ok, warn, type Check } from './doctor-checks.js'

const NAME = 'ollama clients'
/** Ollama's port answers at once or not at all: a second is plenty on loopback. */
const PROBE_TIMEOUT_MS = 2000

/**
 * Where Ollama's clients (OpenClaw, the AI SDK's and LangChain's providers, with their default base URL) reach
 * llamagate: the `ollama_listen` address, if llamagate answers there; Ollama itself there means they reach Ollama.
 * `mainUrl`: the server doctor checks, which they can be pointed at instead.
 */
export async function ollamaAddressCheck (address: OllamaAddress | null, mainUrl: string): Promise<Check> {
  const pointThem = `set their base URL to ${mainUrl}`
  if (address === null) return ok(NAME, `ollama_listen is off: they need their base URL set (${mainUrl})`)
  if (address.port === 0) return ok(NAME, `ollama_listen ${formatHostPort(address)}: the system picks the port at each start (see serve's start line)`)
  const host = address.host === '0.0.0.0' ? '127.0.0.1' : address.host === '::' ? '::1' : address.host
  const url = `http://${formatHostPort({ host, port: address.port })}`
  let answer: { version?: unknown, llamagate_version?: unknown }
  try {
    const res = await fetch(`${url}/api/version`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) })
    answer = await res.json() as typeof answer
  } catch {
    return warn(NAME, `nothing that speaks Ollama's API answers at ${url} (ollama_listen)`, `start llamagate serve (its start line says whether it took the port), or ${pointThem}`)
  }
  if (typeof answer.llamagate_version === 'string') return ok(NAME, `they reach llamagate at ${url} (Ollama's address: no base URL to set)`)
  return warn(NAME, `${url} is Ollama ${String(answer.version)}'s: Ollama's clients reach it, not llamagate`, `stop Ollama and restart llamagate serve, or ${pointThem}`)
}
