import type { RuntimeBuild } from '../types.js'
import type { RuntimeSpawnOptions } from './spawn-options.js'

/**
 * llama-server's command line for a spawn, from what its build supports. `host` is a loopback address or a Unix
 * socket path; the port is always given, since the default changes between releases (8080, then 9931).
 */
export function serverArgs (o: RuntimeSpawnOptions, build: RuntimeBuild, listen: { host: string, port: number }): string[] {
  const f = build.features
  const args = ['--model', o.modelPath, '--host', listen.host, '--port', String(listen.port), '--alias', o.alias,
    '--ctx-size', String(o.ctxSize), '--parallel', String(o.parallel)]
  if (o.nGpuLayers !== undefined) args.push('--n-gpu-layers', String(o.nGpuLayers))
  if (o.threads !== undefined) args.push('--threads', String(o.threads))
  if (o.cacheTypeK) args.push('--cache-type-k', o.cacheTypeK)
  if (o.cacheTypeV) args.push('--cache-type-v', o.cacheTypeV)
  if (o.chatTemplate) args.push('--chat-template', o.chatTemplate)
  if (o.embeddings) args.push('--embeddings')
  if (o.pooling) args.push('--pooling', o.pooling)
  if (o.reranking) args.push('--reranking')
  if (o.batchSize !== undefined) args.push('--batch-size', String(o.batchSize), '--ubatch-size', String(o.batchSize))
  if (o.projectorPath) args.push('--mmproj', o.projectorPath)
  if (o.rpcEndpoints?.length) args.push('--rpc', o.rpcEndpoints.join(','))
  if (o.tensorSplit?.length) args.push('--tensor-split', o.tensorSplit.join(','))
  if (o.slotSavePath) args.push('--slot-save-path', o.slotSavePath)
  // Its Prometheus statistics (GET /metrics), which the gateway's /metrics re-exposes per model. Not looked up
  // in --help like the flags below: every llama-server that has --jinja has had --metrics longer.
  args.push('--metrics')
  if (f.jinja) args.push('--jinja')
  if (f.noWebui) args.push('--no-webui')
  // Flash attention pays off on GPUs; `auto` lets llama-server decide per device.
  if (f.flashAttn && build.backend !== 'cpu') args.push('--flash-attn', 'auto')
  // On a CPU the warm-up (a decode of two tokens before serving) delays every cold start and makes no request
  // faster; on GPUs it takes one-time set-up off the first request, so it stays there.
  if (f.noWarmup && build.backend === 'cpu') args.push('--no-warmup')
  // --fit (on by default) loads the model's metadata and vocabulary once more before the real load, to fit unset
  // options into device memory: a CPU has none to fit, and the context is always given. Half a CPU start's work.
  if (f.fit && build.backend === 'cpu') args.push('--fit', 'off')
  return [...args, ...(o.extraArgs ?? [])]
}
