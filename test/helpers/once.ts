/**
 * `make`, run on the first call only: every later call gets the same promise. For what a test file sets up
 * once and shares between its tests (a fixture, a process); made with the file's own `t` so that it goes when
 * the file ends.
 */
export function once<T> (make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined
  return () => (made ??= make())
}
