import { readFileSync } from 'node:fs'
import { parse as parseYaml, YAMLParseError } from 'yaml'
import { ConfigError } from './config-error.js'
import { numberOrText, type EnvVariable } from './config-section.js'
import type { Config } from './resolved-config.js'

/** Raw values from one place, keyed as in config.yaml; later layers win. */
export interface Layer {
  source: string
  values: Record<string, unknown>
  /** Lists added to a key's list rather than replacing it (an `append` environment variable's). */
  appends?: Array<{ key: readonly string[], items: unknown[] }>
}

/** Values given on the command line; they win over everything else. */
export interface ConfigFlags { host?: string, port?: string, config?: string, models?: string }

/** `loadConfig` as code handed it sees it (the CLI's client commands, which load it only when they need it). */
export type ReadConfig = (flags: ConfigFlags, env: NodeJS.ProcessEnv) => Config

export function readConfigFile (file: string): Record<string, unknown> {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new ConfigError([`cannot read config file ${file}: ${(err as Error).message}`])
  }
  let parsed: unknown
  try {
    parsed = parseYaml(text)
  } catch (err) {
    const where = err instanceof YAMLParseError && err.linePos ? ` (line ${err.linePos[0].line})` : ''
    throw new ConfigError([`${file}${where} is not valid YAML: ${(err as Error).message.split('\n')[0]}`])
  }
  if (parsed === null || parsed === undefined) return {}
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError([`${file} must hold a mapping of keys to values, not ${Array.isArray(parsed) ? 'a list' : typeof parsed}`])
  }
  return parsed as Record<string, unknown>
}

/**
 * The environment's layer: each variable's text, parsed as the schema expects, at its key. Values arrive as text;
 * the schema check then names the variable if the value is wrong.
 */
export function envLayer (env: NodeJS.ProcessEnv, variables: readonly EnvVariable[]): Layer {
  const values: Record<string, unknown> = {}
  const appends: NonNullable<Layer['appends']> = []
  for (const { name, key, parse, append } of variables) {
    const text = env[name]
    if (text === undefined || text === '') continue
    const value = parse ? parse(text) : text
    if (append === true) appends.push({ key, items: Array.isArray(value) ? value : [value] })
    else setPath(values, key, value)
  }
  return { source: 'environment', values, appends }
}

export function flagLayer (flags: ConfigFlags): Layer {
  const values: Record<string, unknown> = {}
  if (flags.host !== undefined) values.host = flags.host
  if (flags.port !== undefined) values.port = numberOrText(flags.port)
  if (flags.models !== undefined) values.models_dir = flags.models
  return { source: 'command line', values }
}

/**
 * Merges `source` into `target`, nested mappings key by key, and notes each value's layer in `sources` (by dotted
 * key; the environment's by the variable's name, `envName`).
 */
export function mergeInto (target: Record<string, unknown>, source: Record<string, unknown>, path: string[],
  label: string, sources: Map<string, string>, envName: (path: string[]) => string): void {
  for (const [key, value] of Object.entries(source)) {
    const here = [...path, key]
    // Own keys only, written as data: a model named `__proto__` in config.yaml must not reach Object.prototype.
    const current = Object.hasOwn(target, key) ? target[key] : undefined
    if (isPlainObject(value) && isPlainObject(current)) {
      mergeInto(current, value, here, label, sources, envName)
    } else {
      Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true })
      sources.set(here.join('.'), label === 'environment' ? envName(here) : label)
    }
  }
}

/** Adds `items` to the list at `path`, making the list (and the mappings above it) where there is none. */
export function appendAt (target: Record<string, unknown>, path: readonly string[], items: unknown[]): void {
  const current = valueAt(target, path)
  setPath(target, path, [...(Array.isArray(current) ? current : []), ...items])
}

export function setPath (target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = target
  for (const part of path.slice(0, -1)) {
    if (!isPlainObject(node[part])) node[part] = {}
    node = node[part] as Record<string, unknown>
  }
  node[path[path.length - 1]!] = value
}

export function valueAt (value: unknown, path: readonly string[]): unknown {
  let node = value
  for (const part of path) node = isPlainObject(node) || Array.isArray(node) ? (node as any)[part] : undefined
  return node
}

export function isPlainObject (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
