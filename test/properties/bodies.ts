import fc from 'fast-check'
import { fewTokens, keepAlive, type Mode, modelName, obj, options, shortText } from './body-generators.js'
import type { Req } from './requests.js'

// The routes that read a body, and the bodies of the inference routes as generators: each takes a mode,
// 'valid' (bodies to put a hostile value anywhere in) or 'almost' (the right field names; now and then a field
// with a hostile value, a field missing, a key that is not the route's), after the route schemas
// (plugins/*/schemas.ts, plugins/*-api/*.ts).

/** Every route that reads a body, with its method; the blob route with a digest in its path. */
export const BODY_ROUTES: Array<{ method: Req['method'], url: string }> = [
  { method: 'POST', url: '/api/chat' },
  { method: 'POST', url: '/api/generate' },
  { method: 'POST', url: '/api/embed' },
  { method: 'POST', url: '/api/embeddings' },
  { method: 'POST', url: '/api/show' },
  { method: 'POST', url: '/api/copy' },
  { method: 'POST', url: '/api/create' },
  { method: 'POST', url: '/api/pull' },
  { method: 'DELETE', url: '/api/delete' },
  { method: 'POST', url: '/api/import' },
  { method: 'POST', url: '/api/stop' },
  { method: 'POST', url: `/api/blobs/sha256:${'0'.repeat(64)}` },
  { method: 'POST', url: '/v1/chat/completions' },
  { method: 'POST', url: '/v1/completions' },
  { method: 'POST', url: '/v1/responses' },
  { method: 'POST', url: '/v1/embeddings' },
  { method: 'POST', url: '/v1/rerank' },
  { method: 'POST', url: '/v1/reranking' },
  { method: 'POST', url: '/v1/messages' },
  { method: 'POST', url: '/v1/messages/count_tokens' },
]

/** The JSON routes: all but the blob upload, whose body is the file itself. */
export const JSON_ROUTES = BODY_ROUTES.filter((r) => !r.url.startsWith('/api/blobs/'))

/** Every field name the routes read, for bodies that use the right names with the wrong values. */
export const FIELD_NAMES = [
  'model', 'name', 'messages', 'prompt', 'system', 'raw', 'stream', 'options', 'format', 'tools', 'think', 'keep_alive',
  'images', 'input', 'truncate', 'dimensions', 'verbose', 'source', 'destination', 'from', 'files', 'parameters',
  'template', 'quantize', 'adapters', 'license', 'insecure', 'path', 'projector', 'stream_options', 'temperature',
  'top_p', 'max_tokens', 'seed', 'stop', 'presence_penalty', 'frequency_penalty', 'n', 'max_completion_tokens',
  'response_format', 'instructions', 'max_output_tokens', 'encoding_format', 'user', 'query', 'documents', 'top_n',
  'return_documents', 'top_k', 'stop_sequences', 'role', 'content', 'tool_calls', 'tool_call_id', 'tool_name',
]

const text1 = fc.string({ minLength: 1, maxLength: 12 })
const jsonSchema = fc.constantFrom<unknown>({ type: 'object' }, { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { type: 'string' })

// A top-level body is mutated half the time; the objects in it (messages, parts, options) more rarely.
const TOP = 0.5

export type Gen = (m: Mode) => fc.Arbitrary<Record<string, unknown>>

// --- native (/api)

const toolCall: Gen = (m) => obj(m, {
  function: obj(m, { name: text1, arguments: fc.oneof(fc.dictionary(shortText, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }), shortText) }, ['name', 'arguments']),
}, ['function'])
const nativeMessage: Gen = (m) => obj(m, {
  role: fc.constantFrom('system', 'user', 'assistant', 'tool'),
  content: shortText,
  images: fc.constant([]),
  tool_calls: fc.array(toolCall(m), { maxLength: 1 }),
  tool_name: shortText,
  tool_call_id: shortText,
})
const tool: Gen = (m) => obj(m, { type: fc.constant('function'), function: obj(m, { name: text1, parameters: jsonSchema }, ['name']) }, ['type', 'function'])
const format = fc.constantFrom<unknown>('json', '', { type: 'object' }, { type: 'object', properties: { a: { type: 'string' } } })

const chat: Gen = (m) => obj(m, {
  model: modelName,
  messages: fc.array(nativeMessage(m), { maxLength: 3 }),
  stream: fc.boolean(),
  options: options(m),
  format,
  tools: fc.array(tool(m), { maxLength: 1 }),
  think: fc.constant(false),
  keep_alive: keepAlive,
}, ['model', 'messages'], TOP)

const generate: Gen = (m) => obj(m, {
  model: modelName,
  prompt: shortText,
  system: shortText,
  raw: fc.boolean(),
  stream: fc.boolean(),
  options: options(m),
  format,
  think: fc.constant(false),
  keep_alive: keepAlive,
  images: fc.constant([]),
}, ['model', 'prompt'], TOP)

const embed: Gen = (m) => obj(m, {
  model: modelName,
  input: fc.oneof(shortText, fc.array(shortText, { maxLength: 3 })),
  truncate: fc.boolean(),
  dimensions: fc.integer({ min: 1, max: 64 }),
  options: options(m),
  keep_alive: keepAlive,
}, ['model', 'input'], TOP)

const legacyEmbeddings: Gen = (m) => obj(m, { model: modelName, prompt: shortText, options: options(m), keep_alive: keepAlive }, ['model', 'prompt'], TOP)
const show: Gen = (m) => obj(m, { model: modelName, name: modelName, verbose: fc.boolean() }, ['model'], TOP)
const stop: Gen = (m) => obj(m, { model: modelName }, ['model'], TOP)

// --- OpenAI (/v1)

const textPart: Gen = (m) => obj(m, { type: fc.constant('text'), text: shortText }, ['type', 'text'])
const openAiMessage: Gen = (m) => obj(m, {
  role: fc.constantFrom('system', 'user', 'assistant', 'developer'),
  content: fc.oneof(shortText, fc.array(textPart(m), { minLength: 1, maxLength: 2 })),
  name: text1,
}, ['content'])
const openAiCommon = (m: Mode): Record<string, fc.Arbitrary<unknown>> => ({
  model: modelName,
  stream: fc.boolean(),
  stream_options: fc.record({ include_usage: fc.boolean() }),
  temperature: fc.double({ min: 0, max: 2, noNaN: true }),
  top_p: fc.double({ min: 0.01, max: 1, noNaN: true }),
  max_tokens: fewTokens,
  seed: fc.integer(),
  stop: fc.oneof(shortText, fc.array(shortText, { maxLength: 3 })),
  presence_penalty: fc.double({ min: -2, max: 2, noNaN: true }),
  frequency_penalty: fc.double({ min: -2, max: 2, noNaN: true }),
  n: fc.constant(1),
  options: options(m),
  keep_alive: keepAlive,
})
const chatCompletion: Gen = (m) => obj(m, {
  ...openAiCommon(m),
  messages: fc.array(openAiMessage(m), { minLength: 1, maxLength: 3 }),
  max_completion_tokens: fewTokens,
  response_format: fc.record({ type: fc.constantFrom('text', 'json_object') }),
  tools: fc.array(tool(m), { maxLength: 1 }),
}, ['model', 'messages'], TOP)
const completion: Gen = (m) => obj(m, { ...openAiCommon(m), prompt: fc.oneof(shortText, fc.array(shortText, { minLength: 1, maxLength: 1 })) }, ['model', 'prompt'], TOP)
const responses: Gen = (m) => obj(m, {
  model: modelName,
  input: fc.oneof(text1, fc.array(obj(m, { role: fc.constantFrom('user', 'system', 'developer'), content: text1 }, ['role', 'content']), { minLength: 1, maxLength: 2 })),
  instructions: shortText,
  stream: fc.boolean(),
  temperature: fc.double({ min: 0, max: 2, noNaN: true }),
  top_p: fc.double({ min: 0.01, max: 1, noNaN: true }),
  max_output_tokens: fc.integer({ min: 1, max: 3 }),
  options: options(m),
  keep_alive: keepAlive,
}, ['model', 'input'], TOP)
const tokenIds = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 4 })
const openAiEmbeddings: Gen = (m) => obj(m, {
  model: modelName,
  input: fc.oneof(text1, fc.array(text1, { minLength: 1, maxLength: 3 }), tokenIds, fc.array(tokenIds, { minLength: 1, maxLength: 2 })),
  encoding_format: fc.constantFrom('float', 'base64'),
  dimensions: fc.integer({ min: 1, max: 64 }),
  user: shortText,
  truncate: fc.boolean(),
  options: options(m),
  keep_alive: keepAlive,
}, ['model', 'input'], TOP)
const rerank: Gen = (m) => obj(m, {
  model: fc.constantFrom('acme/rerank', 'acme/rerank', 'acme/rerank', 'acme/tiny', 'acme/missing'),
  query: text1,
  documents: fc.array(fc.oneof(shortText, obj(m, { text: shortText }, ['text'])), { minLength: 1, maxLength: 3 }),
  top_n: fc.integer({ min: 1, max: 4 }),
  return_documents: fc.boolean(),
  options: options(m),
  keep_alive: keepAlive,
}, ['model', 'query', 'documents'], TOP)

// --- Anthropic (/v1/messages)

const block: Gen = (m) => obj(m, { type: fc.constant('text'), text: text1 }, ['type', 'text'])
const anthropicContent = (m: Mode): fc.Arbitrary<unknown> => fc.oneof(text1, fc.array(block(m), { minLength: 1, maxLength: 2 }))
const anthropicCommon = (m: Mode): Record<string, fc.Arbitrary<unknown>> => ({
  model: modelName,
  messages: fc.array(obj(m, { role: fc.constantFrom('user', 'assistant'), content: anthropicContent(m) }, ['role', 'content']), { minLength: 1, maxLength: 3 }),
  system: anthropicContent(m),
  tools: fc.array(obj(m, { name: text1, description: shortText, input_schema: jsonSchema }, ['name']), { maxLength: 1 }),
  options: options(m),
  keep_alive: keepAlive,
})
const messages: Gen = (m) => obj(m, {
  ...anthropicCommon(m),
  max_tokens: fewTokens,
  stream: fc.boolean(),
  temperature: fc.double({ min: 0, max: 2, noNaN: true }),
  top_p: fc.double({ min: 0.01, max: 1, noNaN: true }),
  top_k: fc.integer({ min: 0, max: 50 }),
  stop_sequences: fc.array(text1, { maxLength: 2 }),
}, ['model', 'messages', 'max_tokens'], TOP)
const countTokens: Gen = (m) => obj(m, anthropicCommon(m), ['model', 'messages'], TOP)

/** Each inference route, its body generator, a seed of its own and its runs of almost valid bodies. */
export const CASES: Array<{ url: string, body: Gen, seed: number, numRuns: number }> = [
  { url: '/api/chat', body: chat, seed: 2001, numRuns: 60 },
  { url: '/api/generate', body: generate, seed: 2002, numRuns: 60 },
  { url: '/api/embed', body: embed, seed: 2003, numRuns: 50 },
  { url: '/api/embeddings', body: legacyEmbeddings, seed: 2004, numRuns: 40 },
  { url: '/api/show', body: show, seed: 2005, numRuns: 60 },
  { url: '/api/stop', body: stop, seed: 2006, numRuns: 20 },
  { url: '/v1/chat/completions', body: chatCompletion, seed: 2007, numRuns: 60 },
  { url: '/v1/completions', body: completion, seed: 2008, numRuns: 60 },
  { url: '/v1/responses', body: responses, seed: 2009, numRuns: 60 },
  { url: '/v1/embeddings', body: openAiEmbeddings, seed: 2010, numRuns: 50 },
  { url: '/v1/rerank', body: rerank, seed: 2011, numRuns: 40 },
  { url: '/v1/reranking', body: rerank, seed: 2012, numRuns: 20 },
  { url: '/v1/messages', body: messages, seed: 2013, numRuns: 60 },
  { url: '/v1/messages/count_tokens', body: countTokens, seed: 2014, numRuns: 50 },
]
