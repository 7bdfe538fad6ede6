import type { DecisionAsk, DecisionOption, DecisionQuestion, QuestionType } from './decision-questions.js'
import { NotSupportedError, RequestTooLargeError, UnprocessableError } from './decision-errors.js'

// llama.cpp's bounds: questions in one request, images with one, nesting of any field, content bytes.
export const MAX_QUESTIONS = 4096
const MAX_IMAGES = 8
const MAX_DEPTH = 32
export const MAX_CONTENT_BYTES = 8 * 1024 * 1024
const SCORE_LEVELS = { min: 2, max: 10 }

/** How many options a choice may have on a model: its single-token labels (52 letters, or up to 255 codes). */
/** What the model's type allows: its options, its nouls' order, and (d1) a null state, for images alone. */
export interface OptionLimit { maxOptions: number, noulTrueFirst: boolean, nullState?: boolean }

const TYPES: readonly QuestionType[] = ['choice', 'score', 'noul']

/**
 * A `/v1/systemone` body read as llama.cpp's server reads it, each rule with its status and words: 422 for a field
 * that breaks a rule, 413 for too much, 501 for images (this gateway reads decisions from text alone). The questions
 * keep the order they were sent in.
 * @throws UnprocessableError, RequestTooLargeError, NotSupportedError
 */
export function readSystemOne (body: Record<string, unknown>, limit: OptionLimit): DecisionAsk {
  if (!isObject(body.questions) || Object.keys(body.questions).length === 0) throw new UnprocessableError('"questions" must be a non-empty object')
  const entries = Object.entries(body.questions)
  if (entries.length > MAX_QUESTIONS) throw new RequestTooLargeError(`The request has ${entries.length} questions, the maximum is ${MAX_QUESTIONS}`)
  const questions = entries.map(([id, q]) => readQuestion(id, q, limit))
  if (body.state === undefined || (body.state === null && limit.nullState !== true)) throw new UnprocessableError('"state" must be provided')
  checkDepth('state', body.state)
  const images = readImages(body)
  let bytes = 0
  for (const q of questions) bytes += contentBytes(q.id) + contentBytes(q.instructions) + q.options.reduce((sum, o) => sum + contentBytes(o.key) + contentBytes(o.description), 0)
  bytes += contentBytes(body.state)
  if (bytes > MAX_CONTENT_BYTES) throw new RequestTooLargeError(`The request is ${bytes} bytes, over the ${MAX_CONTENT_BYTES} byte maximum. Give a shorter "state" or fewer questions`)
  if (images > 0) throw new NotSupportedError('This server does not support image input for decisions: llamagate reads decisions from text')
  return { state: body.state, questions }
}

function readQuestion (id: string, raw: unknown, limit: OptionLimit): DecisionQuestion {
  if (id.length === 0) throw new UnprocessableError('"questions" has an empty question id')
  const at = `questions.${id}: `
  if (!isObject(raw)) throw new UnprocessableError(`${at}must be an object`)
  const { instructions, criteria } = raw
  const filled = typeof instructions === 'string' ? instructions.length > 0
    : Array.isArray(instructions) ? instructions.length > 0
      : isObject(instructions) ? Object.keys(instructions).length > 0 : false
  if (!filled) throw new UnprocessableError(`${at}"instructions" must be a non-empty string, object, or array`)
  checkDepth(`questions.${id}.instructions`, instructions)
  checkDepth(`questions.${id}.criteria`, criteria)
  const type = raw.type
  if (typeof type !== 'string' || !TYPES.includes(type as QuestionType)) throw new UnprocessableError(`${at}"type" must be one of: ${TYPES.join(', ')}`)
  return { id, type: type as QuestionType, instructions, options: readOptions(at, type as QuestionType, criteria, limit) }
}

function readOptions (at: string, type: QuestionType, criteria: unknown, limit: OptionLimit): DecisionOption[] {
  switch (type) {
    case 'choice': {
      if (!isObject(criteria) || Object.keys(criteria).length === 0) throw new UnprocessableError(`${at}"criteria" must be a non-empty object`)
      const options = Object.entries(criteria).map(([key, description]) => ({ key, description: description ?? null }))
      if (options.length > limit.maxOptions) throw new UnprocessableError(`${at}"criteria" has ${options.length} options, at most ${limit.maxOptions} are supported`)
      return options
    }
    case 'score': {
      if (!Array.isArray(criteria) || criteria.length < SCORE_LEVELS.min || criteria.length > SCORE_LEVELS.max) {
        throw new UnprocessableError(`${at}"criteria" must be an array of ${SCORE_LEVELS.min} to ${SCORE_LEVELS.max} levels`)
      }
      return criteria.map((description: unknown, i) => ({ key: String(i), description: description ?? null }))
    }
    case 'noul': {
      if (criteria !== undefined && criteria !== null && !isObject(criteria)) throw new UnprocessableError(`${at}"criteria" must be an object`)
      const said = (criteria ?? {}) as Record<string, unknown>
      const option = (key: 'true' | 'false'): DecisionOption => ({ key, description: Object.prototype.hasOwnProperty.call(said, key) ? said[key] ?? null : null })
      return limit.noulTrueFirst ? [option('true'), option('false')] : [option('false'), option('true')]
    }
  }
}

/** The images sent with the state (`images`, or its alias `files`, and `image_url` parts of chat messages). */
function readImages (body: Record<string, unknown>): number {
  const videos = body.videos
  if (videos !== undefined && videos !== null && !(Array.isArray(videos) && videos.length === 0)) throw new UnprocessableError('"videos" is not supported')
  const images = body.images ?? body.files
  if (images === undefined || images === null) return imageParts(body.state)
  if (!Array.isArray(images)) throw new UnprocessableError('"images" must be an array')
  for (const image of images) {
    if (typeof image !== 'string' || !image.startsWith('data:image/')) throw new UnprocessableError('"images" must hold data URLs (data:image/...;base64,...)')
  }
  const count = images.length + imageParts(body.state)
  if (count > MAX_IMAGES) throw new UnprocessableError(`"images" holds ${count}, the maximum is ${MAX_IMAGES}`)
  return count
}

/** The `image_url` and `input_audio` parts of a chat state's messages. */
function imageParts (state: unknown): number {
  const messages = Array.isArray(state) ? state : isObject(state) && Array.isArray(state.messages) ? state.messages : []
  let n = 0
  for (const m of messages) {
    if (isObject(m) && Array.isArray(m.content)) for (const part of m.content) if (isObject(part) && (part.type === 'image_url' || part.type === 'input_audio')) n++
  }
  return n
}

/** @throws UnprocessableError past MAX_DEPTH levels of arrays and objects */
function checkDepth (field: string, value: unknown): void {
  const deeper = (v: unknown, depth: number): boolean => {
    if (depth > MAX_DEPTH) return true
    if (Array.isArray(v)) return v.some((x) => deeper(x, depth + 1))
    if (isObject(v)) return Object.values(v).some((x) => deeper(x, depth + 1))
    return false
  }
  if (deeper(value, 0)) throw new UnprocessableError(`"${field}" is nested too deeply`)
}

/** The bytes of a value's strings and keys, as llama.cpp counts a request's content. */
function contentBytes (value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value)
  if (Array.isArray(value)) return value.reduce((sum: number, x) => sum + contentBytes(x), 0)
  if (isObject(value)) return Object.entries(value).reduce((sum, [k, v]) => sum + Buffer.byteLength(k) + contentBytes(v), 0)
  return 0
}

export function isObject (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
