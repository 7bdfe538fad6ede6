import { Type } from 'typebox'
import { configSection, list } from '../../core/config/config-section.js'
import { resolvePath } from '../../core/base/paths.js'

declare module '../../core/config/resolved-config.js' {
  interface Config {
    /** `requireKeysOffLoopback`: refuse to start on a non-loopback address without API keys. */
    auth: { apiKeys: string[], keysFile: string, requireKeysOffLoopback: boolean }
    cors: { origins: string[] }
    allowedHosts: string[]
  }
}

/** config.yaml's `auth`, `cors` and `allowed_hosts`: who may call, from which pages, under which host names. */
export const section = configSection({
  plugin: 'security',
  doc: 'docs/operations.md',
  keys: {
    auth: Type.Object({
      api_keys: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
      keys_file: Type.String({ minLength: 1, default: 'keys.yaml', description: 'the keys `llamagate keys` hands out, with scopes and limits (relative to data_dir); re-read when it changes' }),
      require_keys_off_loopback: Type.Boolean({ default: false }),
    }, { additionalProperties: false, default: {} }),
    cors: Type.Object({
      origins: Type.Array(Type.String({ minLength: 1 }), {
        default: [
          'http://localhost', 'http://localhost:*', 'https://localhost', 'https://localhost:*',
          'http://127.0.0.1', 'http://127.0.0.1:*', 'https://127.0.0.1', 'https://127.0.0.1:*',
          'http://[::1]', 'http://[::1]:*', 'app://*', 'file://*', 'tauri://*', 'vscode-webview://*',
        ],
      }),
    }, { additionalProperties: false, default: {} }),
    allowed_hosts: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
  },
  env: [
    { name: 'LLAMAGATE_API_KEYS', key: ['auth', 'api_keys'], parse: list },
    { name: 'LLAMAGATE_ALLOWED_HOSTS', key: ['allowed_hosts'], parse: list },
    // Adds to the configured origins rather than replacing them.
    { name: 'LLAMAGATE_ORIGINS', key: ['cors', 'origins'], parse: list, append: true },
  ],
  resolve: ({ auth, cors, allowed_hosts: allowedHosts }, { config }) => ({
    auth: { apiKeys: auth.api_keys, keysFile: resolvePath(auth.keys_file, config.dataDir), requireKeysOffLoopback: auth.require_keys_off_loopback },
    cors: { origins: cors.origins },
    allowedHosts,
  }),
})
