#!/usr/bin/env -S node --max-semi-space-size=2
import { realpathSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.js'
import { ConfigError, loadConfig, type ConfigFlags } from './config.js'
import { GatewayError } from './errors.js'
import { exposureRisk } from './exposure.js'
import { openStore } from '../plugins/storage/open-store.js'
import { version } from './version.js'
import { PluginLoadError } from './plugin-loader.js'

const USAGE = `usage: llamagate <command> [flags]

commands:
  serve     start the server
            --host HOST      address to listen on (default 127.0.0.1)
            --port PORT      port to listen on (default 11435)
            --config FILE    config file (default: $LLAMAGATE_CONFIG, else the shipped config.yaml)
            --models DIR     models folder
  import    register a GGUF already on disk, linked rather than copied
            llamagate import <owner>/<name> <file.gguf> [--mmproj FILE] [--config FILE] [--models DIR]
            --mmproj FILE    a vision projector to load beside the model
  help      show this text
  version   print the version
`

/** How long a shutdown may take before the process gives up waiting and exits anyway. */
const SHUTDOWN_GRACE_MS = 20_000

export async function main (argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  switch (command) {
    case 'serve': return serve(rest)
    case 'import': return importModel(rest)
    case 'version': case '--version': case '-v':
      process.stdout.write(`${version()}\n`)
      return 0
    case undefined: case 'help': case '--help': case '-h':
      process.stdout.write(USAGE)
      return command === undefined ? 2 : 0
    default:
      process.stderr.write(`llamagate: unknown command "${command}"\n\n${USAGE}`)
      return 2
  }
}

async function serve (args: string[]): Promise<number> {
  let flags: ConfigFlags
  try {
    flags = parseArgs({
      args,
      options: { host: { type: 'string' }, port: { type: 'string' }, config: { type: 'string' }, models: { type: 'string' } },
      strict: true,
    }).values
  } catch (err) {
    process.stderr.write(`llamagate serve: ${(err as Error).message}\n\n${USAGE}`)
    return 2
  }
  let app: FastifyInstance
  try {
    const config = loadConfig(flags)
    const risk = exposureRisk(config.host, config.auth.apiKeys)
    if (risk !== null && config.auth.requireKeysOffLoopback) {
      process.stderr.write(`llamagate: refusing to start: ${risk} (auth.require_keys_off_loopback is true)\n`)
      return 2
    }
    app = await buildApp(config)
  } catch (err) {
    if (err instanceof ConfigError || err instanceof PluginLoadError) {
      process.stderr.write(`llamagate: ${err.message}\n`)
      return 2
    }
    throw err
  }
  installShutdown(app)
  const { host, port, configFile } = app.config
  const address = await app.listen({ host, port })
  app.log.info(`llamagate ${version()} listening on ${address} (config: ${configFile ?? 'built-in defaults'}; ${app.startupNotes.join('; ') || 'no runtime plugin'})`)
  const risk = exposureRisk(host, app.config.auth.apiKeys)
  // Its own line at warn level, so that it stands out of the start-up log and reaches log filters.
  if (risk !== null) app.log.warn(`WARNING: ${risk}; auth.require_keys_off_loopback: true in config.yaml makes this a refusal to start`)
  return new Promise<number>(() => {}) // runs until a signal ends the process
}

async function importModel (args: string[]): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({ args, options: { config: { type: 'string' }, models: { type: 'string' }, mmproj: { type: 'string' } }, allowPositionals: true, strict: true })
  } catch (err) {
    process.stderr.write(`llamagate import: ${(err as Error).message}\n\n${USAGE}`)
    return 2
  }
  const [name, file] = parsed.positionals
  if (!name || !file || parsed.positionals.length !== 2) {
    process.stderr.write(`llamagate import: expected <owner>/<name> <file.gguf>\n\n${USAGE}`)
    return 2
  }
  try {
    const { mmproj, ...flags } = parsed.values
    const config = loadConfig(flags)
    const store = await openStore(config.modelsDir, { log: { warn: (message) => process.stderr.write(`llamagate import: warning: ${String(message)}\n`) } })
    const record = await store.import(name, resolve(file), mmproj !== undefined ? { projector: resolve(mmproj) } : {}).finally(() => store.close())
    process.stdout.write(`imported ${record.name} (${record.size} bytes, ${record.manifest.source.link}) into ${record.dir}\n`)
    return 0
  } catch (err) {
    if (err instanceof ConfigError || err instanceof GatewayError) {
      process.stderr.write(`llamagate import: ${err.message}\n`)
      return err instanceof ConfigError ? 2 : 1
    }
    throw err
  }
}

/** Closing the app stops every child process its plugins started; only then does the process exit. */
function installShutdown (app: FastifyInstance): void {
  let closing = false
  const shutdown = (reason: string, code: number): void => {
    if (closing) {
      app.log.warn(`${reason} while shutting down: still waiting for running models to stop`)
      return
    }
    closing = true
    app.log.info(`${reason}: shutting down`)
    setTimeout(() => {
      app.log.error(`shutdown took over ${SHUTDOWN_GRACE_MS / 1000}s; exiting anyway`)
      process.exit(1)
    }, SHUTDOWN_GRACE_MS).unref()
    app.close().then(() => process.exit(code), (err) => {
      app.log.error({ err }, 'error while shutting down')
      process.exit(1)
    })
  }
  process.on('SIGINT', () => shutdown('SIGINT', 0))
  process.on('SIGTERM', () => shutdown('SIGTERM', 0))
  process.on('uncaughtException', (err) => { app.log.fatal({ err }, 'uncaught exception'); shutdown('uncaught exception', 1) })
  process.on('unhandledRejection', (err) => { app.log.fatal({ err }, 'unhandled rejection'); shutdown('unhandled rejection', 1) })
}


// Run only as the program, not when imported by a test.
// (npm's bin link is a symlink, hence realpath.)
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  main(process.argv.slice(2)).then((code) => { if (code !== 0) process.exit(code) }, (err) => {
    process.stderr.write(`llamagate: ${(err as Error).stack ?? String(err)}\n`)
    process.exit(1)
  })
}
