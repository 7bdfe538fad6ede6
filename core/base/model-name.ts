import { Type, type TProperties } from 'typebox'
import { InvalidModelNameError } from './errors.js'

/** A parsed `<owner>/<name>[:tag]`. */
export interface ModelName {
  owner: string
  name: string
  /** The GGUF quantization or file name after `:`, if any (`Q4_K_M`, `foo.Q8_0.gguf`). */
  tag: string | null
  /** `<owner>/<name>`: the repository, and the key of the local model. */
  id: string
}

const PART = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,95}$/
// A tag selects a quant label or a file name; it never holds a path separator.
const TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}$/

/**
 * Checks a model name before anything touches the disk or the network (contract: Names). Each part is
 * 1-96 characters of `A-Z a-z 0-9 . _ -`, not starting with `.` or `-`, never containing `..`; so no
 * name can be a path that climbs out of the models folder.
 * @throws InvalidModelNameError
 */
export function parseModelName (text: unknown): ModelName {
  const parsed = readModelName(text)
  if (parsed === null) throw new InvalidModelNameError(String(text))
  return parsed
}

/** `parseModelName`, or null for a name that is not one: for lookups where such a name is common (an upstream's `back/owner/name`). */
export function readModelName (text: unknown): ModelName | null {
  if (typeof text !== 'string') return null
  const colon = text.indexOf(':')
  const repo = colon === -1 ? text : text.slice(0, colon)
  const tag = colon === -1 ? null : text.slice(colon + 1)
  const parts = repo.split('/')
  if (parts.length !== 2) return null
  const [owner, name] = parts as [string, string]
  for (const part of [owner, name]) {
    if (!PART.test(part) || part.includes('..')) return null
  }
  if (tag !== null && (!TAG.test(tag) || tag.includes('..'))) return null
  return { owner, name, tag, id: `${owner}/${name}` }
}

/**
 * The model a native request names: `model`, or `name`, which Ollama's server reads too and its clients still
 * send for some calls (ollama-js's delete and pull). The body schema makes sure one of them is there.
 */
export function requestedModel (body: { model?: string, name?: string }): string {
  return body.model ?? body.name ?? ''
}

/** The model a body of any shape names (`model`, else `name`), for logs and metrics; undefined when none is a string. */
export function modelNamedIn (body: unknown): string | undefined {
  const b = body as { model?: unknown, name?: unknown } | null | undefined
  const name = typeof b === 'object' && b !== null ? b.model ?? b.name : undefined
  return typeof name === 'string' ? name : undefined
}

/**
 * A body schema naming one model by `model` or by `name` (either required), with the route's other fields.
 * Pair with `requestedModel()`.
 */
export function ModelOrName<P extends TProperties> (properties: P) {
  return Type.Object({
    model: Type.Optional(Type.String({ minLength: 1 })),
    name: Type.Optional(Type.String({ minLength: 1 })),
    ...properties,
  }, { anyOf: [{ required: ['model'] }, { required: ['name'] }] })
}
