// Claude Code opens its system prompt with a billing line for Anthropic's servers, e.g.
//   x-anthropic-billing-header: cc_version=2.1.331.c8e; cc_entrypoint=sdk-cli; cch=97bd6;
// as a text block of its own (CLAUDE_CODE_ATTRIBUTION_HEADER=0 turns it off). `.c8e` is a digest of the
// conversation's first user message and `cch` (its native build's attestation) changes on every request: the very
// first tokens of the prompt differ from one conversation, or one request, to the next, so a prompt cache reuses
// nothing of the system prompt and tools behind them. It tells the model nothing: it goes.

// The name, then `key=value;` fields (more may come: cc_workload), then the newline if one ends it. Fields only, so
// that a system prompt glued on after the last `;` (blocks joined without a separator) stays.
const HEADER = /^x-anthropic-billing-header:(?:[ \t]*[A-Za-z_][\w.-]*=[^;\n]*;)*[ \t]*(?:\r?\n)?/

/** `text` without Claude Code's attribution line at its start; unchanged when it has none. Only that line: ''. */
export function withoutAttributionHeader (text: string): string {
  return text.startsWith('x-anthropic-billing-header:') ? text.replace(HEADER, '') : text
}

type Part = { type?: unknown, text?: unknown }

/**
 * A message's or system prompt's content (a string, or parts with `type: "text"` blocks among them) without the
 * attribution line at the start of its texts: the same value when none has one, null when nothing is left.
 */
export function contentWithoutAttribution<C> (content: C): C | null {
  if (typeof content === 'string') {
    const text = withoutAttributionHeader(content)
    return text === content ? content : text === '' ? null : text as C
  }
  if (!Array.isArray(content)) return content
  const parts = content as Part[]
  const changes = (p: Part): p is Part & { text: string } => p.type === 'text' && typeof p.text === 'string' && withoutAttributionHeader(p.text) !== p.text
  if (!parts.some(changes)) return content
  const kept = parts.flatMap((p) => {
    if (!changes(p)) return [p]
    const text = withoutAttributionHeader(p.text)
    return text === '' ? [] : [{ ...p, text }]
  })
  return kept.length === 0 ? null : kept as C
}
