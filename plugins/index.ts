import type { FastifyPluginAsync } from 'fastify'
import apiNative from './api-native/index.js'
import apiOpenai from './api-openai/index.js'
import convert from './convert/index.js'
import download from './download/index.js'
import health from './health/index.js'
import modelsApi from './models-api/index.js'
import pullApi from './pull-api/index.js'
import runtimes from './runtimes/index.js'
import scheduler from './scheduler/index.js'
import security from './security/index.js'
import storage from './storage/index.js'

/**
 * The built-in plugins, in the order they are registered. Each declares its `dependencies` by name, so
 * Fastify refuses to start if this order ever breaks them.
 */
export const BUILTIN_PLUGINS: FastifyPluginAsync[] = [
  security,
  health,
  storage,
  runtimes,
  convert,
  download,
  scheduler,
  modelsApi,
  apiNative,
  apiOpenai,
  pullApi,
]
