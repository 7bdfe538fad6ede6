import type { FastifyPluginAsync } from 'fastify'
import accessLog from './access-log/index.js'
import anthropicApi from './anthropic-api/index.js'
import convert from './convert/index.js'
import download from './download/index.js'
import embeddingsApi from './embeddings-api/index.js'
import healthApi from './health-api/index.js'
import inference from './inference/index.js'
import lifecycle from './lifecycle/index.js'
import metrics from './metrics/index.js'
import modelsApi from './models-api/index.js'
import nativeApi from './native-api/index.js'
import openaiApi from './openai-api/index.js'
import pullApi from './pull-api/index.js'
import runtimes from './runtimes/index.js'
import scheduler from './scheduler/index.js'
import security from './security/index.js'
import storage from './storage/index.js'
import systemApi from './system-api/index.js'
import webUi from './web-ui/index.js'

/**
 * The built-in plugins, in the order they are registered. Each declares its `dependencies` by name, so
 * Fastify refuses to start if this order ever breaks them. Services (storage, runtimes, convert, download,
 * scheduler) decorate the app and register no route; every HTTP surface is a `*-api` plugin of its own.
 */
export const BUILTIN_PLUGINS: FastifyPluginAsync[] = [
  security,
  accessLog,
  storage,
  runtimes,
  convert,
  download,
  scheduler,
  lifecycle,
  inference,
  // Before the surfaces: its request counting is a hook on every route.
  metrics,
  healthApi,
  systemApi,
  modelsApi,
  nativeApi,
  openaiApi,
  anthropicApi,
  embeddingsApi,
  pullApi,
  webUi,
]
