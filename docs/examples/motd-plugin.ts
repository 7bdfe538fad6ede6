// An example plugin with a manifest: a section of config.yaml of its own (`motd:`, checked as the gateway's keys are,
// a bad value named with the plugin), a CLI command (`llamagate motd`), a `llamagate doctor` check, and a route that
// answers with @fastify/sensible's errors in each surface's shape. Compile it (tsc), install the package beside
// config.yaml:
//
//   plugins:
//     - path: llamagate-plugin-motd
//   motd: { text: "Models are reset at 06:00", max_length: 200 }
import { configSection, definePlugin, Type } from 'llamagate/plugin'
import type { Check, Command } from 'llamagate/plugin'

// Typed where the plugin reads it: app.config.motd, (await ctx.config()).motd.
declare module 'llamagate/plugin' {
  interface Config { motd: { text: string, maxLength: number } }
}

const section = configSection({
  plugin: 'motd',
  doc: 'README.md',
  keys: {
    motd: Type.Object({
      text: Type.String({ default: '' }),
      max_length: Type.Integer({ minimum: 1, default: 500 }),
    }, { additionalProperties: false, default: {} }),
  },
  env: [{ name: 'MOTD_TEXT', key: ['motd', 'text'] }],
  resolve: ({ motd }, { problem }) => {
    if (motd.text.length > motd.max_length) problem(`motd.text is longer than motd.max_length (${motd.max_length})`)
    return { motd: { text: motd.text, maxLength: motd.max_length } }
  },
})

const motd: Command = {
  name: 'motd',
  summary: 'print the message of the day',
  usage: ['llamagate motd [--config FILE]'],
  options: {},
  positionals: { min: 0, max: 0 },
  async run ({ config, stdout }) {
    const { text } = (await config()).motd
    stdout.write(`${text === '' ? '(no message of the day)' : text}\n`)
    return 0
  },
}

export default definePlugin({
  name: 'motd',
  manifest: {
    config: async () => section,
    commands: [motd],
    async doctor ({ config }) {
      const check: Check = config.motd.text === ''
        ? { name: 'motd', status: 'warn', message: 'no message of the day is set', fix: 'set motd.text in config.yaml' }
        : { name: 'motd', status: 'ok', message: `${config.motd.text.length} characters`, fix: null }
      return { checks: [check] }
    },
  },
  register (app) {
    // The same route on each surface: the error a plugin throws is answered in the shape its path's clients read.
    for (const prefix of ['/api', '/v1', '/v1/messages']) {
      app.get(`${prefix}/motd`, async () => {
        if (app.config.motd.text === '') throw app.httpErrors.notFound('no message of the day is set')
        return { text: app.config.motd.text }
      })
    }
  },
})
