import { nativeErrorBody } from './error-shapes.js'
import type { ErrorShape, SurfaceSpec } from './surfaces.js'

const NATIVE: ErrorShape = { body: nativeErrorBody }

interface Entry { pattern: string, prefix: boolean, spec: SurfaceSpec }

/**
 * The surfaces the plugins registered, asked by path. The core knows no surface itself: a path no plugin claims is
 * counted as `other`, and its errors take the native shape (`{"error": "..."}`), the contract's default.
 */
export class Surfaces {
  private readonly entries: Entry[] = []

  register (spec: SurfaceSpec): void {
    for (const path of spec.paths) {
      const prefix = path.endsWith('*')
      this.entries.push({ pattern: prefix ? path.slice(0, -1) : path, prefix, spec })
    }
    // Longest first: /v1/messages before /v1/*.
    this.entries.sort((a, b) => b.pattern.length - a.pattern.length)
  }

  /** The label requests to a path (a route's pattern, or the requested URL) are counted by. */
  labelOf (path: string): string {
    return this.find(path, () => true)?.label ?? 'other'
  }

  /** The error shape of a URL's surface. */
  errorShapeOf (url: string): ErrorShape {
    return this.find(url, (spec) => spec.errorShape !== undefined)?.errorShape ?? NATIVE
  }

  private find (url: string, wanted: (spec: SurfaceSpec) => boolean): SurfaceSpec | undefined {
    const query = url.indexOf('?')
    const path = query === -1 ? url : url.slice(0, query)
    return this.entries.find((e) => wanted(e.spec) && (e.prefix ? path.startsWith(e.pattern) : path === e.pattern))?.spec
  }
}
