import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Ajv } from 'ajv'
import standalone from 'ajv/dist/standalone/index.js'
import { PACKAGE_ROOT } from '../../core/base/paths.js'

/**
 * Writes dist/core/config/config-validator.generated.js: config.yaml's validator for the built-in sections as Ajv's
 * standalone code, with the digest of the schema it was made from. Every CLI run and server start then loads it
 * instead of compiling the schema (~0.3 s of CPU each); a start whose schema differs (a plugin's section) compiles.
 */
async function main (): Promise<void> {
  // The file an earlier build wrote goes first: the config modules load it, and it may be another schema's.
  const out = join(PACKAGE_ROOT, 'dist', 'core', 'config', 'config-validator.generated.js')
  rmSync(out, { force: true })
  const { assembleConfigSchema, BUILTIN_SECTIONS, CONFIG_AJV_OPTIONS } = await import('../../core/platform/config-sections.js')
  const { configSchemaDigest, PRECOMPILED_FILE } = await import('../../core/config/precompiled-config-validator.js')
  if (!out.endsWith(PRECOMPILED_FILE)) throw new Error(`the generated validator is loaded as ${PRECOMPILED_FILE}`)
  const schema = assembleConfigSchema(BUILTIN_SECTIONS)
  const ajv = new Ajv({ ...CONFIG_AJV_OPTIONS, code: { source: true, esm: true } })
  // A CommonJS module: its function is the default export's `default` too.
  const code = standalone.default(ajv, ajv.compile(schema))
  // Ajv's ES module output still requires its runtime helpers (string lengths in code points): a require is given.
  // Generated code counts for no coverage (its test compares it with a compile at run time), wherever it is loaded from.
  const head = 'import { createRequire } from "node:module";const require = createRequire(import.meta.url);/* c8 ignore start */'
  writeFileSync(out, `${head}${code}\n/* c8 ignore stop */\nexport const schemaDigest = ${JSON.stringify(configSchemaDigest(schema))};\n`)
}

await main()
