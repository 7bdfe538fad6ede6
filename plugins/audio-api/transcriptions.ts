import multipart from '@fastify/multipart'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BadRequestError, GatewayError } from '../../core/base/errors.js'
import { audioDuration } from '../../core/base/audio-header.js'
import { audioOf, requireAudio } from '../inference/audio-parts.js'
import { chatTemplate } from '../inference/model-capabilities.js'
import { runParsedChat } from '../inference/parsed-chat-run.js'
import { requestRecord } from '../inference/request-record.js'
import { OPENAI_OPTIONS } from '../openai-api/openai-options.js'
import { asrPrompt } from './asr-prompt.js'
import { TranscriptionForm } from './schemas.js'
import { transcriptionShapes, type TranscriptionFormat } from './transcription-shapes.js'

const FORMATS: readonly string[] = ['json', 'text', 'verbose_json'] satisfies TranscriptionFormat[]

/**
 * OpenAI's `/v1/audio/transcriptions` (and llama-server's `/audio/transcriptions`) on models with an audio projector:
 * the form becomes the chat llama-server's own transcription route makes of it (asr-prompt.ts), with the audio as an
 * `input_audio` part, so that it is leased, queued, limited, counted and hooked as a chat is; its answer is made
 * OpenAI's transcription (transcription-shapes.ts). Multipart is parsed here only, the file within limits.body_size.
 */
const transcriptions: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(multipart, {
    attachFieldsToBody: 'keyValues',
    // One audio file and a few short fields: anything else in the form is refused before it is read.
    limits: { files: 1, fileSize: app.config.limits.bodySize, fields: 32, fieldSize: 1024 * 1024, parts: 40, headerPairs: 100 },
  })
  // A form that breaks multipart's rules or this route's limits is the client's mistake, told as such (the server's
  // handler, the parent of this one, gives it the surface's shape).
  app.setErrorHandler((err) => { throw formRefusal(err as { code?: unknown, message?: unknown }, app.config.limits.bodySize) ?? err })
  for (const path of ['/v1/audio/transcriptions', '/audio/transcriptions']) {
    app.post(path, { config: { scope: 'infer' }, schema: { body: TranscriptionForm } }, async (request, reply) => {
      const form = request.body
      if (!Buffer.isBuffer(form.file)) throw new BadRequestError('a transcription takes the audio as the "file" field of a multipart/form-data body', 'invalid_request')
      const format = form.response_format ?? 'json'
      if (format === 'srt' || format === 'vtt') throw new BadRequestError(`response_format "${format}" needs timestamps, which this model does not give: ask for json, text or verbose_json`, 'unsupported_response_format')
      if (!FORMATS.includes(format)) throw new BadRequestError(`response_format must be one of json, text, verbose_json; got ${JSON.stringify(format)}`, 'invalid_response_format')
      const granularities = [form['timestamp_granularities[]'] ?? []].flat()
      if (granularities.length > 0) throw new BadRequestError(`timestamp_granularities (${granularities.join(', ')}) need timestamps, which this model does not give: leave them out`, 'unsupported_timestamps')
      const record = requestRecord(app, form.model)
      requireAudio(record)
      const audio = audioOf(form.file, 'the file')
      const prompt = asrPrompt(chatTemplate(record), form.prompt, form.language)
      const userContent = [...(prompt.user !== '' ? [{ type: 'text', text: prompt.user }] : []), { type: 'input_audio', input_audio: audio }]
      const messages = [...(prompt.system !== '' ? [{ role: 'system', content: prompt.system }] : []), { role: 'user', content: userContent }]
      const body = {
        model: form.model,
        messages,
        stream: form.stream === 'true',
        ...(form.temperature !== undefined ? { temperature: Number(form.temperature) } : {}),
        ...(form.max_tokens !== undefined ? { max_tokens: Number(form.max_tokens) } : {}),
        ...(form.keep_alive !== undefined ? { keep_alive: form.keep_alive } : {}),
      }
      const facts = { format: format as TranscriptionFormat, language: form.language ?? null, duration: audioDuration(form.file, audio.format) }
      const answer = await runParsedChat(app.leases, request, reply, { body, topLevelOptions: OPENAI_OPTIONS, forced: null }, transcriptionShapes(facts))
      if (typeof answer === 'string') reply.type('text/plain; charset=utf-8')
      return answer
    })
  }
}

/** What a multipart parser's error (@fastify/multipart's, busboy's) means to the client; null: not one of them. */
function formRefusal (err: { code?: unknown, message?: unknown }, maxBytes: number): GatewayError | null {
  switch (err.code) {
    case 'FST_FILES_LIMIT': return new BadRequestError('a transcription takes one file, the "file" field: this form has more', 'invalid_request')
    case 'FST_REQ_FILE_TOO_LARGE': return new GatewayError(413, `the file is larger than ${maxBytes} bytes (limits.body_size)`, { code: 'file_too_large' })
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT': return new GatewayError(413, 'the form has more fields than a transcription takes (32)', { code: 'too_many_fields' })
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
    case 'FST_PROTO_VIOLATION': return new BadRequestError(`the multipart/form-data body is malformed: ${String(err.message)}`, 'invalid_request')
  }
  if (err.code === undefined && typeof err.message === 'string' && /^(Unexpected end of (form|file)|Part terminated early|Multipart: Boundary not found|Malformed part header|Malformed urlencoded form)/.test(err.message)) {
    return new BadRequestError(`the multipart/form-data body is malformed: ${err.message}`, 'invalid_request')
  }
  return null
}

export default transcriptions
