import type { Logger } from '../../core/base/logger.js'
import type { Converter, ConvertProgress, ReadinessGate } from './converter.js'
import { aptStep, automaticRoute, LOCAL_HOST, requirementsOf, venvStep, type SetupHost } from './converter-setup.js'
import { APT_COMMAND, missingModules, pythonCandidates } from './python-env.js'

/** Where the start's preparation of the converter stands (GET /api/convert/status's `preparation`). */
export interface PreparationStatus {
  /**
   * off: conversion.auto_setup is false; idle: not started (the server is not listening yet); checking; not_needed:
   * an interpreter has the modules; preparing; ready; failed: the install ran and conversion is still not ready;
   * unavailable: nothing could be installed without asking (`detail` says why).
   */
  state: 'off' | 'idle' | 'checking' | 'not_needed' | 'preparing' | 'ready' | 'failed' | 'unavailable'
  /** apt or venv, once chosen. */
  route: 'apt' | 'venv' | null
  /** The install's last line while preparing; why, once failed or unavailable; null otherwise. */
  detail: string | null
  started_at: string | null
  finished_at: string | null
}

export interface PreparationOptions {
  /** conversion.auto_setup. */
  enabled: boolean
  /** conversion.python: a configured interpreter is the user's, never installed into. */
  python: string | null
  dataDir: string
  log?: Pick<Logger, 'info' | 'warn'>
  /** What the machine allows. @default this machine */
  host?: SetupHost
}

/**
 * At a server's start, checks once (cheaply: no torch import) whether an interpreter has what the converter
 * imports, and where none has, installs it in the background by the route the machine allows without asking.
 * Conversions that arrive meanwhile wait on it (its ReadinessGate) and hear its lines as progress.
 */
export class ConverterPreparation implements ReadinessGate {
  private current: PreparationStatus
  private run: Promise<void> | null = null
  private readonly listeners = new Set<(line: string) => void>()
  private readonly stop = new AbortController()

  constructor (private readonly converter: Converter, private readonly options: PreparationOptions) {
    this.current = { state: options.enabled ? 'idle' : 'off', route: null, detail: null, started_at: null, finished_at: null }
    converter.waitFor(this)
  }

  get status (): PreparationStatus { return { ...this.current } }

  get pending (): boolean { return this.current.state === 'checking' || this.current.state === 'preparing' }

  /** Starts the check (once; later calls return the same run). */
  start (): Promise<void> {
    if (!this.options.enabled) return Promise.resolve()
    this.run ??= this.prepare().catch((err: Error) => {
      this.finish('failed', err.message)
      this.options.log?.warn({ err }, 'preparing the converter failed')
    })
    return this.run
  }

  async wait (opts: { signal?: AbortSignal, onProgress?: (progress: ConvertProgress) => void }): Promise<void> {
    if (!this.pending || this.run === null) return
    const tell = (line: string): void => opts.onProgress?.({ status: `preparing the converter: ${line}` })
    tell(this.current.detail ?? (this.current.state === 'checking' ? 'checking what it needs' : 'starting'))
    this.listeners.add(tell)
    try {
      await new Promise<void>((resolve, reject) => {
        const leave = (): void => reject(opts.signal!.reason)
        if (opts.signal?.aborted) { leave(); return }
        opts.signal?.addEventListener('abort', leave, { once: true })
        this.run!.finally(() => { opts.signal?.removeEventListener('abort', leave); resolve() })
      })
    } finally {
      this.listeners.delete(tell)
    }
  }

  /** Stops waiting on an install at shutdown (a venv's pip is killed; apt-get is left to finish: see aptStep). */
  close (): void {
    this.stop.abort(new Error('the gateway is shutting down'))
  }

  private async prepare (): Promise<void> {
    this.current = { ...this.current, state: 'checking', started_at: new Date().toISOString() }
    const src = this.converter.sourceTree()
    // No tree: nothing Python can fix; the readiness's fix says how to get one.
    if (src === null) return this.finish('unavailable', 'no llama.cpp source tree with convert_hf_to_gguf.py (the runtime build fetches one)')
    const candidates = pythonCandidates(this.options.python, this.options.dataDir)
    const missing: string[] = []
    for (const python of candidates) {
      const lacks = await missingModules(python)
      if (lacks !== null && lacks.length === 0) return this.finish('not_needed', null)
      missing.push(lacks === null ? `${python} does not run` : `${python} lacks ${lacks.join(', ')}`)
    }
    const lacking = missing.join('; ') || 'no python3 found'
    if (this.options.python !== null) {
      return this.finish('unavailable', `${lacking}; conversion.python names an interpreter of your own, which llamagate installs nothing into: install them there, or unset conversion.python`)
    }
    const plan = await automaticRoute(this.options.host ?? LOCAL_HOST, requirementsOf(src))
    if (plan.route === null) return this.finish('unavailable', `${lacking}; nothing can be installed without asking: ${plan.why}. To fix: npm run setup:converter, or as root: ${APT_COMMAND}`)
    this.current = { ...this.current, state: 'preparing', route: plan.route, detail: `${lacking}: installing them (${plan.route === 'apt' ? 'apt-get' : 'a virtual environment'})` }
    this.options.log?.info(`preparing the converter in the background: ${this.current.detail}`)
    const say = (line: string): void => {
      this.current.detail = line
      for (const listener of this.listeners) listener(line)
    }
    const installed = plan.route === 'apt'
      ? await aptStep({ say, signal: this.stop.signal })
      : await venvStep({ llamaCppSrc: src, dataDir: this.options.dataDir, say, signal: this.stop.signal })
    if (this.stop.signal.aborted) return this.finish('failed', 'the gateway shut down during the install')
    this.converter.forget()
    const readiness = await this.converter.readiness({ fresh: true })
    if (readiness.ready) {
      this.finish('ready', null)
      this.options.log?.info(`the converter is ready (prepared with ${plan.route} in ${Math.round((Date.now() - Date.parse(this.current.started_at!)) / 1000)} s)`)
    } else {
      this.finish('failed', `${installed ? 'the install ran' : `the install failed (last line: ${this.current.detail})`}, and conversion is still not ready: ${readiness.problems.join('; ')}`)
      this.options.log?.warn(`preparing the converter failed: ${this.current.detail}`)
    }
  }

  private finish (state: PreparationStatus['state'], detail: string | null): void {
    this.current = { ...this.current, state, detail, finished_at: new Date().toISOString() }
    if (state === 'unavailable') this.options.log?.warn(`the converter is not ready and is not prepared automatically: ${detail}`)
  }
}
