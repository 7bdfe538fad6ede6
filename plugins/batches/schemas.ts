import { Type } from 'typebox'

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) })

// A query string's values are text (the server coerces no type): a count is its digits.
const Count = Type.String({ pattern: '^[1-9][0-9]{0,4}$' })

/** A list's `limit` as a number, within `max`. */
export const limitOf = (text: string | undefined, fallback: number, max: number): number => Math.min(text === undefined ? fallback : Number(text), max)

/** The list pages of OpenAI's files and batches: `after` an id, `limit` up to 10,000 (files) or 100 (batches). */
export const FileListQuery = Type.Object({
  purpose: Type.Optional(Type.String({ maxLength: 64 })),
  limit: Type.Optional(Count),
  after: Type.Optional(Type.String({ maxLength: 200 })),
  order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])),
})

export const BatchListQuery = Type.Object({
  limit: Type.Optional(Count),
  after: Type.Optional(Type.String({ maxLength: 200 })),
})

/** The endpoints a batch may run (OpenAI's own, those served here). */
export const BATCH_ENDPOINTS = ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/responses'] as const

export const BatchCreateBody = Type.Object({
  input_file_id: Type.String({ minLength: 1, maxLength: 200 }),
  endpoint: Type.Union(BATCH_ENDPOINTS.map((e) => Type.Literal(e))),
  // OpenAI's is 24h; a shorter window (a duration: 90s, 30m, 2h) is this server's, up to a week.
  completion_window: Type.String({ pattern: '^[0-9]{1,6}(s|m|h)$' }),
  metadata: Type.Optional(Type.Union([Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 512 }), { maxProperties: 16 }), Type.Null()])),
})
