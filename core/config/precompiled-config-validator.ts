import { createHash } from 'node:crypto'
import type { ValidateFunction } from 'ajv'

/** What the build writes beside this module (scripts/build/build-config-validator.ts): Ajv's standalone code. */
export interface PrecompiledModule {
  /** The digest (configSchemaDigest) of the schema the validator was generated from. */
  schemaDigest: string
  default: ValidateFunction
}

/** The file name the build gives the generated validator, beside this module in dist/core/config/. */
export const PRECOMPILED_FILE = 'config-validator.generated.js'

// Absent when running from the sources (the tests' loader) or from a build that did not make it: compiled then. A
// generated file that fails to load is a broken build, and says so.
const loaded: PrecompiledModule | null = await import(new URL(`./${PRECOMPILED_FILE}`, import.meta.url).href)
  .then((m: PrecompiledModule) => m, (err: NodeJS.ErrnoException) => {
    if (err.code === 'ERR_MODULE_NOT_FOUND' && err.message.includes(PRECOMPILED_FILE)) return null
    throw err
  })

/** A digest of a schema's JSON: what tells a generated validator made from it from one made from another. */
export function configSchemaDigest (schema: unknown): string {
  return createHash('sha256').update(JSON.stringify(schema)).digest('hex')
}

/** The build's validator when it was generated from exactly this schema; null otherwise. */
export function precompiledValidator (schema: unknown): ValidateFunction | null {
  if (loaded === null || loaded.schemaDigest !== configSchemaDigest(schema)) return null
  return loaded.default
}
