import { BadRequestError, RuntimeError } from '../../core/base/errors.js'

/** The Euclidean length of a vector. */
export function norm (vector: readonly number[]): number {
  let sum = 0
  for (const v of vector) sum += v * v
  return Math.sqrt(sum)
}

/**
 * The first `dimensions` values, scaled back to unit length when the whole vector was (Matryoshka embeddings,
 * as Ollama and OpenAI shorten them). @throws BadRequestError when the model's vectors are shorter than that
 */
export function shorten (vector: number[], dimensions: number | undefined, normalized: boolean): number[] {
  if (dimensions === undefined || dimensions === vector.length) return vector
  if (dimensions > vector.length) throw new BadRequestError(`dimensions ${dimensions} is more than the model's embedding length of ${vector.length}`, 'invalid_dimensions')
  const head = vector.slice(0, dimensions)
  if (!normalized) return head
  const length = norm(head)
  return length === 0 ? head : head.map((v) => v / length)
}

/**
 * Refuses `dimensions` the model cannot give before anything loads: its vectors are as wide as its embedding
 * length. @throws BadRequestError
 */
export function checkDimensions (dimensions: number | undefined, embeddingLength: number | null | undefined): void {
  if (dimensions !== undefined && embeddingLength && dimensions > embeddingLength) {
    throw new BadRequestError(`dimensions ${dimensions} is more than the model's embedding length of ${embeddingLength}`, 'invalid_dimensions')
  }
}

/** Refuses what a broken model makes: a NaN or an infinity is no embedding. @throws RuntimeError */
export function checkFinite (vectors: number[][], model: string): void {
  const bad = vectors.findIndex((v) => v.some((x) => !Number.isFinite(x)))
  if (bad !== -1) throw new RuntimeError(`model "${model}" produced an embedding with NaN or infinite values (input ${bad})`, [], 'invalid_embedding')
}

/** OpenAI's `encoding_format: "base64"`: the float32 values, little-endian, in base64. */
export function toBase64 (vector: number[]): string {
  const floats = new Float32Array(vector)
  return Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength).toString('base64')
}
