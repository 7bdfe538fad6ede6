import { BadRequestError } from '../../core/errors.js'
import { imageDataUrl } from '../../core/image-data.js'
import { capabilities, requireVision } from '../storage/capabilities.js'
import type { ModelRecord } from '../storage/model-record.js'

/** Ollama's `format` ("json" or a JSON schema) as an OpenAI `response_format` for llama-server. */
export function responseFormat (format: unknown): Record<string, unknown> | undefined {
  if (format === undefined || format === null || format === '') return undefined
  if (format === 'json') return { type: 'json_object' }
  return { type: 'json_schema', json_schema: { name: 'format', schema: format } }
}

/**
 * Ollama's `think` as llama-server's request fields: off is `reasoning_effort: "none"` (the template renders
 * no reasoning, and none is parsed), an effort word goes to the template as is, on (or unset) leaves the
 * model's default. Reasoning comes back apart from the answer either way (`reasoning_content`).
 */
export function thinkFields (record: ModelRecord, think: boolean | 'low' | 'medium' | 'high' | undefined): Record<string, unknown> {
  if (think === false) return { reasoning_effort: 'none' }
  // As Ollama: asking a model that cannot think to think is the client's mistake, not a silent no-op.
  if (think !== undefined && !capabilities(record).includes('thinking')) throw new BadRequestError(`"${record.name}" does not support thinking`, 'thinking_not_supported')
  if (typeof think === 'string') return { reasoning_effort: think }
  return {}
}

/** An OpenAI content part carrying an image, as llama-server's multimodal chat path reads it. */
export interface ImagePart { type: 'image_url', image_url: { url: string } }

/**
 * Ollama's `images` (base64) as content parts for llama-server, which hands them to the model's vision
 * projector (mmproj). A model without one is told so, never answered as if the images were not there.
 * `where` names the message in errors. @throws BadRequestError
 */
export function imageParts (record: ModelRecord, images: string[] | undefined, where: string): ImagePart[] {
  if (images === undefined || images.length === 0) return []
  requireVision(record)
  return images.map((image, i) => ({ type: 'image_url', image_url: { url: imageDataUrl(image, `image ${i} of ${where}`) } }))
}


/** A message's text, with its images before it as content parts when it has any (llama-server places each where its part is). */
export function withImages (text: string, images: ImagePart[]): string | Array<ImagePart | { type: 'text', text: string }> {
  return images.length === 0 ? text : [...images, { type: 'text', text }]
}
