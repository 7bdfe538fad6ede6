import fp from 'fastify-plugin'
import { OPENAI_SURFACE } from '../openai-api/error-shape.js'
import transcriptions from './transcriptions.js'

/**
 * Audio: OpenAI's `/v1/audio/transcriptions` (llama-server's `/audio/transcriptions` too) on models with an audio
 * projector. Errors in OpenAI's shape, as all of /v1 (the openai-api surface's), the llama-server path's too.
 */
export default fp(async (app) => {
  app.surfaces.register({ label: 'audio', paths: ['/v1/audio/*'] })
  app.surfaces.register({ ...OPENAI_SURFACE, label: 'audio', paths: ['/audio/transcriptions'] })
  await app.register(transcriptions)
}, { name: 'audio-api', dependencies: ['storage', 'upstreams', 'inference', 'openai-api'] })
