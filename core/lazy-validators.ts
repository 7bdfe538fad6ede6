import { AjvCompiler } from '@fastify/ajv-compiler'

type Factory = ReturnType<typeof AjvCompiler>
type Validate = ReturnType<ReturnType<Factory>>

/**
 * Fastify's Ajv validators, each compiled on its route's first request instead of at start: compiling all of them
 * was a sixth of a start's CPU (0.4 s here), most of it for routes a given server never sees. Ajv keeps what one
 * compiler compiled, so apps that share this factory (a test process's) compile each schema once.
 */
export function lazyValidators (): Factory {
  const eager = AjvCompiler()
  return ((externalSchemas, options) => {
    const compile = eager(externalSchemas, options)
    return (route) => {
      let validate: Validate | undefined
      const lazy = (data: unknown, context?: unknown): unknown => {
        validate ??= compile(route)
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
