import type { AjvCompiler } from '@fastify/ajv-compiler'
import type { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import type { FastifyServerOptions } from 'fastify'
import { ajvCompiler, serializerCompiler } from './lazy-require.js'

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

/** Fastify's Ajv validators, each compiled on its route's first request. Ajv keeps what one compiler compiled. */
export function lazyValidators (): Factory {
  let eager: Factory | undefined
  return ((externalSchemas, options) => {
    let compile: ReturnType<Factory> | undefined
    return (route) => {
      let validate: Validate | undefined
      const lazy = (data: unknown, context?: unknown): unknown => {
        validate ??= (compile ??= (eager ??= ajvCompiler().AjvCompiler())(externalSchemas, options))(route)
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
