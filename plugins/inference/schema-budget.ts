import type { Config } from '../../core/platform/config.js'
import { BadRequestError } from '../../core/base/errors.js'

/** What one schema or grammar a request carries may cost llama-server to compile (config `limits`). */
export type SchemaBudget = Pick<Config['limits'], 'schemaBytes' | 'schemaAlternatives'>

/**
 * Refuses a request whose output constraint would cost llama-server more than the budget: it compiles every
 * `format`, `response_format`, `json_schema`, `grammar` and tool schema into a grammar before the first token,
 * holding the model's slot and its thread meanwhile. A `format` enum of 5,000 values took 24 s (another
 * client's request waited 53 s behind it); 50,000 wedged the model for minutes after its client had gone.
 * @throws BadRequestError naming the schema and the limit
 */
export function checkSchemaBudget (body: Record<string, unknown>, budget: SchemaBudget): void {
  for (const [where, value] of constraints(body)) {
    const text = typeof value === 'string' ? value : JSON.stringify(value)
    const bytes = Buffer.byteLength(text ?? '')
    if (bytes > budget.schemaBytes) {
      throw new BadRequestError(`${where} is ${kib(bytes)}: at most ${kib(budget.schemaBytes)} may be sent (limits.schema_size)`, 'schema_too_large')
    }
    const alternatives = typeof value === 'string' ? 0 : countAlternatives(value)
    if (alternatives > budget.schemaAlternatives) {
      throw new BadRequestError(`${where} lists ${alternatives} alternatives (enum values and consts): at most ${budget.schemaAlternatives} (limits.schema_alternatives)`, 'schema_too_large')
    }
  }
}

/** Each constraint of a llama-server body (chat, completion, Messages), with the words that name it. */
function * constraints (body: Record<string, unknown>): Generator<[string, unknown]> {
  const format = body.response_format as { json_schema?: { schema?: unknown }, schema?: unknown } | undefined
  if (format?.json_schema?.schema !== undefined) yield ['the response format\'s schema', format.json_schema.schema]
  if (format?.schema !== undefined) yield ['the response format\'s schema', format.schema]
  if (body.json_schema !== undefined) yield ['json_schema', body.json_schema]
  if (body.grammar !== undefined) yield ['the grammar', body.grammar]
  if (!Array.isArray(body.tools)) return
  for (const [i, tool] of (body.tools as Array<Record<string, any>>).entries()) {
    const schema = tool?.function?.parameters ?? tool?.input_schema
    const name = tool?.function?.name ?? tool?.name
    if (schema !== undefined) yield [`the schema of tool ${typeof name === 'string' ? JSON.stringify(name) : i + 1}`, schema]
  }
}

function countAlternatives (value: unknown): number {
  if (value === null || typeof value !== 'object') return 0
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + countAlternatives(item), 0)
  let count = 0
  for (const [key, item] of Object.entries(value)) {
    if (key === 'enum' && Array.isArray(item)) count += item.length
    else if (key === 'const') count += 1
    else count += countAlternatives(item)
  }
  return count
}

function kib (bytes: number): string {
  return bytes < 1024 ? `${bytes} bytes` : `${(bytes / 1024).toFixed(bytes < 10_240 ? 1 : 0)} KiB`
}
