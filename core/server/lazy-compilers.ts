import type { AjvCompiler } from '@fastify/ajv-compiler'
import type { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import type { FastifyServerOptions } from 'fastify'
import { ajvCompiler, serializerCompiler } from '../base/lazy-require.js'

type Factory = ReturnType<typeof AjvCompiler>
type Validate = ReturnType<ReturnType<Factory>>
type SerializerFactory = ReturnType<typeof SerializerSelector>
type Serialize = ReturnType<ReturnType<SerializerFactory>>

/**
 * Fastify's schema compilers, each route's compiled on its first use instead of at start: compiling all of them
 * (Ajv's validators, fast-json-stringify's serializers) was a fifth of a start's CPU, most of it for routes a
 * given server never sees; the compilers themselves (Ajv and its 100 files) are loaded at the first too. Apps that
 * share one set (a test process's) compile each validator once.
 */
export function lazyCompilers (): NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']> {
  return { buildValidator: lazyValidators(), buildSerializer: lazySerializers() }
}

// Each validator factory's preparation (Ajv loaded, its instance made with the app's options), for warmValidators.
const preparations = new WeakMap<object, Array<() => unknown>>()
// The schema a warm-up compiles to have Ajv compile its meta-schema: one object, so that an instance that several of
// the app's contexts share compiles it once.
const NOTHING = { schema: {}, method: 'GET', url: '/', httpPart: 'body' } as const

/**
 * Prepares now what every route's first validation shares: Ajv's 100 files loaded, an instance made with the app's
 * options and its meta-schema compiled (~60-100 ms of a first request on a 2-core machine), leaving each route's own
 * compile to its first request.
 * A server calls it once it listens, so that its first request, and the model load that request starts, do not wait
 * for it. Factories other than lazyValidators' are left alone.
 */
export function warmValidators (factory: unknown): void {
  if (typeof factory !== 'object' && typeof factory !== 'function') return
  for (const prepare of preparations.get(factory as object) ?? []) {
    try {
      prepare()
    } catch {
      // An external schema Ajv refuses: the first request of a route that uses it says so, as without the warm-up.
    }
  }
}

/**
 * Fastify's Ajv validators, each compiled on its route's first request. Ajv keeps what one compiler compiled.
 * `load`: Fastify's Ajv compiler factory (the tests count its calls).
 */
export function lazyValidators (load: () => Factory = () => ajvCompiler().AjvCompiler()): Factory {
  let eager: Factory | undefined
  const prepared: Array<() => unknown> = []
  const factory = ((externalSchemas, options) => {
    let compile: ReturnType<Factory> | undefined
    const prepare = (): ReturnType<Factory> => (compile ??= (eager ??= load())(externalSchemas, options))
    // Ajv compiles its meta-schema, which checks every schema it is given, with the first: a schema of nothing.
    let warmed = false
    prepared.push(() => {
      if (!warmed) prepare()(NOTHING)
      warmed = true
    })
    return (route) => {
      let validate: Validate | undefined
      const lazy = (data: unknown, context?: unknown): unknown => {
        validate ??= prepare()(route)
        const valid = (validate as (data: unknown, context?: unknown) => unknown)(data, context)
        // Fastify reads a failed validation's errors from the function it was given.
        lazy.errors = validate.errors
        return valid
      }
      lazy.errors = null as Validate['errors']
      // Fastify hands an Ajv validator (one with a schemaEnv) the request as the body's parent, so that defaults
      // can fill a root value: the same for this one.
      lazy.schemaEnv = true
      return lazy as unknown as Validate
    }
  }) as Factory
  preparations.set(factory, prepared)
  return factory
}

/** fast-json-stringify's serializers, each compiled on its response's first use. */
export function lazySerializers (): SerializerFactory {
  let eager: SerializerFactory | undefined
  return ((externalSchemas, options) => {
    let compile: ReturnType<SerializerFactory> | undefined
    return (route) => {
      let serialize: Serialize | undefined
      return (data: unknown): string => (serialize ??= (compile ??= (eager ??= serializerCompiler().SerializerSelector())(externalSchemas, options))(route))(data)
    }
  }) as SerializerFactory
}
