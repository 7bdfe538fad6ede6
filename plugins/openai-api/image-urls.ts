import { BadRequestError } from '../../core/errors.js'
import { imageBytesDataUrl, imageDataUrl } from '../../core/image-data.js'
import { requireVision } from '../storage/capabilities.js'
import type { ModelRecord } from '../storage/model-record.js'

const FETCH_TIMEOUT_MS = 15_000

export interface RemoteImages {
  /** Whether http(s) URLs may be fetched (config.yaml vision.allow_remote_images). */
  allow: boolean
  /** The most bytes one fetched image may have. */
  maxBytes: number
}

type Part = Record<string, unknown>
type Inline = (url: string) => Promise<string>

/**
 * The images of a request's messages (OpenAI chat's `image_url` parts, the Responses API's `input_image`,
 * Anthropic's `image` blocks; in `content`, at any depth) made ready for llama-server: base64 checked (an image
 * format llama.cpp decodes), http(s) URLs fetched and inlined when an admin allows it and refused otherwise
 * (llama-server would fetch a plain http URL itself: the server reaching whatever a client names), and a model
 * without a vision projector told so. Returns `messages` itself when it holds no image.
 * @throws BadRequestError
 */
export async function inlineImages<T> (record: ModelRecord, messages: T, remote: RemoteImages, signal: AbortSignal): Promise<T> {
  if (!hasImage(messages)) return messages
  requireVision(record)
  let count = 0
  const inline: Inline = (url) => imageUrl(url, `image ${count++}`, remote, signal)
  return walk(messages, inline) as Promise<T>
}

function imageKind (value: unknown): 'image_url' | 'input_image' | 'image' | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null
  const type = (value as Part).type
  return type === 'image_url' || type === 'input_image' || type === 'image' ? type : null
}

function hasImage (value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasImage)
  if (value === null || typeof value !== 'object') return false
  return imageKind(value) !== null || hasImage((value as Part).content)
}

async function walk (value: unknown, inline: Inline): Promise<unknown> {
  if (Array.isArray(value)) return Promise.all(value.map((v) => walk(v, inline)))
  if (value === null || typeof value !== 'object') return value
  const part = value as Part
  switch (imageKind(part)) {
    case 'image_url': {
      const given = part.image_url
      const url = typeof given === 'string' ? given : (given as Part | undefined)?.url
      return { ...part, image_url: { ...(given !== null && typeof given === 'object' ? given : {}), url: await inline(requireUrl(url)) } }
    }
    case 'input_image':
      return { ...part, image_url: await inline(requireUrl(part.image_url)) }
    case 'image': {
      const source = (part.source ?? {}) as Part
      const url = source.type === 'base64' ? `data:${String(source.media_type ?? 'image/jpeg')};base64,${String(source.data ?? '')}` : requireUrl(source.url)
      const dataUrl = await inline(url)
      const [, mediaType, data] = /^data:([^;]+);base64,(.*)$/s.exec(dataUrl)!
      return { ...part, source: { type: 'base64', media_type: mediaType, data } }
    }
    default:
      return 'content' in part ? { ...part, content: await walk(part.content, inline) } : part
  }
}

function requireUrl (url: unknown): string {
  if (typeof url !== 'string' || url === '') throw new BadRequestError('an image part has no url', 'invalid_image')
  return url
}

async function imageUrl (url: string, what: string, remote: RemoteImages, signal: AbortSignal): Promise<string> {
  if (/^data:/i.test(url)) return imageDataUrl(url, what)
  if (!/^https?:\/\//i.test(url)) throw new BadRequestError(`${what} must be a base64 data: URL (data:image/png;base64,...) or an http(s) URL`, 'invalid_image')
  if (!remote.allow) {
    throw new BadRequestError(`image URLs are not supported here: send ${what} as a base64 data URL (data:image/png;base64,...); an admin can allow http(s) image URLs with vision.allow_remote_images in config.yaml`, 'remote_images_not_allowed')
  }
  return imageBytesDataUrl(await fetchImage(url, what, remote.maxBytes, signal), what)
}

async function fetchImage (url: string, what: string, maxBytes: number, signal: AbortSignal): Promise<Buffer> {
  let response: Response
  try {
    response = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(FETCH_TIMEOUT_MS)]) })
  } catch (err) {
    if (signal.aborted) throw signal.reason
    throw new BadRequestError(`could not fetch ${what} (${url}): ${(err as Error).message}`, 'image_fetch_failed')
  }
  if (!response.ok || response.body === null) {
    await response.body?.cancel().catch(() => {})
    throw new BadRequestError(`could not fetch ${what} (${url}): it answered ${response.status}`, 'image_fetch_failed')
  }
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.length
    if (size > maxBytes) {
      await response.body.cancel().catch(() => {})
      throw new BadRequestError(`${what} (${url}) is larger than ${maxBytes} bytes`, 'image_too_large')
    }
    chunks.push(Buffer.from(chunk))
  }
  return Buffer.concat(chunks)
}
