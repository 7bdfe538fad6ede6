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
 * Ollama's `/v1/responses` settled). Ollama v0.14.0 (2026-01-13) is the release whose route table is the one
 * llamagate serves: the native `/api` routes, OpenAI's `/v1` with `/v1/responses` (new in v0.13.3) and Anthropic's
 * `/v1/messages` (new in v0.14.0, what Claude Code through Ollama needs). Not later: v0.14.3 added image-generation
 * fields to `/api/generate`, which llamagate does not have. Fields of earlier releases still missing here (`template`,
 * `/api/push`) are listed in docs/api.md. Raise it only when llamagate serves what the newer release added.
 */
export const OLLAMA_API_VERSION = '0.14.0'
