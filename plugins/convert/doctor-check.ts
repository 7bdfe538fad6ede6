import { fail, ok, warn, type Check } from '../../core/commands/doctor-checks.js'
import type { ConverterReadiness } from './python-env.js'

/** Whether SafeTensors conversion can run (GET /api/convert/status's answer). */
export function conversionCheck (readiness: ConverterReadiness): Check {
  if (!readiness.ready) return fail('conversion', `not ready: ${readiness.problems.join('; ')}`, readiness.fix ?? 'npm run setup:converter')
  const how = `python ${readiness.python}${readiness.shim ? ' with the compatibility runner' : ''}, llama.cpp source ${readiness.llamaCppSrc}`
  if (readiness.quantize === null) return warn('conversion', `ready for f32, f16, bf16 and q8_0 only, no llama-quantize (${how})`, readiness.fix)
  return ok('conversion', `ready (${how}, llama-quantize ${readiness.quantize})`)
}
