import type { Config } from '../../core/platform/config.js'
import { resolvePath } from '../../core/base/paths.js'
import type { ConfigCheck, ConfigCheckContext } from '../../core/platform/plugin-manifest.js'
import { isPathItem, mapModelFiles, ownedFlagProblems } from '../../runtimes/extra-args.js'

/**
 * config.yaml's `models.<name>.args`, checked by what the gateway knows of llama-server's flags: the flags it sets
 * itself are refused with what to use instead, and model file paths in them (--model-draft ./draft.gguf) are
 * resolved against the config file like every other path, model names kept. The listed plugins' runtime kinds'
 * flags are held to the same rule: every llama-server of the kind would start with them.
 */
export function checkModelArgs (config: Config, context: ConfigCheckContext): ConfigCheck {
  const problems: string[] = []
  for (const kind of config.runtimeKinds) {
    for (const problem of ownedFlagProblems(kind.flags ?? [])) problems.push(`runtime kind ${kind.name} (a plugin's): its flags: ${problem}`)
  }
  const models = new Map([...config.models].map(([name, model]) => {
    if (!model.args) return [name, model] as const
    for (const problem of ownedFlagProblems(model.args)) problems.push(`models.${name}.args: ${problem}`)
    return [name, { ...model, args: mapModelFiles(model.args, (item) => isPathItem(item) ? resolvePath(item, context.base) : item) }] as const
  }))
  return { problems, resolved: { models } }
}
