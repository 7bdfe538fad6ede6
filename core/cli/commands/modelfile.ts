// Ollama's Modelfile, as far as llamagate's /api/create can honour it: FROM, SYSTEM, PARAMETER, TEMPLATE.

/** An option's value as the server's `parameters` takes it. */
export type ParameterValue = number | boolean | string | string[]

export interface Modelfile {
  /** What FROM names (a model, or a path to a GGUF file, as written) and its line, for messages. */
  from: { value: string, line: number }
  system?: string
  template?: string
  /** `stop` collects every PARAMETER stop into a list; any other repeated name keeps its last value. */
  parameters: Record<string, ParameterValue>
  /** The line each parameter was last set on, for warnings about it. */
  parameterLines: Record<string, number>
}

/** A Modelfile that cannot be read; `line` is 1-based, null when the problem is the file as a whole. */
export class ModelfileError extends Error {
  override name = 'ModelfileError'
  constructor (readonly line: number | null, readonly problem: string) {
    super(line === null ? problem : `line ${line}: ${problem}`)
  }
}

const SUPPORTED = ['FROM', 'PARAMETER', 'SYSTEM', 'TEMPLATE']
// Ollama's other instructions: named as unsupported rather than as typos, and never silently dropped (a
// MESSAGE or ADAPTER left out would make a model that behaves differently from the one the file describes).
const REFUSED = ['LICENSE', 'MESSAGE', 'ADAPTER', 'DRAFT', 'RENDERER', 'PARSER', 'REQUIRES']

/**
 * Parses a Modelfile as Ollama does: one instruction per line, names in any case, `#` comment lines, values
 * to the end of the line, or in `"..."` or `"""..."""` (which may span lines; nothing inside is escaped).
 * @throws ModelfileError naming the line
 */
export function parseModelfile (text: string): Modelfile {
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/)
  let from: Modelfile['from'] | undefined
  const result: Omit<Modelfile, 'from'> = { parameters: {}, parameterLines: {} }
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1
    const trimmed = lines[i]!.trim()
    if (trimmed === '' || trimmed.startsWith('#')) continue
    const match = /^([A-Za-z]+)(?:[ \t]+(.*))?$/s.exec(trimmed)
    if (!match) throw new ModelfileError(lineNo, `expected an instruction (${SUPPORTED.join(', ')}), got ${JSON.stringify(trimmed.slice(0, 40))}`)
    const instruction = match[1]!.toUpperCase()
    if (REFUSED.includes(instruction)) throw new ModelfileError(lineNo, `${instruction} is not supported by llamagate create (it reads ${SUPPORTED.join(', ')})`)
    if (!SUPPORTED.includes(instruction)) throw new ModelfileError(lineNo, `unknown instruction "${match[1]}" (expected ${SUPPORTED.join(', ')})`)
    let rest = match[2] ?? ''
    let name: string | undefined
    if (instruction === 'PARAMETER') {
      const parameter = /^([A-Za-z0-9_]+)(?:[ \t]+(.*))?$/s.exec(rest)
      if (!parameter) throw new ModelfileError(lineNo, 'PARAMETER needs a name and a value: PARAMETER <name> <value>')
      name = parameter[1]!
      rest = parameter[2] ?? ''
    }
    const { value, end } = readValue(lines, i, rest, instruction)
    i = end
    if (value === '' && instruction !== 'SYSTEM' && instruction !== 'TEMPLATE') {
      throw new ModelfileError(lineNo, name !== undefined ? `PARAMETER ${name} needs a value` : `${instruction} needs a value`)
    }
    switch (instruction) {
      case 'FROM':
        if (from !== undefined) throw new ModelfileError(lineNo, `a second FROM (the first is on line ${from.line}); a model is made from one`)
        from = { value, line: lineNo }
        break
      case 'SYSTEM': result.system = value; break
      case 'TEMPLATE': result.template = value; break
      case 'PARAMETER': {
        const key = name!
        if (key === 'stop') {
          const list = result.parameters.stop as string[] | undefined
          result.parameters.stop = [...(list ?? []), value]
        } else {
          result.parameters[key] = parameterValue(value)
        }
        result.parameterLines[key] = lineNo
      }
    }
  }
  if (from === undefined) throw new ModelfileError(null, 'no FROM line: the Modelfile must say what the model is made from (FROM <owner>/<name> or FROM ./file.gguf)')
  return { from, ...result }
}

/**
 * The value that starts with `first` on line `index`: bare to the end of the line, or quoted, running on to
 * the line that closes the quote. The line breaks that only place `"""` on lines of their own are not part
 * of the text.
 */
function readValue (lines: string[], index: number, first: string, instruction: string): { value: string, end: number } {
  const text = first.trim()
  const quote = text.startsWith('"""') ? '"""' : text.startsWith('"') ? '"' : null
  if (quote === null) return { value: text, end: index }
  const opening = text.slice(quote.length)
  const closesHere = opening.trimEnd()
  if (closesHere.endsWith(quote)) return { value: closesHere.slice(0, -quote.length), end: index }
  const parts = [opening]
  for (let j = index + 1; j < lines.length; j++) {
    const line = lines[j]!.trimEnd()
    if (!line.endsWith(quote)) { parts.push(lines[j]!); continue }
    parts.push(line.slice(0, -quote.length))
    if (parts[0]!.trim() === '') parts.shift()
    if (parts.length > 0 && parts.at(-1)!.trim() === '') parts.pop()
    return { value: parts.join('\n'), end: j }
  }
  throw new ModelfileError(index + 1, `the ${quote} that starts ${instruction}'s value is never closed`)
}

/**
 * A PARAMETER's text as a JSON value: `true`/`false` booleans, numbers, anything else a string. The server
 * checks each against its options and refuses a wrong type with a message that names the option.
 */
export function parameterValue (text: string): number | boolean | string {
  if (text === 'true' || text === 'false') return text === 'true'
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) return Number(text)
  return text
}
