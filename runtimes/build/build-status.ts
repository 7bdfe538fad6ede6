import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { isAlive } from '../../core/base/process-alive.js'
import type { Backend } from '../types.js'

/** `interrupted`: the file says building, but the process that wrote it is gone (killed, or the machine restarted). */
export type GpuBuildState = 'building' | 'failed' | 'built' | 'interrupted'

/** A GPU runtime's background build, as GET /api/runtimes and `llamagate doctor` show it. */
export interface GpuBuildStatus {
  backend: Backend
  state: GpuBuildState
  /** The build's current step, in words (`[2/3] building llama-server, ...`). */
  step: string
  /** Compile steps done and in all, from ninja's `[n/m]` (or make's percentage); null before the compiling starts. */
  completed: number | null
  total: number | null
  started_at: string
  finished_at: string | null
  error: string | null
  /** The file holding the build's whole output. */
  log: string
}

/** What the status file holds besides: who builds, and with which recipe (a failure is not retried with the same one). */
export interface GpuBuildRecord extends GpuBuildStatus { pid: number, recipe: number }

/** `<dataDir>/build`: CMake's build folders, and each background build's log and status beside them. */
export function buildFolder (dataDir: string): string {
  return join(dataDir, 'build')
}

export function buildLogPath (dataDir: string, backend: Backend): string {
  return join(buildFolder(dataDir), `${backend}-build.log`)
}

export function buildStatusPath (dataDir: string, backend: Backend): string {
  return join(buildFolder(dataDir), `${backend}-build.json`)
}

/**
 * The status another process (or an earlier start) left, null when there is none or it cannot be read.
 * A `building` status whose process is gone reads as `interrupted`.
 */
export function readBuildRecord (dataDir: string, backend: Backend): GpuBuildRecord | null {
  let record: GpuBuildRecord
  try {
    record = JSON.parse(readFileSync(buildStatusPath(dataDir, backend), 'utf8')) as GpuBuildRecord
  } catch {
    return null
  }
  if (typeof record !== 'object' || record === null || record.backend !== backend) return null
  if (record.state === 'building' && !isAlive(record.pid)) return { ...record, state: 'interrupted' }
  return record
}

/**
 * Writes the status whole (written beside, then renamed), so that a reader never sees half of it. Synchronous: a
 * few hundred bytes, in order with the progress lines that cause it.
 */
export function writeBuildRecord (dataDir: string, record: GpuBuildRecord): void {
  const file = buildStatusPath(dataDir, record.backend)
  writeFileSync(`${file}.tmp-${process.pid}`, `${JSON.stringify(record, null, 2)}\n`)
  renameSync(`${file}.tmp-${process.pid}`, file)
}

/** The public part of a record (GET /api/runtimes' `build`). */
export function publicStatus (record: GpuBuildRecord): GpuBuildStatus {
  const { pid: _pid, recipe: _recipe, ...status } = record
  return status
}

/**
 * Progress from a line of the build's output: ninja's `[12/345] Building CXX object ...`, or make's `[ 45%] ...`
 * (as 45 of 100). Null for any other line.
 */
export function parseProgress (line: string): { completed: number, total: number } | null {
  const ninja = /^\s*\[(\d+)\/(\d+)\]/.exec(line)
  if (ninja) return { completed: Number(ninja[1]), total: Number(ninja[2]) }
  const make = /^\s*\[\s*(\d{1,3})%\]/.exec(line)
  return make ? { completed: Number(make[1]), total: 100 } : null
}
