/**
 * What a model name reaches: the model stored under it, else the model an alias of that name names, else nothing
 * known (a model not pulled yet, an upstream's). A stored model's own name wins over an alias (docs/api.md, Aliases).
 * The one rule for the store's lookups and the key guard, so that a key is judged by the model a request reaches.
 */
export type NameReach<T> = { stored: T } | { alias: string } | null

/** `storedUnder(name)`: the model stored under that name, if any; `aliasOf(name)`: the model an alias names, if any. */
export function reachOf<T> (name: string, storedUnder: (name: string) => T | undefined, aliasOf: (name: string) => string | undefined): NameReach<T> {
  const stored = storedUnder(name)
  if (stored !== undefined) return { stored }
  const alias = aliasOf(name)
  return alias === undefined ? null : { alias }
}
