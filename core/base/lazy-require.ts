import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

/**
 * A CommonJS package loaded at its first use rather than with the module that names it: what a start does not use
 * (undici's 130 files, Ajv's 100) costs it nothing, and a first use on a synchronous path (a pool made for a new
 * llama-server, a route's first validation) can still require it there.
 */
export function lazyRequire<T> (name: string): () => T {
  let loaded: T | undefined
  return () => (loaded ??= require(name) as T)
}

/** undici: the llama-servers' pools, upstreams, the hub, remote images. */
export const undici = lazyRequire<typeof import('undici')>('undici')
/** Ajv: a plugin's options, a configuration the build's validator does not cover (a plugin's section). */
export const ajv = lazyRequire<typeof import('ajv')>('ajv')
/** Fastify's compilers of route schemas, required at a route's first validation or answer. */
export const ajvCompiler = lazyRequire<typeof import('@fastify/ajv-compiler')>('@fastify/ajv-compiler')
export const serializerCompiler = lazyRequire<typeof import('@fastify/fast-json-stringify-compiler')>('@fastify/fast-json-stringify-compiler')
