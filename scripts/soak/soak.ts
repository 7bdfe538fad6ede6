import { randomUUID } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FakeHub } from '../../test/helpers/fake-hub.js'
import { cpuRuntime } from '../../test/helpers/runtime.js'
import { random } from './soak-clients.js'
import { CacheWriter } from './soak-cache-writer.js'
import { importModels, pullModels, soakPaths, startGateway, stopGateway, writeGatewayConfig, type RunningGateway } from './soak-gateway.js'
import { gatewayLog } from './soak-gateway-log.js'
import { HostileAttack } from './soak-hostile-attack.js'
import { startHostileUpstream, UPSTREAM_PREFIX, type RunningUpstream } from './soak-hostile-upstream.js'
import { attackerKeys, auditUsage, OPS_ONLY_MODEL, soakKeys, writeSoakKeys } from './soak-keys.js'
import { SoakLoad } from './soak-load.js'
import { hubPorts, startSoakHub } from './soak-models.js'
import { Monitor } from './soak-monitor.js'
import { heldSlots, MARK_VAR, useApiKey } from './soak-probes.js'
import { DODGER_TOKENS_PER_DAY } from './soak-quota-dodger.js'
import { buildReport, printLedger } from './soak-report.js'
import { LONG_MODEL, soakSettings } from './soak-settings.js'

/**
 * `npm run soak -- --minutes N` (or `--seconds N`): the gateway under a long, mixed and hostile load, on
 * loopback only, bounded in time and count, then its ledger.
 *
 * A fake hub and a real `llamagate serve` (the built CLI, the real CPU llama-server, a temporary data folder,
 * `limits.max_loaded_models: 2`) serve three tiny chat models to `--concurrency` clients sending streamed and
 * whole chats on /api/chat, /api/generate and /v1/chat/completions, a fifth of them leaving mid-stream or
 * early. Meanwhile faults, one at a time: llama-server SIGKILLed mid-answer, a SafeTensors pull through the
 * real converter, pulls with dropped connections, a pull left by its client mid-download, a pull of a
 * corrupt file, a delete while the model loads. Then: every request's outcome (none hung), the slots held
 * once all is quiet, processes left after the gateway stops (/proc), models listed that are not whole on
 * disk, and the gateway's RSS and descriptors at start, after warm-up and at the end (all models unloaded
 * and no client connected each time, so that the figures compare). Prints the ledger, writes it as JSON
 * (`--out`), and exits 1 if anything did not hold.
 *
 * Keys (scripts/soak/soak-keys.ts): the gateway reads a keys file of three (five with `--hostile`, below). `ops` (every
 * scope, every model, no limits) runs the faults (or the hostile clients' attacks), the soak's probes, the leavers and
 * soak/gamma; the clients take turns between `chat` (infer on
 * alpha and beta, 2 at once) and `batch` (the same, 1 at once and 12 a minute), whose requests must stay whole: a
 * chat client now and then asks for soak/gamma, which must be refused (403), and batch is told to wait (429 with
 * Retry-After). At the end the gateway's GET /api/usage must count chat's and batch's requests and tokens exactly
 * as their answers reported them.
 *
 * `--hostile` puts hostile clients in the faults' place once the warm-up is over (scripts/soak/soak-attackers.ts):
 * slow bodies, streams nobody reads, schema bombs, refused llama-server fields, blob floods and idle
 * connections, each in a loop, with short limits.body_timeout and stream_stall_timeout, and a fourth, long-context
 * model for the streams (with a room of its own: max_loaded_models 3); and three more: a hostile upstream (a loopback
 * fake, `hostile/m`) under a key of its own, a key with tokens_per_day leaving its streams early, and a writer into
 * the prompt-cache folder (small limits.upstream_* and prompt_cache budget, so that each is cheap and met often).
 * The same keys file, with the attackers' two keys added. The normal clients must all be answered, every attacker
 * get its refusal, RSS and descriptors stay flat under the attack, and chat's and batch's usage be exact.
 *
 * Flags: `--minutes N`, `--seconds N` (added; default 10 minutes), `--out FILE`, `--concurrency N` (5),
 * `--request-timeout S` (90: a request not ended by then is hung), `--seed N` (1), `--max-requests N`
 * (100000), `--keep` (keep the temporary folder; it is kept anyway when something failed), `--hostile`,
 * `--idle-connections N` (200: a round of the idle attacker).
 */

function say (line = ''): void { process.stdout.write(`${line}\n`) }

async function main (): Promise<number> {
  const settings = soakSettings()
  const { hostile } = settings
  const keys = soakKeys()
  const hostileKeys = hostile ? attackerKeys(`${UPSTREAM_PREFIX}*`, LONG_MODEL, DODGER_TOKENS_PER_DAY) : null
  const runtime = await cpuRuntime()
  const paths = soakPaths(await mkdtemp(join(tmpdir(), 'llamagate-soak-')))
  const mark = randomUUID()
  const env = { ...process.env, [MARK_VAR]: mark }
  let hub: FakeHub | null = null
  let upstream: RunningUpstream | null = null
  let gateway: RunningGateway | null = null
  let failed = true

  try {
    say(`soak: ${settings.durationMs / 1000} s of load, ${settings.concurrency} clients${hostile ? ', hostile clients after the warm-up' : ''}, request deadline ${settings.timeoutMs / 1000} s, seed ${settings.seed}; folder ${paths.dir}`)
    const models = await startSoakHub(paths.dir, hostile)
    hub = models.hub
    // Hostile: the upstream that misbehaves, in this process; and the files the cache writer plants before the start.
    if (hostile) upstream = await startHostileUpstream()
    const cacheWriter = hostile ? new CacheWriter(paths.modelsDir, paths.dataDir) : null
    await writeGatewayConfig({ paths, settings, runtimeBin: runtime.binDir, hubUrl: hub.url, upstream })
    await writeSoakKeys(paths.keysFile, keys, hostileKeys)
    useApiKey(keys.ops.secret)
    await importModels(paths, models.files, hostile, env)
    // The gateway reads the prompt-cache folder whole once, at its first load: the first round is there before it.
    await cacheWriter?.plantBeforeStart()
    gateway = await startGateway(paths, env)
    const base = gateway.url
    const gatewayPid = gateway.child.pid!
    say(`gateway pid ${gatewayPid} at ${base}, llama-server ${runtime.version} (${runtime.binDir})`)
    await pullModels(base, ['soak/alpha', 'soak/gamma'])

    const loadStart = Date.now()
    const since = (): number => (Date.now() - loadStart) / 1000
    const deadline = loadStart + settings.durationMs
    const rand = random(settings.seed)
    const ports = { ...hubPorts(hub), ...(upstream !== null ? { [upstream.port]: 'the hostile upstream' } : {}) }
    const monitor = new Monitor({ base, gatewayPid, mark, modelsDir: paths.modelsDir, hostile, ports, since, say })
    await monitor.measureQuiet('start')
    monitor.start()
    const attack = hostile
      ? new HostileAttack({ base, gatewayPid, settings, opsKey: keys.ops.secret, keys: hostileKeys!, upstream: upstream!, cacheWriter: cacheWriter!, modelsDir: paths.modelsDir, deadline, since, rand })
      : null
    const load = new SoakLoad({ base, settings, keys, deadline, since, rand, attacking: () => attack?.attacking ?? false, say })
    await attack?.markBaseline()
    const clients = load.clients()
    const faults = load.faultRotation({ base, hub, modelsDir: paths.modelsDir, killable: [OPS_ONLY_MODEL], mark, epsilonSha: models.epsilonSha, rand }, (when) => monitor.checkModels(when))
    const progress = setInterval(() => say(load.progressLine(attack?.attempts() ?? null, monitor.samples.at(-1))), 30_000)

    // The warm-up, its end measured quiet; then the load until the deadline, with the hostile clients' attack.
    await sleep(settings.warmupMs)
    await attack?.markBaseline()
    await load.gate.close()
    await monitor.measureQuiet('after_warmup')
    load.gate.open()
    await Promise.all([...clients, faults, attack?.run()])
    clearInterval(progress)
    const loadSeconds = since()

    // Once every client has gone: slots and queues (a leaver's slot must come back), the gateway quiet, its usage
    // against what the clients were told, then its stop as a user would, and anything it left.
    const held = await heldSlots(base)
    await monitor.measureQuiet('end')
    await monitor.stop()
    const keysSection = await auditUsage(base, keys, load.tally, loadSeconds)
    await attack?.readDisk()
    const stopped = await stopGateway(gateway, mark)
    gateway = null
    const hostileSection = await attack?.section(load.normal, monitor.samples, monitor.blobSamples) ?? null

    const report = buildReport({
      settings, loadSeconds, hostile: hostileSection, runtime: `${runtime.version}${runtime.commit ? ` ${runtime.commit}` : ''}`,
      ledger: load.ledger, faults: load.faults, samples: monitor.samples, processSamples: monitor.processSamples, orphans: monitor.orphans,
      partialListed: monitor.partialListed, partialChecks: monitor.partialChecks, quiet: monitor.quiet, held, log: await gatewayLog(paths.logFile), keys: keysSection,
      exit: stopped.exit, leftAtExit: stopped.leftAtExit.map((p) => `${p.pid} ${p.comm}`), left: stopped.left.map((p) => `${p.pid} ${p.comm} (parent ${p.ppid})`),
    })
    printLedger(report, say)
    if (settings.out !== undefined) {
      await writeFile(resolve(settings.out), JSON.stringify(report, null, 2) + '\n')
      say(`wrote ${settings.out}`)
    }
    failed = !report.ok
    return report.ok ? 0 : 1
  } finally {
    if (gateway !== null) { try { gateway.child.kill('SIGKILL') } catch { /* gone */ } }
    await hub?.close()
    await upstream?.close()
    if (failed || settings.keep) say(`kept ${paths.dir} (gateway log: ${paths.logFile})`)
    else await rm(paths.dir, { recursive: true, force: true })
  }
}

main().then((code) => process.exit(code), (err) => {
  process.stderr.write(`soak: ${(err as Error).stack ?? String(err)}\n`)
  process.exit(1)
})
