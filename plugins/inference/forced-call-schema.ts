type Json = Record<string, unknown>

/** A function a forced call may go to: its name and the JSON schema of its arguments. */
export interface CallableTool { name: string, parameters: Json }

/** A request whose tool choice forces a call: the tools it may call, and whether it may call several at once. */
export interface ForcedCall {
  tools: CallableTool[]
  /** `parallel_tool_calls` (OpenAI) or not `disable_parallel_tool_use` (Anthropic): one call or one or more. */
  parallel: boolean
}

// What a tool without a schema takes: any object.
const ANY_OBJECT: Json = { type: 'object' }

/**
 * The JSON schema llama-server's grammar holds the answer to when a call is forced: `{"name": <one of the tools>,
 * "arguments": <that tool's schema>}`, or a list of one or more of them when parallel calls are allowed. Name first:
 * llama.cpp's converter writes an object's required properties in the order they are listed, so a stream can tell
 * which tool is called before its arguments begin (forced-call-decoder.ts relies on it).
 *
 * llama-server builds this grammar eagerly (a response_format grammar is never lazy), where its own for
 * `tool_choice: "required"` lets any text come before the template's call marker: a model that does not open a call
 * writes prose to its token limit. The same shape for every chat template, as vLLM forces a call.
 */
export function forcedCallSchema (forced: ForcedCall): Json {
  const defs: Json = {}
  const calls = forced.tools.map((tool, i) => ({
    type: 'object',
    properties: { name: { const: tool.name }, arguments: argumentsSchema(tool.parameters, `tool${i}`, defs) },
    required: ['name', 'arguments'],
    additionalProperties: false,
  }))
  const call: Json = calls.length === 1 ? calls[0]! : { anyOf: calls }
  const root: Json = forced.parallel ? { type: 'array', items: call, minItems: 1 } : call
  return Object.keys(defs).length > 0 ? { ...root, $defs: defs } : root
}

/**
 * A tool's schema as it sits inside the call's: as it is, unless it refers to itself (`$ref`), whose references
 * llama.cpp resolves from the document's root. Then the schema moves to the root's `$defs` under its own key, its
 * own definitions beside it, and each reference is made to point there.
 */
function argumentsSchema (schema: Json | undefined, key: string, defs: Json): Json {
  if (schema === undefined || schema === null || typeof schema !== 'object' || Object.keys(schema).length === 0) return ANY_OBJECT
  if (!JSON.stringify(schema).includes('"$ref"')) return schema
  const { $defs, definitions, ...rest } = schema as Json & { $defs?: Json, definitions?: Json }
  const moved = (ref: string): string => {
    if (!ref.startsWith('#')) return ref
    const path = ref.slice(1)
    const own = /^\/(\$defs|definitions)\/([^/]+)(.*)$/.exec(path)
    return own !== null ? `#/$defs/${key}-${own[2]}${own[3]}` : `#/$defs/${key}${path}`
  }
  defs[key] = withRefs(rest, moved)
  for (const [name, def] of Object.entries({ ...definitions, ...$defs })) defs[`${key}-${name}`] = withRefs(def, moved)
  return { $ref: `#/$defs/${key}` }
}

function withRefs (value: unknown, moved: (ref: string) => string): unknown {
  if (Array.isArray(value)) return value.map((v) => withRefs(v, moved))
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' ? moved(v) : withRefs(v, moved)]))
}

/**
 * The chat request's fields that force a call: the tools stay (the template describes them to the model), the
 * template's own tool-call grammar is off (`tool_choice: "none"`), and the answer is held to `forcedCallSchema`.
 * Whatever response_format the request had gives way: the answer is the call.
 */
export function forcedCallFields (forced: ForcedCall): Json {
  return { tool_choice: 'none', response_format: { type: 'json_schema', json_schema: { name: 'tool_call', schema: forcedCallSchema(forced) } } }
}
