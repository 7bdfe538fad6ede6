import { Type } from 'typebox'
import { configSection } from '../../core/config/config-section.js'

declare module '../../core/config/resolved-config.js' {
  interface Config {
    /** `allowPrivateRedirects`: the hub may redirect to loopback or private addresses of hosts other than its own. */
    hub: { endpoint: string, token: string | null, allowPrivateRedirects: boolean }
  }
}

/** config.yaml's `hub`: where models are pulled from, with which token. */
export const section = configSection({
  plugin: 'download',
  doc: 'docs/operations.md',
  keys: {
    hub: Type.Object({
      endpoint: Type.String({ pattern: '^https?://', default: 'https://huggingface.co' }),
      token: Type.Union([Type.String(), Type.Null()], { default: null }),
      allow_private_redirects: Type.Boolean({ default: false, description: 'the hub may redirect downloads to loopback or private addresses of other hosts' }),
    }, { additionalProperties: false, default: {} }),
  },
  env: [
    { name: 'HF_ENDPOINT', key: ['hub', 'endpoint'] },
    { name: 'HF_TOKEN', key: ['hub', 'token'] },
  ],
  resolve: ({ hub }) => ({
    hub: { endpoint: hub.endpoint.replace(/\/+$/, ''), token: hub.token, allowPrivateRedirects: hub.allow_private_redirects },
  }),
})
