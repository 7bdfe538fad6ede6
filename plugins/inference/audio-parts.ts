import { BadRequestError } from '../../core/base/errors.js'
import { audioFormat, type AudioFormat } from '../../core/base/audio-header.js'
import type { ModelRecord } from '../storage/model-record.js'

/** An OpenAI content part carrying sound, as llama-server's multimodal chat path reads it: base64, never a URL. */
export interface AudioPart { type: 'input_audio', input_audio: { data: string, format: AudioFormat } }

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
const DATA_URL = /^data:([\w.+-]*\/[\w.+-]*)?(;[^,]*)?;base64,/i

/**
 * Audio a request sends (bare base64, or a base64 data URL) as llama-server's `input_audio` takes it, with its format
 * read from its bytes. `what` names it in errors. URLs are refused: llama-server fetches an http one itself (the
 * server reaching whatever a client names) and reads a `file://` one from its disk.
 * @throws BadRequestError when it is not base64 audio in a format llama.cpp decodes
 */
export function audioPart (data: unknown, what: string): AudioPart {
  if (typeof data !== 'string' || data === '') throw new BadRequestError(`${what} has no data: send the audio as base64`, 'invalid_audio')
  if (/^(https?|file):/i.test(data)) throw new BadRequestError(`${what} is a URL: audio is taken as base64 data only, never fetched`, 'invalid_audio')
  return { type: 'input_audio', input_audio: audioOf(Buffer.from(base64Payload(data, what), 'base64'), what) }
}

/** Audio bytes (an uploaded file) as `input_audio`'s base64 and format. @throws BadRequestError when no format llama.cpp decodes */
export function audioOf (bytes: Buffer, what: string): { data: string, format: AudioFormat } {
  const format = audioFormat(bytes)
  if (format === null) throw new BadRequestError(`${what} is not WAV, MP3 or FLAC audio`, 'invalid_audio')
  return { data: bytes.toString('base64'), format }
}

function base64Payload (data: string, what: string): string {
  const payload = data.replace(DATA_URL, '').replace(/\s+/g, '')
  if (payload === '' || payload.length % 4 === 1 || !BASE64.test(payload)) throw new BadRequestError(`${what} is not valid base64`, 'invalid_audio')
  return payload
}

/** @throws BadRequestError when the model has no audio projector (an upstream's: the upstream knows, and answers) */
export function requireAudio (record: ModelRecord): void {
  if (!record.projectorInputs.includes('audio') && record.upstream === undefined) {
    throw new BadRequestError(`model "${record.name}" does not support audio: it has no audio projector (mmproj); send text only, or use an audio model`, 'audio_not_supported')
  }
}
