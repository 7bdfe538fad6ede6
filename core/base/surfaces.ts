import type { ErrorReply } from './error-shapes.js'

// What a plugin says of its surface; the registry the gateway asks by path is surface-registry.ts.

/** How a surface's clients read an error: its body, and the SSE event a stream's error event is sent as. */
export interface ErrorShape {
  body(reply: ErrorReply): unknown
  /** The `event:` name of a stream's error event, where the surface names its events; unset: none. */
  eventName?: string
}

/**
 * What a plugin says about the paths it answers: the label its requests are counted by (metrics, the access log:
 * few values, whatever the paths) and, where its clients read errors in a shape of their own, that shape.
 * A path is exact (`/api/embed`) or a prefix ending in `*` (`/v1/*`); the longest that matches wins.
 */
export interface SurfaceSpec {
  label: string
  paths: readonly string[]
  errorShape?: ErrorShape
}
