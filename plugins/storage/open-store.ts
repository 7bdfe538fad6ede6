import type { Logger } from '../../core/base/logger.js'
import { ModelStore } from './model-store.js'

/**
 * The one way into the models folder, for the server and the CLI alike: the store read back from disk
 * (anything half-written found and dealt with), its warnings logged. The server also follows other
 * processes' changes (an import by the CLI shows up without a restart); a one-shot command does not need to.
 */
export async function openStore (modelsDir: string, options: { log?: Pick<Logger, 'warn'>, followChanges?: boolean, aliases?: ReadonlyMap<string, string> } = {}): Promise<ModelStore> {
  const { log } = options
  const store = new ModelStore(modelsDir, { ...(log ? { onWarning: (message: string) => log.warn(message) } : {}), ...(options.aliases ? { aliases: options.aliases } : {}) })
  await store.init()
  if (options.followChanges === true) await store.watchChanges()
  return store
}
