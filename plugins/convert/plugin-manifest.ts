import type { PluginManifest } from '../../core/platform/plugin-manifest.js'
import type { RuntimeRegistry } from '../../runtimes/registry.js'

/**
 * The converter's config section (`conversion`: config-section.ts) and doctor check: whether SafeTensors conversion
 * can run here, and what is missing.
 */
export const manifest: PluginManifest = {
  name: 'convert',
  config: async () => (await import('./config-section.js')).section,
  async doctor ({ config, shared }) {
    const [{ RuntimeRegistry: Registry }, { converterFor }, { conversionCheck, startNote }] = await Promise.all([
      import('../../runtimes/registry.js'), import('./converter-for.js'), import('./doctor-check.js'),
    ])
    // The runtimes plugin's check found the builds already (its llama-quantize is the converter's).
    const registry = shared.get('runtimes') as RuntimeRegistry | undefined ?? await Registry.create({ config })
    const conversion = await (await converterFor(config, registry)).readiness({ fresh: true })
    return { checks: [conversionCheck(conversion, await startNote(config, conversion))], json: { conversion } }
  },
}
