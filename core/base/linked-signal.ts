/**
 * An abort signal that aborts when any of its sources does (with that source's reason), until `unlink()`. Not
 * `AbortSignal.any`: on Node 20 each signal it makes stays on its sources until they are collected, and an
 * instance's signal lives as long as its model stays loaded (docs/benchmarks.md, "Linked signals").
 */
export interface LinkedSignal {
  readonly signal: AbortSignal
  /** Detaches from the sources: nothing of this signal is left on them. Idempotent. */
  unlink(): void
}

export function linkedSignal (sources: readonly AbortSignal[]): LinkedSignal {
  const controller = new AbortController()
  const links: Array<{ source: AbortSignal, onAbort: () => void }> = []
  const unlink = (): void => {
    for (const { source, onAbort } of links.splice(0)) source.removeEventListener('abort', onAbort)
  }
  for (const source of sources) {
    if (source.aborted) {
      unlink()
      controller.abort(source.reason)
      break
    }
    const onAbort = (): void => {
      unlink()
      controller.abort(source.reason)
    }
    source.addEventListener('abort', onAbort, { once: true })
    links.push({ source, onAbort })
  }
  return { signal: controller.signal, unlink }
}
