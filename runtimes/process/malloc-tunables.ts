const HUGE_PAGES = 'glibc.malloc.hugetlb=1'

/**
 * GLIBC_TUNABLES for a llama-server: `inherited` (the gateway's own, where an admin has the last word) with glibc's
 * allocator asked to back its heap with transparent huge pages, unless `inherited` already says how. A load builds
 * a vocabulary's maps out of hundreds of thousands of small allocations, and on 4 KiB pages every first touch is a
 * fault and every lookup a TLB miss: start to listening 10-16 % shorter, generation ~6 % faster, ~9 MB more resident
 * (docs/benchmarks.md). glibc before 2.35, other C libraries and kernels without THP ignore the setting.
 */
export function mallocTunables (inherited: string | undefined): string {
  if (inherited === undefined || inherited.trim() === '') return HUGE_PAGES
  if (/(^|:)glibc\.malloc\.hugetlb=/.test(inherited)) return inherited
  return `${inherited}:${HUGE_PAGES}`
}

/** The allocator's variables for a llama-server: GLIBC_TUNABLES on Linux, where glibc is the C library; none elsewhere. */
export function allocatorEnv (platform: NodeJS.Platform = process.platform, inherited = process.env.GLIBC_TUNABLES): Record<string, string> {
  return platform === 'linux' ? { GLIBC_TUNABLES: mallocTunables(inherited) } : {}
}
