import { createWriteStream } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { cpus } from 'node:os'
import { join } from 'node:path'
import lockfile from 'proper-lockfile'
import type { Logger } from '../../core/base/logger.js'
import type { RuntimeRegistry } from '../registry.js'
import { BUILD_RECIPE, buildRuntime } from './build-runtime.js'
import { buildFolder, buildLogPath, buildStatusPath, parseProgress, publicStatus, readBuildRecord, writeBuildRecord, type GpuBuildRecord, type GpuBuildStatus } from './build-status.js'
import type { GpuBuildPlan } from './gpu-build-plan.js'

export interface GpuRuntimeBuilderOptions {
  /** What planGpuBuild decided at start. */
  plan: GpuBuildPlan
  /** Refreshed once the build is installed, so that the next model load uses it. */
  registry: Pick<RuntimeRegistry, 'refresh' | 'chosen' | 'rejected'>
  dataDir: string
  /** A llama.cpp checkout to build (config's llama_cpp_src). @default the pinned release */
  source?: string | null
  log?: Pick<Logger, 'info' | 'warn'>
  /** Parallel compile jobs. @default one core fewer than the machine has (at least 1), left to serving */
  jobs?: number
}

/**
 * Builds a GPU runtime in the background while the CPU build serves: one build per data folder at a time
 * (a lock beside the build folders), its whole output in a log file, its state in a status file that
 * `llamagate doctor` reads from another process. When it is installed the registry chooses it, so models
 * loaded from then on run on the GPU; those already running keep their llama-server until their next load.
 */
export class GpuRuntimeBuilder {
  private record: GpuBuildRecord | null
  /** Another process holds the lock: its status file is the one to show. */
  private foreign = false
  private readonly abort = new AbortController()
  private running: Promise<void> = Promise.resolve()
  private started = false
  private saveFailed = false

  /** Made without starting anything: `llamagate doctor` makes one to read what a server's build is doing. */
  constructor (private readonly opts: GpuRuntimeBuilderOptions) {
    const { plan } = opts
    this.record = plan.action === 'failed-before' ? plan.record : plan.action === 'build' ? plan.previous : null
    // The status file reads `building` only while its process lives.
    this.foreign = this.record?.state === 'building' && this.record.pid !== process.pid
  }

  /** What the build is doing, as GET /api/runtimes shows it; null when there is no build to tell of. */
  status (): GpuBuildStatus | null {
    const record = this.foreign && this.opts.plan.action !== 'none' ? readBuildRecord(this.opts.dataDir, this.opts.plan.backend) : this.record
    return record === null ? null : publicStatus(record)
  }

  /** The line that says why the GPU is not used yet and what to do, in place of the registry's own warning; null when none. */
  get warning (): string | null {
    const { plan } = this.opts
    if (plan.action === 'none') return null
    if (plan.action === 'no-toolkit') return plan.warning
    const log = buildLogPath(this.opts.dataDir, plan.backend)
    switch (this.status()?.state) {
      case 'building': return `${plan.backend} device found (${plan.device.name}): its llama.cpp runtime is being built in the background (log: ${log}); running on CPU until it is done`
      case 'failed': return plan.action === 'failed-before' ? plan.warning : this.failureLine()
      case 'interrupted': return `${plan.backend} device found (${plan.device.name}): the build of its llama.cpp runtime was interrupted (log: ${log}); running on CPU. The next start of llamagate takes it up again`
      default: return null
    }
  }

  /** The start-up log's line when a build is to run in the background, else null (a warning says the rest). */
  get note (): string | null {
    const { plan } = this.opts
    if (plan.action !== 'build') return null
    return `building the ${plan.backend} runtime in the background for ${plan.device.name} (log: ${buildLogPath(this.opts.dataDir, plan.backend)}); the CPU serves until it is done`
  }

  /** Starts the build when the plan says so; returns at once. */
  start (): void {
    const { plan } = this.opts
    if (plan.action !== 'build' || this.started || this.foreign) return
    this.started = true
    this.running = this.run(plan).catch((err: unknown) => this.opts.log?.warn(`the ${plan.backend} runtime build stopped: ${(err as Error).message}`))
  }

  /** Settles when the build has ended (built, failed or stopped); at once when none runs. */
  finished (): Promise<void> {
    return this.running
  }

  /** Stops a build in progress (its whole process group) and waits for it: nothing half-installed is left. */
  async close (): Promise<void> {
    this.abort.abort(new Error('the gateway is closing'))
    await this.running
  }

  private async run (plan: Extract<GpuBuildPlan, { action: 'build' }>): Promise<void> {
    const { dataDir, log } = this.opts
    await mkdir(buildFolder(dataDir), { recursive: true })
    let unlock: () => Promise<void>
    try {
      unlock = await lockfile.lock(join(buildFolder(dataDir), 'gpu-runtime'), {
        realpath: false, stale: 10_000, update: 5_000, retries: 0,
        onCompromised: (err) => log?.warn(`the GPU runtime build's lock was taken over: ${err.message}`),
      })
    } catch (err) {
      if ((err as { code?: string }).code !== 'ELOCKED') throw err
      this.foreign = true
      log?.info(`another llamagate is building a GPU runtime in ${buildFolder(dataDir)}; restart this one once it is done to use it`)
      return
    }
    const started = Date.now()
    const output = createWriteStream(buildLogPath(dataDir, plan.backend), { flags: 'w' })
    this.record = {
      backend: plan.backend, state: 'building', step: 'starting', completed: null, total: null, started_at: new Date(started).toISOString(),
      finished_at: null, error: null, log: buildLogPath(dataDir, plan.backend), pid: process.pid, recipe: BUILD_RECIPE,
    }
    this.save()
    try {
      const bin = await buildRuntime({
        backend: plan.backend, dataDir, source: this.opts.source ?? null, jobs: this.opts.jobs ?? Math.max(1, cpus().length - 1),
        lowPriority: true, signal: this.abort.signal, env: plan.toolkit.env,
        say: (line) => { output.write(`[runtime:build] ${line}\n`); this.update({ step: line.split(': cmake ')[0]! }) },
        onOutput: (line) => { output.write(`${line}\n`); const progress = parseProgress(line); if (progress) this.update(progress) },
      })
      await this.opts.registry.refresh()
      if (this.opts.registry.chosen?.binDir !== bin) {
        const refused = this.opts.registry.rejected.find((r) => r.binDir === bin)
        throw new Error(refused ? `it was installed into ${bin} but does not run: ${refused.error}` : `it was installed into ${bin} but not chosen`)
      }
      this.update({ state: 'built', step: `installed into ${bin}`, finished_at: new Date().toISOString() })
      log?.info(`the ${plan.backend} runtime is built (${bin}, in ${Math.round((Date.now() - started) / 1000)} s): models loaded from now on run on it; those loaded before move on their next load`)
    } catch (err) {
      if (this.abort.signal.aborted) {
        // The next start takes it up again (CMake's build folder keeps what was compiled).
        this.update({ state: 'interrupted', error: 'stopped with the gateway', finished_at: new Date().toISOString() })
      } else {
        this.update({ state: 'failed', error: (err as Error).message, finished_at: new Date().toISOString() })
        log?.warn(this.failureLine())
      }
    } finally {
      await new Promise((resolve) => output.end(resolve))
      await unlock().catch(() => {})
    }
  }

  private failureLine (): string {
    const record = this.record!
    return `building the ${record.backend} runtime failed: ${record.error} — the CPU keeps serving. Its output: ${record.log}. ` +
      `Not retried by itself: run npm run runtime:build -- --backend ${record.backend} to try again, or delete ${buildStatusPath(this.opts.dataDir, record.backend)} to try again at the next start`
  }

  private update (change: Partial<GpuBuildRecord>): void {
    if (this.record === null) return
    this.record = { ...this.record, ...change }
    this.save()
  }

  /** A status file that cannot be written costs doctor its view, never the build. */
  private save (): void {
    try {
      writeBuildRecord(this.opts.dataDir, this.record!)
    } catch (err) {
      if (!this.saveFailed) this.opts.log?.warn(`cannot write the GPU build's status file: ${(err as Error).message}`)
      this.saveFailed = true
    }
  }
}

