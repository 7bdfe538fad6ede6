import { dirname } from 'node:path'
import type { Config } from './config.js'
import { ConfigError } from '../config/config-error.js'
import type { PluginManifest } from './plugin-manifest.js'

/**
 * The configuration as the plugins check it: each manifest's check runs on what the core resolved, and what a
 * plugin resolves itself (paths inside llama-server arguments) replaces the core's value. Checking twice changes
 * nothing. @throws ConfigError with every problem found, each naming its key
 */
export async function checkConfig (config: Config, manifests: readonly PluginManifest[]): Promise<Config> {
  const base = config.configFile !== null ? dirname(config.configFile) : process.cwd()
  const problems: string[] = []
  let checked = config
  for (const manifest of manifests) {
    if (manifest.checkConfig === undefined) continue
    const result = await manifest.checkConfig(checked, { base })
    problems.push(...result.problems)
    if (result.resolved) checked = { ...checked, ...result.resolved }
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return checked
}
