import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import { parse } from 'yaml'
import { PACKAGE_ROOT } from '../../core/base/paths.js'

type Json = Record<string, unknown>

/** Checks a value against one schema: null when it fits, else what does not (ajv's words, every error). */
export type SpecCheck = (value: unknown) => string | null

const SPECS = join(PACKAGE_ROOT, 'test', 'fixtures', 'specs')

// The documents as JSON Schema 2020-12 (OpenAPI 3.1's dialect): unknown keywords (OpenAPI's `discriminator`, the
// `x-` extensions) are not judged, formats neither (`unixtime`, `int64`: OpenAPI's hints, not constraints).
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false, validateSchema: false })
const loaded = new Set<string>()

function checkOf (validate: ValidateFunction): SpecCheck {
  return (value) => validate(value) ? null : ajv.errorsText(validate.errors, { separator: '; ', dataVar: '' })
}

function load (id: string, read: () => Json): void {
  if (loaded.has(id)) return
  ajv.addSchema({ ...read(), $id: id })
  loaded.add(id)
}

function compiled (ref: string): SpecCheck {
  const validate = ajv.getSchema(ref)
  if (validate === undefined) throw new Error(`no schema at ${ref}`)
  return checkOf(validate)
}

// A JSON pointer's piece (`/` and `~` escaped).
const piece = (s: string): string => s.replaceAll('~', '~0').replaceAll('/', '~1')

/**
 * OpenAPI 3.0's `nullable: true`, which OpenAI's 3.1 document still uses, as 3.1 says it: null is one more type (and
 * one more enum value), or, beside a `$ref` or a combinator, an `anyOf` with null.
 */
function nullableAsNull (node: unknown): unknown {
  if (Array.isArray(node)) return node.map(nullableAsNull)
  if (node === null || typeof node !== 'object') return node
  const { nullable, ...rest } = node as Json
  const out = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, nullableAsNull(v)])) as Json
  if (nullable !== true) return out
  if (typeof out.type === 'string') {
    out.type = [out.type, 'null']
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null]
    return out
  }
  return { anyOf: [out, { type: 'null' }] }
}

/** A response of an OpenAPI document: its schema for a status and content type, checked. */
function responseCheck (id: string, doc: Json, path: string, method: string, status: string, type: string): SpecCheck {
  const paths = doc.paths as Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>>
  if (paths[path]?.[method]?.responses[status]?.content?.[type] === undefined) throw new Error(`${id} says nothing of ${method} ${path} ${status} ${type}`)
  return compiled(`${id}#/paths/${piece(path)}/${method}/responses/${status}/content/${piece(type)}/schema`)
}

let openAiDoc: Json | null = null

/**
 * A text completion stream's chunk: the document gives streamed and whole completions one schema ("both ... share the
 * same shape"), whose `finish_reason` has no null, where every chunk but the last has one (OpenAI's own streams send
 * null until the finish): the same schema with null allowed there, and nothing else changed.
 */
function withCompletionChunk (doc: Json): Json {
  const schemas = (doc.components as { schemas: Record<string, Json> }).schemas
  const chunk = structuredClone(schemas.CreateCompletionResponse!) as { properties: { choices: { items: { properties: Json } } } }
  const choice = chunk.properties.choices.items.properties
  choice.finish_reason = { anyOf: [choice.finish_reason, { type: 'null' }] }
  schemas['x-llamagate-CompletionChunk'] = chunk
  return doc
}

/** OpenAI's OpenAPI document (the vendored subset, test/fixtures/specs/openai). */
export const openAiSpec = {
  doc (): Json {
    openAiDoc ??= withCompletionChunk(nullableAsNull(JSON.parse(readFileSync(join(SPECS, 'openai', 'openapi.subset.json'), 'utf8'))) as Json)
    load('openai.json', () => openAiDoc!)
    return openAiDoc
  },
  /** The response schema of an operation: `response('/chat/completions', 'post', '200', 'text/event-stream')`. */
  response (path: string, method: string, status: string, type = 'application/json'): SpecCheck {
    return responseCheck('openai.json', openAiSpec.doc(), path, method, status, type)
  },
  /** A chunk of a text completion stream (withCompletionChunk). */
  completionChunk (): SpecCheck {
    return openAiSpec.schema('x-llamagate-CompletionChunk')
  },
  /** A component schema by name. */
  schema (name: string): SpecCheck {
    openAiSpec.doc()
    return compiled(`openai.json#/components/schemas/${piece(name)}`)
  },
  /** The schema of a Responses stream event of `type`: the ResponseStreamEvent member that names it; null for none. */
  streamEvent (type: string): SpecCheck | null {
    const schemas = (openAiSpec.doc().components as { schemas: Record<string, Json> }).schemas
    for (const member of schemas.ResponseStreamEvent!.anyOf as Array<{ $ref: string }>) {
      const name = member.$ref.split('/').at(-1)!
      const named = (schemas[name]!.properties as Record<string, { enum?: unknown[], const?: unknown }> | undefined)?.type
      if (named?.const === type || named?.enum?.includes(type) === true) return openAiSpec.schema(name)
    }
    return null
  },
}

/** Anthropic's types as JSON Schema (test/fixtures/specs/anthropic/messages.schema.json): `anthropicSpec('Message')`. */
export function anthropicSpec (name: string): SpecCheck {
  load('anthropic.json', () => JSON.parse(readFileSync(join(SPECS, 'anthropic', 'messages.schema.json'), 'utf8')) as Json)
  return compiled(`anthropic.json#/$defs/${piece(name)}`)
}

let ollamaDoc: Json | null = null

/** Ollama's OpenAPI document (test/fixtures/specs/ollama/openapi.yaml). */
export const ollamaSpec = {
  doc (): Json {
    ollamaDoc ??= parse(readFileSync(join(SPECS, 'ollama', 'openapi.yaml'), 'utf8')) as Json
    load('ollama.json', () => ollamaDoc!)
    return ollamaDoc
  },
  response (path: string, method: string, status: string, type = 'application/json'): SpecCheck {
    return responseCheck('ollama.json', ollamaSpec.doc(), path, method, status, type)
  },
  schema (name: string): SpecCheck {
    ollamaSpec.doc()
    return compiled(`ollama.json#/components/schemas/${piece(name)}`)
  },
}
