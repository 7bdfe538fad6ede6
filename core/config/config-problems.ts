import type { ErrorObject } from 'ajv'
import { valueAt } from './config-layers.js'

/**
 * The schema check's errors as sentences: each names the key, the value, what is allowed and the layer it came
 * from (`sources`: dotted key → file, variable or `command line`).
 */
export function describeErrors (errors: ErrorObject[], value: unknown, sources: Map<string, string>, schema: object): string[] {
  const seen = new Set<string>()
  const problems: string[] = []
  for (const error of errors) {
    // A union reports one error per branch; the branch errors say little, the union says what is allowed.
    if (error.keyword === 'anyOf' || error.keyword === 'const') {
      const parent = errors.find((e) => e.keyword === 'anyOf' && e.instancePath === error.instancePath)
      if (parent && error !== parent) continue
    }
    const path = error.instancePath.split('/').slice(1).map((part) => decodeURIComponent(part).replaceAll('~1', '/').replaceAll('~0', '~'))
    let key = path.join('.')
    let problem: string
    if (error.keyword === 'additionalProperties') {
      const extra = String(error.params.additionalProperty)
      key = [...path, extra].join('.')
      const allowed = Object.keys(schemaAt(schema, path)?.properties ?? {})
      problem = `${key} is not a known key; allowed keys here: ${allowed.join(', ')}`
    } else {
      const shown = JSON.stringify(valueAt(value, path))
      problem = `${key || '(top level)'} = ${shown} is not allowed: ${explain(error, schemaAt(schema, path))}`
    }
    if (seen.has(problem)) continue
    seen.add(problem)
    const source = sourceOf(path, sources)
    problems.push(source ? `${problem} (from ${source})` : problem)
  }
  return problems
}

/** Where the value at `path` (or the nearest mapping above it that a layer set whole) came from. */
export function sourceOf (path: string[], sources: Map<string, string>): string | undefined {
  for (let n = path.length; n > 0; n--) {
    const source = sources.get(path.slice(0, n).join('.'))
    if (source) return source
  }
  return undefined
}

function explain (error: ErrorObject, schema: any): string {
  if (error.keyword === 'anyOf' && schema) {
    const literals = literalsOf(schema)
    if (literals.length > 0) return `must be one of ${literals.map((l: unknown) => JSON.stringify(l)).join(', ')}`
    if (schema.description) return `must be ${schema.description}`
  }
  return `${error.message ?? 'invalid value'}`
}

// The allowed values of a union of literals, through nested unions.
function literalsOf (schema: any): unknown[] {
  if (schema.const !== undefined) return [schema.const]
  return (schema.anyOf ?? []).flatMap(literalsOf)
}

function schemaAt (root: object, path: string[]): any {
  let schema: any = root
  for (const part of path) {
    if (!schema) return undefined
    if (schema.properties?.[part]) schema = schema.properties[part]
    else if (schema.items && /^\d+$/.test(part)) schema = schema.items
    else if (schema.patternProperties) schema = Object.values(schema.patternProperties)[0]
    else if (typeof schema.additionalProperties === 'object') schema = schema.additionalProperties
    else return undefined
  }
  return schema
}
