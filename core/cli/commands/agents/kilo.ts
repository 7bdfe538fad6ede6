import { inlineConfig } from './opencode.js'
import type { AgentRecipe } from './recipe.js'

/**
 * Kilo CLI (an opencode fork) through its inline config, KILO_CONFIG_CONTENT: merged over the user's kilo.json for
 * the run, never written. The provider is an OpenAI-compatible one (chat completions), as its docs configure local
 * servers, with the model's window and output limit.
 */
export const kilo: AgentRecipe = {
  title: 'Kilo CLI',
  command: 'kilo',
  npmPackage: '@kilocode/cli',
  env: (wiring) => ({ KILO_CONFIG_CONTENT: inlineConfig(wiring) }),
  // Its update check, models.dev catalog and telemetry reach hosts a local setup need not.
  switches: { KILO_DISABLE_AUTOUPDATE: '1', KILO_DISABLE_MODELS_FETCH: '1', KILO_TELEMETRY_LEVEL: 'off' },
  args: () => [],
}
