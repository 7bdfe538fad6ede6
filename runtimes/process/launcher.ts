import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { RuntimeError } from '../../core/base/errors.js'
import type { Logger } from '../../core/base/logger.js'
import type { RuntimeRegistry } from '../registry.js'
import { LlamaServer } from './llama-server.js'
import { runtimeProcesses } from './runtime-processes.js'
import { createSocketDir } from './socket-dir.js'
import type { RuntimeSpawnOptions } from './spawn-options.js'

/**
 * Makes llama-server processes with the chosen build, each listening on a Unix socket of its own in a folder
 * only this user can enter (named by a counter, so that no two ever share one). Closing stops every
 * llama-server this gateway started and removes the folder.
 */
export class RuntimeLauncher {
  private started = 0

  private constructor (private readonly registry: RuntimeRegistry, private readonly socketDir: string, private readonly log?: Logger,
    private readonly startTimeoutMs?: number) {}

  /** `startTimeoutMs`: how long a llama-server may take to serve before its start fails (config's limits.load_timeout). */
  static async create (registry: RuntimeRegistry, log?: Logger, startTimeoutMs?: number): Promise<RuntimeLauncher> {
    return new RuntimeLauncher(registry, await createSocketDir(), log, startTimeoutMs)
  }

  /** The backend name of the build in use (`cpu`, `cuda`, ...), or null when there is none. */
  backend (): string | null { return this.registry.chosen?.backend ?? null }

  /** Bytes free for models right now on the chosen backend's memory. */
  freeMemory (): Promise<number> { return this.registry.freeMemory() }

  /**
   * Whether the chosen build's starts can be prepared while a load waits for room (its `--load-gate`:
   * LlamaServer.prepare). CPU builds only: a GPU build sets its devices up before the gate, asking each its free
   * memory, which may make a device context that the room does not count (not measured yet on a GPU).
   */
  preparesAhead (): boolean { return this.registry.chosen?.features.loadGate === true && this.registry.chosen.backend === 'cpu' }

  /** A process ready to be started. @throws RuntimeError when no build exists */
  create (options: RuntimeSpawnOptions): LlamaServer {
    const build = this.registry.chosen
    if (!build) throw new RuntimeError(`no llama.cpp runtime is available: ${this.registry.reason}`, [], 'no_runtime')
    // A plugin kind's flags go before the model's own arguments, which llama-server lets win (the last one counts).
    const launch = this.registry.launchOf(build)
    const extraArgs = launch.flags.length > 0 ? [...launch.flags, ...options.extraArgs ?? []] : options.extraArgs
    return new LlamaServer({
      ...options, socketPath: join(this.socketDir, `${++this.started}.sock`), build, log: this.log,
      ...(extraArgs !== undefined ? { extraArgs } : {}),
      ...(Object.keys(launch.env).length > 0 ? { env: launch.env } : {}),
      ...(this.startTimeoutMs !== undefined ? { startTimeoutMs: this.startTimeoutMs } : {}),
    })
  }

  /** Stops every llama-server of this process, then removes the sockets' folder. */
  async close (): Promise<void> {
    await runtimeProcesses.stopAll()
    await rm(this.socketDir, { recursive: true, force: true })
  }
}
