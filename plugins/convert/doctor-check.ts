import { fail, ok, warn, type Check } from '../../core/cli/commands/doctor-checks.js'
import type { Config } from '../../core/platform/config.js'
import { automaticRoute, LOCAL_HOST, requirementsOf, type SetupHost } from './converter-setup.js'
import type { ConverterReadiness } from './python-env.js'

/** Whether SafeTensors conversion can run (GET /api/convert/status's answer); `start`: what a server start does about it. */
export function conversionCheck (readiness: ConverterReadiness, start: string | null = null): Check {
  if (!readiness.ready) return fail('conversion', `not ready: ${readiness.problems.join('; ')}${start === null ? '' : ` (${start})`}`, readiness.fix ?? 'npm run setup:converter')
  const how = `python ${readiness.python}${readiness.shim ? ' with the compatibility runner' : ''}, llama.cpp source ${readiness.llamaCppSrc}`
  if (readiness.quantize === null) return warn('conversion', `ready for f32, f16, bf16 and q8_0 only, no llama-quantize (${how})`, readiness.fix)
  return ok('conversion', `ready (${how}, llama-quantize ${readiness.quantize})`)
}

/** What a server start does about a converter that is not ready: installs it by itself, or why not. */
export async function startNote (config: Pick<Config, 'conversion'>, readiness: ConverterReadiness, host: SetupHost = LOCAL_HOST): Promise<string | null> {
  if (readiness.ready || readiness.llamaCppSrc === null) return null
  if (!config.conversion.autoSetup) return 'conversion.auto_setup is off: a server start installs nothing'
  if (config.conversion.python !== null) return 'conversion.python names an interpreter of your own: a server start installs nothing into it'
  const plan = await automaticRoute(host, requirementsOf(readiness.llamaCppSrc))
  if (plan.route === null) return `a server start cannot install it by itself: ${plan.why}`
  return `a server start installs it in the background (${plan.route === 'apt' ? 'Debian\'s packages with apt-get' : 'a virtual environment'}); GET /api/convert/status shows how far`
}
