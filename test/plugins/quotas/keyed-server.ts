import { join } from 'node:path'
import type { Test } from 'tap'
import { hashSecret, writeKeysFile, type KeyLimits } from '../../../plugins/security/keys-file.js'
import { tempDir } from '../../helpers/app.js'
import { importLongContextModel, serveTinyModels, type InferenceServer } from '../../helpers/inference.js'

/** The secret of the test key named `name`. */
export const secretOf = (name: string): string => `lg-test-${name}-0123456789abcdef`

/** The gateway with the tiny models and a keys file holding one key per entry of `limits` (its name: the key). */
export async function serveWithKeys (t: Test, limits: Record<string, KeyLimits>, values: Record<string, unknown> = {}): Promise<InferenceServer> {
  const keysFile = join(await tempDir(t), 'keys.yaml')
  await writeKeysFile(keysFile, {
    keys: Object.entries(limits).map(([name, l]) => ({ name, hash: hashSecret(secretOf(name)), scopes: ['infer' as const], models: ['*'], limits: l, created: new Date().toISOString() })),
  })
  // acme/long's answers run until their client goes (a trained context of 32k tokens, and a context that size: with
  // the 4,096 of the defaults an answer ends when it fills, a few seconds in): a request that holds its slot.
  const server = await serveTinyModels(t, ['acme/tiny'], { auth: { keys_file: keysFile }, models: { 'acme/long': { options: { num_ctx: 32_768 } } }, ...values })
  await importLongContextModel(t, server.app, 'acme/long')
  return server
}
