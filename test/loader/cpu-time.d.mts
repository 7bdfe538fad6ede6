/** This process's CPU and its reaped children's, in seconds; null where /proc is not there. */
export function cpuSeconds (): number | null
/** In a test file's own process (a `*.test.ts` tap runs), writes its CPU seconds to `.tap/cpu-times` at exit. */
export function recordCpuTime (): void
