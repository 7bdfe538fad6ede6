import { BadRequestError } from '../../core/base/errors.js'
import type { ModelRecord } from '../storage/model-record.js'
import { audioFormat } from '../../core/base/audio-header.js'
import { audioPart, requireAudio, type AudioPart } from './audio-parts.js'
import { fetchRemote } from './remote-image-fetch.js'

/** Image fetches under way at once, for the whole server: 60 URLs in one request were fetched all at once (RSS 1.8 GB). */
const FETCHES_AT_ONCE = 4

// The formats llama.cpp's image loader (stb_image in tools/mtmd) decodes, told by their first bytes.
const SIGNATURES: Array<{ mime: string, matches: (b: Buffer) => boolean }> = [
  { mime: 'image/png', matches: (b) => b.length > 8 && b.readUInt32BE(0) === 0x89504e47 },
  { mime: 'image/jpeg', matches: (b) => b.length > 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff },
  { mime: 'image/gif', matches: (b) => b.subarray(0, 4).toString('latin1') === 'GIF8' },
  { mime: 'image/bmp', matches: (b) => b.subarray(0, 2).toString('latin1') === 'BM' },
]
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
const DATA_URL = /^data:([\w.+-]*\/[\w.+-]*)?(;[^,]*)?;base64,/i

export interface RemoteImages {
  /** Whether http(s) URLs may be fetched (config.yaml vision.allow_remote_images). */
  allow: boolean
  /** Whether they may be on loopback or private addresses (vision.allow_private_image_hosts). @default false */
  allowPrivate?: boolean
  /** The most image URLs one request may carry (vision.max_remote_images). */
  maxCount: number
  /** The most bytes the images fetched for one request may have together (vision.max_remote_image_bytes). */
  maxBytes: number
}

/** An OpenAI content part carrying an image, as llama-server's multimodal chat path reads it. */
export interface ImagePart { type: 'image_url', image_url: { url: string } }

type Part = Record<string, unknown>
type Inline = (url: string) => Promise<string>

/**
 * A request's images made ready for llama-server, whichever surface brought them: base64 checked (an image format
 * llama.cpp decodes), http(s) URLs fetched and inlined when an admin allows it and refused otherwise (llama-server
 * would fetch a plain http URL itself: the server reaching whatever a client names), and a model without a vision
 * projector told so, never answered as if the images were not there.
 */
export class RequestImages {
  private fetching = 0
  private readonly waiting: Array<() => void> = []

  constructor (private readonly remote: RemoteImages) {}

  /**
   * The images of messages (OpenAI chat's `image_url` parts, the Responses API's `input_image`, Anthropic's `image`
   * blocks; in `content`, at any depth), inlined as data URLs. Returns `messages` itself when it holds no image.
   * `gone`: a signal aborted when the client goes, asked for only when there are images to fetch. @throws BadRequestError
   */
  inline<T> (record: ModelRecord, messages: T, gone: () => AbortSignal): T | Promise<T> {
    // Most requests carry no image: they cost no promise and no signal.
    if (!hasMedia(messages)) return messages
    return this.inlineImages(record, messages, gone())
  }

  private async inlineImages<T> (record: ModelRecord, messages: T, signal: AbortSignal): Promise<T> {
    if (hasMedia(messages, 'image')) requireVision(record)
    if (hasMedia(messages, 'audio')) requireAudio(record)
    // Counted before any is fetched: a request over the limit costs nothing.
    const remote = countRemote(messages)
    if (remote > this.remote.maxCount && this.remote.allow) {
      throw new BadRequestError(`this request has ${remote} image URLs: at most ${this.remote.maxCount} are fetched for one request (vision.max_remote_images); send the others as base64 data URLs`, 'too_many_images')
    }
    let count = 0
    const budget = { left: this.remote.maxBytes }
    const inline: Inline = (url) => this.dataUrl(url, `image ${count++}`, budget, signal)
    return walk(messages, inline) as Promise<T>
  }

  /**
   * Ollama's `images` (base64) as content parts: pictures, and, as Ollama takes them in the same field for a model
   * that hears, WAV, MP3 or FLAC audio. `where` names the message in errors. @throws BadRequestError
   */
  parts (record: ModelRecord, images: string[] | undefined, where: string): Array<ImagePart | AudioPart> {
    if (images === undefined || images.length === 0) return []
    return images.map((image, i) => {
      const what = `image ${i} of ${where}`
      if (isAudio(image)) {
        requireAudio(record)
        return audioPart(image, what)
      }
      requireVision(record)
      return { type: 'image_url', image_url: { url: imageDataUrl(image, what) } }
    })
  }

  private async dataUrl (url: string, what: string, budget: { left: number }, signal: AbortSignal): Promise<string> {
    if (/^data:/i.test(url)) return imageDataUrl(url, what)
    if (!/^https?:\/\//i.test(url)) throw new BadRequestError(`${what} must be a base64 data: URL (data:image/png;base64,...) or an http(s) URL`, 'invalid_image')
    if (!this.remote.allow) {
      throw new BadRequestError(`image URLs are not supported here: send ${what} as a base64 data URL (data:image/png;base64,...); an admin can allow http(s) image URLs with vision.allow_remote_images in config.yaml`, 'remote_images_not_allowed')
    }
    await this.turn()
    try {
      return imageDataUrl((await fetchImage(url, what, this.remote.allowPrivate === true, budget, this.remote.maxBytes, signal)).toString('base64'), what)
    } finally {
      // The turn passes straight to the next in line, so that no caller arriving meanwhile takes it too.
      const next = this.waiting.shift()
      if (next !== undefined) next()
      else this.fetching--
    }
  }

  /** Waits for one of the server's FETCHES_AT_ONCE turns. */
  private async turn (): Promise<void> {
    if (this.fetching < FETCHES_AT_ONCE) { this.fetching++; return }
    await new Promise<void>((resolve) => this.waiting.push(resolve))
  }
}

/** A message's text, with its images before it as content parts when it has any (llama-server places each where its part is). */
export function withImages (text: string, images: Array<ImagePart | AudioPart>): string | Array<ImagePart | AudioPart | { type: 'text', text: string }> {
  return images.length === 0 ? text : [...images, { type: 'text', text }]
}

/** @throws BadRequestError when the model has no vision projector (an upstream's: the upstream knows, and answers) */
function requireVision (record: ModelRecord): void {
  if (record.projector === null && record.upstream === undefined) {
    throw new BadRequestError(`model "${record.name}" does not support images: it has no vision projector (mmproj); send text only, or use a vision model`, 'images_not_supported')
  }
}

/**
 * An image as a base64 `data:` URL with the MIME type its bytes show. Takes bare base64 (Ollama's `images`) or a
 * data URL. `what` names it in errors ("image 1 of message 2").
 * @throws BadRequestError when it is not base64 or not an image format llama.cpp decodes
 */
function imageDataUrl (data: string, what: string): string {
  const payload = data.replace(DATA_URL, '').replace(/\s+/g, '')
  if (payload === '' || payload.length % 4 === 1 || !BASE64.test(payload)) throw new BadRequestError(`${what} is not valid base64`, 'invalid_image')
  const bytes = Buffer.from(payload, 'base64')
  const format = SIGNATURES.find((s) => s.matches(bytes))
  if (!format) throw new BadRequestError(`${what} is not a PNG, JPEG, GIF or BMP image`, 'invalid_image')
  return `data:${format.mime};base64,${payload}`
}

function imageKind (value: unknown): 'image_url' | 'input_image' | 'image' | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null
  const type = (value as Part).type
  return type === 'image_url' || type === 'input_image' || type === 'image' ? type : null
}

/** Whether `value` holds an image or audio part (`only`: of that one), where walk() finds them. */
function hasMedia (value: unknown, only?: 'image' | 'audio'): boolean {
  if (Array.isArray(value)) return value.some((v) => hasMedia(v, only))
  if (value === null || typeof value !== 'object') return false
  const audio = (value as Part).type === 'input_audio'
  const image = imageKind(value) !== null
  return (only === undefined ? audio || image : only === 'audio' ? audio : image) || hasMedia((value as Part).content, only)
}

/** Whether a base64 entry of Ollama's `images` holds audio: its first bytes are enough. */
function isAudio (data: string): boolean {
  const head = data.replace(DATA_URL, '').replace(/\s+/g, '').slice(0, 16)
  return audioFormat(Buffer.from(head.slice(0, head.length - (head.length % 4)), 'base64')) !== null
}

/** How many http(s) image URLs `value` holds, found where walk() finds images. */
function countRemote (value: unknown): number {
  if (Array.isArray(value)) return value.reduce((sum: number, v) => sum + countRemote(v), 0)
  if (value === null || typeof value !== 'object') return 0
  const part = value as Part
  const kind = imageKind(part)
  if (kind === null) return countRemote(part.content)
  const url = givenUrl(part, kind)
  return typeof url === 'string' && /^https?:\/\//i.test(url) ? 1 : 0
}

/** The URL an image part names, as sent (unchecked): each surface puts it elsewhere. */
function givenUrl (part: Part, kind: 'image_url' | 'input_image' | 'image'): unknown {
  if (kind === 'image') return ((part.source ?? {}) as Part).url
  const given = part.image_url
  return given !== null && typeof given === 'object' ? (given as Part).url : given
}

async function walk (value: unknown, inline: Inline): Promise<unknown> {
  if (Array.isArray(value)) return Promise.all(value.map((v) => walk(v, inline)))
  if (value === null || typeof value !== 'object') return value
  const part = value as Part
  switch (imageKind(part)) {
    case 'image_url': {
      const given = part.image_url
      return { ...part, image_url: { ...(given !== null && typeof given === 'object' ? given : {}), url: await inline(requireUrl(givenUrl(part, 'image_url'))) } }
    }
    case 'input_image':
      return { ...part, image_url: await inline(requireUrl(givenUrl(part, 'input_image'))) }
    case 'image': {
      const source = (part.source ?? {}) as Part
      const url = source.type === 'base64' ? `data:${String(source.media_type ?? 'image/jpeg')};base64,${String(source.data ?? '')}` : requireUrl(givenUrl(part, 'image'))
      const dataUrl = await inline(url)
      const [, mediaType, data] = /^data:([^;]+);base64,(.*)$/s.exec(dataUrl)!
      return { ...part, source: { type: 'base64', media_type: mediaType, data } }
    }
    default:
      if (part.type === 'input_audio') return { ...part, ...audioPart(((part.input_audio ?? {}) as Part).data, 'an input_audio part') }
      return 'content' in part ? { ...part, content: await walk(part.content, inline) } : part
  }
}

function requireUrl (url: unknown): string {
  if (typeof url !== 'string' || url === '') throw new BadRequestError('an image part has no url', 'invalid_image')
  return url
}

async function fetchImage (url: string, what: string, allowPrivate: boolean, budget: { left: number }, maxBytes: number, signal: AbortSignal): Promise<Buffer> {
  const response = await fetchRemote(url, what, allowPrivate, signal)
  if (!response.ok || response.body === null) {
    await response.body?.cancel().catch(() => {})
    throw new BadRequestError(`could not fetch ${what} (${url}): it answered ${response.status}`, 'image_fetch_failed')
  }
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.length
    budget.left -= chunk.length
    if (budget.left < 0) {
      await response.body.cancel().catch(() => {})
      throw new BadRequestError(size > maxBytes ? `${what} (${url}) is larger than ${maxBytes} bytes` : `the images fetched for this request pass ${maxBytes} bytes together (vision.max_remote_image_bytes)`, 'image_too_large')
    }
    chunks.push(Buffer.from(chunk))
  }
  return Buffer.concat(chunks)
}
