import fc from 'fast-check'
import { hostileKey, hostileValue, weighted } from './hostile-values.js'
import { objectOf, put, Raw } from './raw-json.js'

// Bodies of a schema, valid or almost valid, and the valid values of the fields the routes share.

/**
 * "Almost valid" objects of a schema: a valid object (each optional field there or not, the required ones
 * there), then, for `mutationRate` of them, a few mutations, each one field set to a hostile value, deleted, or
 * a new hostile key added. Objects nest (messages in a body, parts in a message), each with its own mutations:
 * a low rate keeps enough whole bodies valid to reach the route's code, not only its validation.
 */
export function almost (spec: Record<string, fc.Arbitrary<unknown>>, required: string[] = [], mutationRate = 0.2): fc.Arbitrary<Record<string, unknown>> {
  const keys = Object.keys(spec)
  const valid = fc.record(spec, { requiredKeys: required as never[] }) as fc.Arbitrary<Record<string, unknown>>
  const mutation = fc.oneof(
    weighted(6, fc.tuple(fc.constant('set' as const), fc.constantFrom(...keys), hostileValue)),
    weighted(1, fc.tuple(fc.constant('delete' as const), fc.constantFrom(...keys), fc.constant(null))),
    weighted(2, fc.tuple(fc.constant('set' as const), hostileKey, hostileValue)),
  )
  const mutated = Math.round(mutationRate * 100)
  const mutations = fc.oneof(weighted(100 - mutated, fc.constant([])), weighted(mutated, fc.array(mutation, { minLength: 1, maxLength: 3 })))
  return fc.tuple(valid, mutations).map(([object, changes]) => {
    const out = objectOf(Object.entries(object))
    for (const [what, key, value] of changes) {
      if (what === 'delete') delete out[key]
      else put(out, key, value)
    }
    return out
  })
}

/** Whether a generator makes valid objects only, or almost valid ones. */
export type Mode = 'valid' | 'almost'

/** An object of a schema: valid (`fc.record`), or almost valid (`almost`). */
export function obj (mode: Mode, spec: Record<string, fc.Arbitrary<unknown>>, required: string[] = [], mutationRate?: number): fc.Arbitrary<Record<string, unknown>> {
  if (mode === 'valid') return fc.record(spec, { requiredKeys: required as never[] }) as fc.Arbitrary<Record<string, unknown>>
  return almost(spec, required, mutationRate)
}

/** A copy of a body, Raw pieces and own `__proto__` keys kept. */
function copyOf (value: unknown): unknown {
  if (value instanceof Raw || value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map(copyOf)
  return objectOf(Object.entries(value).map(([k, v]) => [k, copyOf(v)]))
}

/**
 * A valid body with `value` put at any depth: in place of one of its fields or items (at the top, in a message,
 * in a part, in the options), or under a new key. `pick` chooses the object or array, and the field or item.
 */
export function anywhere (valid: fc.Arbitrary<unknown>, value: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.tuple(valid, fc.nat(), value, fc.option(hostileKey, { freq: 4 })).map(([body, pick, v, newKey]) => {
    const copy = copyOf(body)
    const containers: Array<Record<string, unknown> | unknown[]> = []
    const collect = (node: unknown): void => {
      if (node instanceof Raw || node === null || typeof node !== 'object') return
      containers.push(node as Record<string, unknown> | unknown[])
      for (const child of Object.values(node)) collect(child)
    }
    collect(copy)
    const node = containers[pick % Math.max(containers.length, 1)]
    if (node === undefined) return v
    if (Array.isArray(node)) {
      if (node.length === 0 || newKey !== null) node.push(v)
      else node[pick % node.length] = v
    } else {
      const keys = Object.keys(node)
      put(node, newKey ?? keys[pick % Math.max(keys.length, 1)] ?? 'x', v)
    }
    return copy
  })
}

// Valid values of the fields the routes share.

/** Mostly the tiny model, in the spellings the store takes; now and then one that is not there. */
export const modelName = fc.constantFrom('acme/tiny', 'acme/tiny', 'acme/tiny', 'acme/tiny', 'ACME/Tiny', 'acme/tiny:f16', 'acme/missing')
export const shortText = fc.string({ maxLength: 12 })
export const keepAlive = fc.constantFrom<unknown>('5m', 300, '1h', '10s', -1, '-1m', '1h30m')
/** Generation length: always small, so that a valid body answers in milliseconds. */
export const fewTokens = fc.integer({ min: 1, max: 3 })

/** The options object (core/config/options-schema.ts): sampling options in range; load-time ones at the defaults. */
export const optionsSpec: Record<string, fc.Arbitrary<unknown>> = {
  temperature: fc.double({ min: 0, max: 2, noNaN: true }),
  top_p: fc.double({ min: 0.01, max: 1, noNaN: true }),
  top_k: fc.integer({ min: 0, max: 100 }),
  max_tokens: fewTokens,
  num_predict: fewTokens,
  seed: fc.integer(),
  min_p: fc.double({ min: 0, max: 1, noNaN: true }),
  typical_p: fc.double({ min: 0, max: 1, noNaN: true }),
  repeat_penalty: fc.double({ min: 0, max: 2, noNaN: true }),
  repeat_last_n: fc.integer({ min: -1, max: 64 }),
  presence_penalty: fc.double({ min: -2, max: 2, noNaN: true }),
  frequency_penalty: fc.double({ min: -2, max: 2, noNaN: true }),
  stop: fc.oneof(shortText, fc.array(shortText, { maxLength: 3 })),
  num_keep: fc.integer({ min: -1, max: 8 }),
  ignore_eos: fc.boolean(),
  // The defaults of tinyApp: the same instance serves; a mutation may still try others.
  num_ctx: fc.constant(256),
  num_parallel: fc.constant(1),
  cache_type_k: fc.constant('f16'),
}
export const options = (mode: Mode): fc.Arbitrary<Record<string, unknown>> => obj(mode, optionsSpec)
