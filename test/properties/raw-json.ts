import fc from 'fast-check'

// JSON values with raw pieces: numbers JSON.stringify cannot write, nesting too deep to stringify.

/** JSON text put into a body as it is: `1e400`, `-0`, 20 000 nested arrays. */
export class Raw {
  constructor (readonly text: string, private readonly label = text) {}
  [fc.toStringMethod] (): string { return `Raw(${this.label.length > 80 ? `${this.label.slice(0, 80)}…` : this.label})` }
}

/** `open` n times, `inner`, `close` n times: nesting as deep as a test wants, without recursion. */
export function nested (depth: number, open: string, close: string, inner: string): Raw {
  return new Raw(open.repeat(depth) + inner + close.repeat(depth), `${depth} × ${open}${inner}${close}`)
}

/** JSON text of a value that may hold Raw pieces and own `__proto__` keys (as `Object.entries` lists them). */
export function toJsonText (value: unknown): string {
  if (value instanceof Raw) return value.text
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(',')}]`
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** Sets an own property, even `__proto__` (an assignment would set the prototype instead). */
export function put (target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

/** An object from entries, each key an own property (`__proto__` included). */
export function objectOf (entries: Array<[string, unknown]>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of entries) put(out, k, v)
  return out
}
