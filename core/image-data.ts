import { BadRequestError } from './errors.js'

// The formats llama.cpp's image loader (stb_image in tools/mtmd) decodes, told by their first bytes.
const SIGNATURES: Array<{ mime: string, matches: (b: Buffer) => boolean }> = [
  { mime: 'image/png', matches: (b) => b.length > 8 && b.readUInt32BE(0) === 0x89504e47 },
  { mime: 'image/jpeg', matches: (b) => b.length > 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff },
  { mime: 'image/gif', matches: (b) => b.subarray(0, 4).toString('latin1') === 'GIF8' },
  { mime: 'image/bmp', matches: (b) => b.subarray(0, 2).toString('latin1') === 'BM' },
]
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
const DATA_URL = /^data:([\w.+-]*\/[\w.+-]*)?(;[^,]*)?;base64,/i

/**
 * An image as a base64 `data:` URL with the MIME type its bytes show, for llama-server's multimodal path.
 * Takes bare base64 (Ollama's `images`) or a data URL. `what` names it in errors ("image 1 of message 2").
 * @throws BadRequestError when it is not base64 or not an image format llama.cpp decodes
 */
export function imageDataUrl (data: string, what: string): string {
  const payload = data.replace(DATA_URL, '').replace(/\s+/g, '')
  if (payload === '' || payload.length % 4 === 1 || !BASE64.test(payload)) throw new BadRequestError(`${what} is not valid base64`, 'invalid_image')
  const bytes = Buffer.from(payload, 'base64')
  const format = SIGNATURES.find((s) => s.matches(bytes))
  if (!format) throw new BadRequestError(`${what} is not a PNG, JPEG, GIF or BMP image`, 'invalid_image')
  return `data:${format.mime};base64,${payload}`
}

/** The same check for bytes already in hand (a fetched remote image). */
export function imageBytesDataUrl (bytes: Buffer, what: string): string {
  return imageDataUrl(bytes.toString('base64'), what)
}
