import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { PACKAGE_ROOT } from './paths.js'

let cached: string | null = null

/** llamagate's version, from its package.json. */
export function version (): string {
  cached ??= (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version
  return cached
}

/**
 * The Ollama release whose API llamagate answers as, in `GET /api/version`'s `version`: Ollama's clients read that
 * field as the level of the API they talk to and gate on it (Codex `--oss` refuses anything below 0.13.4, where
 * Ollama's `/v1/responses` settled; decision clients ask for 0.35 before they call `/v1/systemone`). Ollama v0.35
 * serves decision models at `/v1/systemone`, which llamagate serves too, beside the native `/api` routes, OpenAI's
 * `/v1` with `/v1/responses` and Anthropic's `/v1/messages`. What releases up to it added that llamagate lacks
 * (image generation's fields of v0.14.3, audio transcription, `/api/push`) is listed in docs/api.md, so that a
 * client that gates on the number for those hears a clear error rather than a wrong answer.
 */
export const OLLAMA_API_VERSION = '0.35.0'
