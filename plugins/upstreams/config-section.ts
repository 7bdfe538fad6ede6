import { Type } from 'typebox'
import { Size } from '../../core/config/config-schema.js'
import { configSection } from '../../core/config/config-section.js'
import { upstreamConfigs, UpstreamEntry, type UpstreamConfig, type UpstreamLimits } from './upstream-config.js'

declare module '../../core/config/resolved-config.js' {
  interface Config {
    /** Other servers whose models are served here as if local (`upstreams`). */
    upstreams: UpstreamConfig[]
    /** Where a request for a model several upstreams list goes (`upstream_routing`): by its conversation's prefix, or in turns. */
    upstreamRouting: 'prefix' | 'round_robin'
  }
  interface ConfigLimits {
    /** What is read of an upstream's answers (`limits.upstream_*`); each upstream's config carries them too. */
    upstream: UpstreamLimits
  }
}

/** config.yaml's `upstreams`, `upstream_routing` and `limits.upstream_*`. */
export const section = configSection({
  plugin: 'upstreams',
  doc: 'docs/scaling.md',
  keys: {
    upstreams: Type.Array(UpstreamEntry, { default: [] }),
    upstream_routing: Type.Union([Type.Literal('prefix'), Type.Literal('round_robin')], {
      default: 'prefix', description: 'a model several upstreams list: each conversation to the one its prefix maps to (their prompt caches stay warm), or in turns',
    }),
  },
  limits: {
    upstream_answer_size: Type.Union([Size], { default: '64MiB', description: 'the most bytes of one answer read from an upstream, whole or streamed; past it the request ends with an error and the connection is dropped' }),
    upstream_error_size: Type.Union([Size], { default: '64KiB', description: 'the most bytes of an upstream\'s error answer read; the rest is not' }),
    upstream_line_size: Type.Union([Size], { default: '8MiB', description: 'the longest line, event or chunk of an upstream\'s stream held whole' }),
    upstream_models: Type.Integer({ minimum: 1, default: 10000, description: 'the most models one upstream may list; a longer list fails its probe' }),
  },
  resolve (raw, { size, problem }) {
    const upstream: UpstreamLimits = {
      answerBytes: size('limits.upstream_answer_size', raw.limits.upstream_answer_size),
      errorBytes: size('limits.upstream_error_size', raw.limits.upstream_error_size),
      lineBytes: size('limits.upstream_line_size', raw.limits.upstream_line_size),
      models: raw.limits.upstream_models,
    }
    const problems: string[] = []
    const upstreams = upstreamConfigs(raw.upstreams, upstream, problems)
    problems.forEach(problem)
    return { upstreams, upstreamRouting: raw.upstream_routing, limits: { upstream } }
  },
})
