import { Type } from 'typebox'
import { LISTEN_PATTERN } from '../../core/config/config-schema.js'
import { configSection } from '../../core/config/config-section.js'
import { formatHostPort } from '../../core/base/host-port.js'

declare module '../../core/config/resolved-config.js' {
  interface Config {
    /** `listen`: where /metrics is served on its own, without a key, instead of on the main address; null: the main address. */
    metrics: { enabled: boolean, listen: { host: string, port: number } | null }
  }
}

/** config.yaml's `metrics`. */
export const section = configSection({
  plugin: 'metrics',
  doc: 'docs/operations.md',
  keys: {
    metrics: Type.Object({
      enabled: Type.Boolean({ default: true }),
      listen: Type.Union([
        Type.String({ pattern: LISTEN_PATTERN }),
        Type.Null(),
      ], { default: null, description: 'null, or an address and port such as "127.0.0.1:9464" or "[::1]:9464"' }),
    }, { additionalProperties: false, default: {} }),
  },
  resolve ({ metrics }, { config, listenAddress, problem, sourceOf }) {
    const listen = metrics.listen === null ? null : listenAddress('metrics.listen', metrics.listen)
    // Two listeners on one port: the second would fail to start with a less helpful message. (`auto`'s Ollama port,
    // taken, is only said at the start.)
    const ollama = config.ollamaListen
    if (listen !== null && ollama?.required === true && ollama.port !== 0 && ollama.port === listen.port) {
      problem(`ollama_listen = ${JSON.stringify(formatHostPort(ollama))} is not allowed: metrics.listen uses port ${listen.port} already (Ollama's own port is 11434) (from ${sourceOf('ollama_listen')})`)
    }
    return { metrics: { enabled: metrics.enabled, listen } }
  },
})
