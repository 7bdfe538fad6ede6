// What a Markdown page about the plugin API names of it: the code a plugin's author would copy or look up.

/** One name the page mentions, with the line it is on (1-based). */
export interface Mention {
  /** `app.store.list`, `request.grant`, `KeyLine`, `definePlugin`. */
  text: string
  line: number
}

export interface DocMentions {
  /** Member chains on the app or a request (`app.leases.addBackend`): a plugin's app must have each link. */
  chains: Mention[]
  /** Names imported from `llamagate/plugin` or `llamagate/testing` in the page's code. */
  imports: Mention[]
  /** Names a code span gives on their own, or calls: `KeyLine`, `grantLease`, `definePlugin(...)`. */
  names: Mention[]
}

const FENCE = /^```[^\n]*\n([\s\S]*?)^```/gm
const SPAN = /`([^`\n]+)`/g
// `app.x.y` or `request.x`, not preceded by a name or a dot (`ctx.app.x` is another object).
const CHAIN = /(?<![\w$.])(?:app|request)(?:\.[A-Za-z_$][\w$]*)+/g
const IMPORT = /import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'llamagate\/(?:plugin|testing)'/g
// A span that is a name, or starts with a call of one.
const NAMED = /^([A-Za-z_$][\w$]*)(?:\(.*\))?$/
// Names that look like an API's: PascalCase, camelCase with a capital inside, CONSTANT_CASE.
const API_LIKE = /^(?:[A-Z][\w$]*|[a-z][a-z0-9]*[A-Z][\w$]*)$/
// The gateway's environment variables (README's table), not names of code.
const ENV_VARIABLE = /^LLAMAGATE_[A-Z0-9_]+$/

function lineAt (text: string, index: number): number {
  let line = 1
  for (let i = 0; i < index; i++) if (text.charCodeAt(i) === 10) line++
  return line
}

/** The API-like names a Markdown page mentions in its code blocks and code spans. */
export function docMentions (markdown: string): DocMentions {
  const found: DocMentions = { chains: [], imports: [], names: [] }
  const fenced: Array<[number, number]> = []
  for (const block of markdown.matchAll(FENCE)) {
    const start = block.index + block[0].indexOf('\n') + 1
    fenced.push([block.index, block.index + block[0].length])
    const code = block[1]!
    for (const chain of code.matchAll(CHAIN)) found.chains.push({ text: chain[0], line: lineAt(markdown, start + chain.index) })
    for (const imported of code.matchAll(IMPORT)) {
      for (const part of imported[1]!.split(',')) {
        const name = part.trim().replace(/^type\s+/, '').split(/\s+as\s+/)[0]!
        if (name !== '') found.imports.push({ text: name, line: lineAt(markdown, start + imported.index) })
      }
    }
  }
  const inFence = (index: number): boolean => fenced.some(([from, to]) => index >= from && index < to)
  for (const span of markdown.matchAll(SPAN)) {
    if (inFence(span.index)) continue
    const line = lineAt(markdown, span.index)
    const code = span[1]!
    for (const chain of code.matchAll(CHAIN)) found.chains.push({ text: chain[0], line })
    const name = NAMED.exec(code)?.[1]
    if (name !== undefined && name !== 'app' && API_LIKE.test(name) && !ENV_VARIABLE.test(name)) found.names.push({ text: name, line })
  }
  return found
}
