import { existsSync } from 'node:fs'
import { isAbsolute } from 'node:path'
import { GatewayError } from '../../core/base/errors.js'
import { mapModelFiles } from '../../runtimes/extra-args.js'
import type { SchedulableModel, SchedulerStore } from './ports.js'

/**
 * config.yaml's `models.<name>.args` for a load, with each model named in them (a draft model, an adapter) as its
 * GGUF (of `dtype` when it has one). Resolved at each load, since the named models may be pulled or deleted.
 * @throws GatewayError 500 for a name that is neither a local model nor an existing file: the admin's to fix
 */
export function modelArgs (args: readonly string[], model: SchedulableModel, dtype: string, store: SchedulerStore): string[] {
  const problem = (item: string, why: string): GatewayError =>
    new GatewayError(500, `config.yaml models.${model.name}.args names "${item}", ${why}`, { code: 'bad_model_args' })
  return mapModelFiles(args, (item) => {
    if (isAbsolute(item)) {
      if (!existsSync(item)) throw problem(item, 'and there is no such file')
      return item
    }
    let named: SchedulableModel
    try {
      named = store.get(item)
    } catch {
      throw problem(item, 'which is neither a local model nor a file path (paths start with /, ./ or ~, or end in .gguf)')
    }
    const path = store.ggufPath(named, dtype) ?? store.ggufPath(named)
    if (path === null) throw problem(item, `which has no GGUF file yet (convert it first: ollama-style pull or /api/create)`)
    return path
  })
}
