import { CLIENT_FLAGS, CLIENT_OPTIONS, JSON_OPTION, type Command } from './command.js'
import type { DoctorReport } from '../../platform/plugin-manifest.js'
import { inspectModelsFolder, modelsCheck, type Check } from './doctor-checks.js'
import { ollamaAddressCheck } from './ollama-address-check.js'
import { ServerError, ServerUnreachableError, type GatewayClient } from '../../platform/gateway-client.js'

/** A server that accepts the connection but never answers must not hold doctor up. */
const SERVER_TIMEOUT_MS = 5000
const MARKS: Record<Check['status'], string> = { ok: '✓', warn: '!', fail: '✗' }

/**
 * This machine as `serve` would see it (the same configuration, the same runtime registry and converter), and
 * whether the server answers. Reads only: it makes no folder and starts nothing that outlives it.
 */
export const doctor: Command = {
  name: 'doctor',
  summary: 'check this machine: hardware, runtime builds, conversion, models folder, the server, Ollama\'s address',
  usage: ['llamagate doctor [--config FILE] [--models DIR] [--host URL] [--json]'],
  flags: [
    CLIENT_FLAGS[0]!,
    '--config FILE    config file, as serve reads it (default: $LLAMAGATE_CONFIG, else the shipped one)',
    '--models DIR     models folder to check (as serve --models)',
    '--json           print the checks as JSON',
    'Each line is ✓ (fine), ! (a warning) or ✗ (a problem, with its fix). Exit status: 0 when a runtime',
    'build is chosen and the server answers (taking LLAMAGATE_API_KEY if it wants a key), 1 otherwise.',
  ],
  options: { ...CLIENT_OPTIONS, ...JSON_OPTION, models: { type: 'string' } },
  positionals: { min: 0, max: 0 },
  async run ({ values, stdout, client }) {
    const { config: file, models } = values as { config?: string, models?: string }
    // Loaded here, not at the top: the other commands must start without the server's modules.
    const [{ loadConfigAndPlugins }, { checkConfig }] = await Promise.all([
      import('../../platform/plugin-manifests.js'), import('../../platform/config-checks.js'),
    ])
    const loaded = await loadConfigAndPlugins({ config: file, models })
    const manifests = loaded.manifests
    const config = await checkConfig(loaded.config, manifests)
    const server = checkServer(client())
    const ollamaClients = ollamaAddressCheck(config.ollamaListen, client().url)
    const folder = inspectModelsFolder(config.modelsDir)
    // Each plugin checks what it knows of this machine (the runtimes: hardware and builds; the converter), in order.
    const shared = new Map<string, unknown>()
    const reports: DoctorReport[] = []
    for (const manifest of manifests) if (manifest.doctor) reports.push(await manifest.doctor({ config, shared }))
    const { checks: serverChecks, version, ollamaApi, usable } = await server
    const checks: Check[] = [
      { name: 'config', status: 'ok', message: config.configFile ?? 'built-in defaults (no config file)', fix: null },
      ...reports.flatMap((r) => r.checks),
      modelsCheck(await folder),
      ...serverChecks,
      await ollamaClients,
    ]
    const healthy = reports.every((r) => r.usable !== false) && usable
    if (values.json === true) {
      const found = Object.assign({}, ...reports.map((r) => r.json ?? {})) as Record<string, unknown>
      stdout.write(`${JSON.stringify({ ok: healthy, checks, ...found, models: await folder, server: { url: client().url, version, ollamaApi } }, null, 2)}\n`)
    } else {
      for (const c of checks) stdout.write(`${MARKS[c.status]} ${c.name}: ${c.message}${c.fix !== null ? ` — fix: ${c.fix}` : ''}\n`)
    }
    return healthy ? 0 : 1
  },
}

/**
 * Whether the server answers (`/api/version`, no key needed), and whether this client's key is accepted.
 * Never throws: whatever goes wrong is a finding.
 */
async function checkServer (client: GatewayClient): Promise<{ checks: Check[], version: string | null, ollamaApi: string | null, usable: boolean }> {
  const start = 'llamagate serve (or point at another with --host URL or LLAMAGATE_HOST)'
  const down = (message: string, fix = start): { checks: Check[], version: null, ollamaApi: null, usable: false } => ({ checks: [{ name: 'server', status: 'fail', message, fix }], version: null, ollamaApi: null, usable: false })
  let answer: { version?: unknown, llamagate_version?: unknown }
  try {
    answer = await client.json<typeof answer>('GET', '/api/version', undefined, AbortSignal.timeout(SERVER_TIMEOUT_MS))
  } catch (err) {
    if (err instanceof ServerUnreachableError) return down(`not running at ${client.url} (${err.reason})`)
    if (err instanceof ServerError) return down(`${client.url} answered ${err.status} to /api/version (${err.message}): not a llamagate server?`)
    if ((err as Error).name === 'TimeoutError') return down(`${client.url} took the connection but did not answer within ${SERVER_TIMEOUT_MS / 1000} s`, `see what listens there; ${start}`)
    return down(`${client.url}: ${(err as Error).message}`)
  }
  // `version` is the Ollama API level every Ollama-speaking server gives; only llamagate adds its own.
  if (typeof answer.llamagate_version !== 'string') {
    return down(`${client.url} answers as Ollama ${String(answer.version)}, not llamagate`)
  }
  const version = answer.llamagate_version
  const ollamaApi = String(answer.version)
  const checks: Check[] = [{ name: 'server', status: 'ok', message: `llamagate ${version} (Ollama API ${ollamaApi}) answers at ${client.url}`, fix: null }]
  // /api/version needs no key; every other command does when the server has keys.
  const refused = await client.send('GET', '/api/tags', { signal: AbortSignal.timeout(SERVER_TIMEOUT_MS) })
    .then(() => false, (err: unknown) => err instanceof ServerError && err.status === 401)
  if (refused) {
    checks.push({ name: 'api key', status: 'fail', message: `the server wants an API key and ${process.env.LLAMAGATE_API_KEY ? 'refuses LLAMAGATE_API_KEY' : 'LLAMAGATE_API_KEY is not set'}`, fix: 'set LLAMAGATE_API_KEY to one of the server\'s keys (its auth.api_keys)' })
  }
  return { checks, version, ollamaApi, usable: !refused }
}
