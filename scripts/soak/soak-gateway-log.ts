import { readFile } from 'node:fs/promises'

export interface LogSummary { lines: number, loads: number, evictions: number, runtime_died: number, unloads: number, by_level: Record<string, number>, warnings_and_errors: Record<string, number> }

/** What the gateway's own log says happened (pino JSON lines). */
export async function gatewayLog (file: string): Promise<LogSummary> {
  const summary: LogSummary = { lines: 0, loads: 0, evictions: 0, runtime_died: 0, unloads: 0, by_level: {}, warnings_and_errors: {} }
  const levels: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' }
  for (const line of (await readFile(file, 'utf8')).split('\n')) {
    if (line.trim() === '') continue
    summary.lines++
    let entry: { level?: number, msg?: string, reason?: string }
    try { entry = JSON.parse(line) } catch { summary.warnings_and_errors[`(not JSON) ${line.slice(0, 100)}`] = (summary.warnings_and_errors[`(not JSON) ${line.slice(0, 100)}`] ?? 0) + 1; continue }
    const level = levels[entry.level ?? 30] ?? String(entry.level)
    summary.by_level[level] = (summary.by_level[level] ?? 0) + 1
    const msg = entry.msg ?? ''
    if (msg === 'model loaded') summary.loads++
    else if (msg.startsWith('unloading an idle model to make room')) summary.evictions++
    else if (msg === 'runtime died') summary.runtime_died++
    else if (msg === 'model unloaded') summary.unloads++
    if ((entry.level ?? 30) >= 40) {
      const key = `${level}: ${msg.replace(/\d+/g, 'N').slice(0, 120)}`
      summary.warnings_and_errors[key] = (summary.warnings_and_errors[key] ?? 0) + 1
    }
  }
  return summary
}
