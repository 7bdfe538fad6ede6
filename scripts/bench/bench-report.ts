const HEADER = ['date', 'machine', 'llama_cpp', 'backend', 'devices', 'settings'] as const

/**
 * A run's report merged into the file's earlier figures. A run of every scenario (or into an empty file) writes the
 * header; a run of some scenarios keeps the file's header, which dates its other sections, and stamps each section it
 * wrote with its own date, llama.cpp and settings.
 */
export function mergeReport (before: Record<string, unknown>, report: Record<string, unknown>, everything: boolean): Record<string, unknown> {
  if (everything || Object.keys(before).length === 0) return { ...before, ...report }
  const stamp = { date: report.date, llama_cpp: report.llama_cpp, settings: report.settings }
  const merged = { ...before }
  for (const [key, value] of Object.entries(report)) {
    if ((HEADER as readonly string[]).includes(key)) continue
    merged[key] = value !== null && typeof value === 'object' && !Array.isArray(value) ? { ...stamp, ...value } : value
  }
  return merged
}
