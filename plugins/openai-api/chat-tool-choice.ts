import { BadRequestError } from '../../core/base/errors.js'
import type { CallableTool, ForcedCall } from '../inference/forced-call-schema.js'

type Json = Record<string, unknown>

/** The chat request's fields a tool choice reads. */
export interface ChatToolFields {
  tools?: Array<{ type: string, function: { name: string, parameters?: unknown } }>
  tool_choice?: unknown
  parallel_tool_calls?: boolean | null
}

/** What a chat request's tool choice means here: the call it forces (or null), and the tool choice llama-server gets. */
export interface ChatToolChoice {
  forced: ForcedCall | null
  /** The request's fields with tool_choice as llama-server reads it (a string: it takes any object for "auto"). */
  fields: ChatToolFields
}

/**
 * OpenAI's `tool_choice` on chat completions: `"required"`, a named function (`{"type":"function","function":
 * {"name"}}`) and `allowed_tools` in `required` mode force a call, to any tool, the named one, or one of those
 * allowed; `allowed_tools` in `auto` mode offers those alone. `parallel_tool_calls` (default true, as OpenAI) lets
 * a forced answer hold several calls; a named function is called once.
 * @throws BadRequestError for a tool choice naming a function the request does not offer
 */
export function chatToolChoice (body: ChatToolFields): ChatToolChoice {
  const tools = body.tools ?? []
  const choice = body.tool_choice as Json | string | undefined | null
  const parallel = body.parallel_tool_calls !== false
  if (tools.length === 0 || choice === undefined || choice === null || choice === 'auto' || choice === 'none') return { forced: null, fields: body }
  if (choice === 'required') return { forced: { tools: tools.map(callable), parallel }, fields: body }
  if (typeof choice === 'object' && choice.type === 'function') {
    const name = (choice.function as Json | undefined)?.name
    const tool = tools.find((t) => t.function.name === name)
    if (tool === undefined) throw new BadRequestError(`tool_choice names function ${JSON.stringify(name)}, which is not among the request's tools`, 'invalid_tool_choice')
    return { forced: { tools: [callable(tool)], parallel: false }, fields: body }
  }
  if (typeof choice === 'object' && choice.type === 'allowed_tools') {
    const allowed = (choice.allowed_tools ?? {}) as Json
    const names = new Set(Array.isArray(allowed.tools) ? (allowed.tools as Json[]).map((t) => (t.function as Json | undefined)?.name ?? t.name) : [])
    const offered = tools.filter((t) => names.has(t.function.name))
    if (offered.length === 0) throw new BadRequestError('tool_choice allows none of the request\'s tools', 'invalid_tool_choice')
    if (allowed.mode === 'required') return { forced: { tools: offered.map(callable), parallel }, fields: { ...body, tools: offered } }
    return { forced: null, fields: { ...body, tools: offered, tool_choice: 'auto' } }
  }
  // Anything else is llama-server's to judge, as before (a string it does not know is its 400).
  return { forced: null, fields: body }
}

function callable (tool: NonNullable<ChatToolFields['tools']>[number]): CallableTool {
  const parameters = tool.function.parameters
  return { name: tool.function.name, parameters: parameters !== null && typeof parameters === 'object' ? parameters as Json : { type: 'object' } }
}
