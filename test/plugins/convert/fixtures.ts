import { randomUUID } from 'node:crypto'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Test } from 'tap'
import { Converter, type ConverterOptions } from '../../../plugins/convert/converter.js'
import type { ConverterReadiness } from '../../../plugins/convert/python-env.js'
import { writeTinySafetensors } from '../../../scripts/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { cpuRuntime } from '../../helpers/runtime.js'
import { processesWithMark } from '../../helpers/serve-process.js'

/** The llama.cpp tree the test runtime was built from (its build-info.json names it). */
export async function runtimeSource (): Promise<string | null> {
  const runtime = await cpuRuntime()
  try {
    return (JSON.parse(await readFile(join(runtime.binDir, '..', 'build-info.json'), 'utf8')) as { source?: string }).source ?? null
  } catch {
    return null
  }
}

/** A converter on the real tools: the test runtime's llama-quantize and source tree. */
export async function realConverter (t: Test, overrides: Partial<ConverterOptions> = {}): Promise<Converter> {
  const runtime = await cpuRuntime()
  return new Converter({
    python: null,
    llamaCppSrc: null,
    buildSource: await runtimeSource(),
    dataDir: await tempDir(t),
    quantizePath: runtime.quantizePath,
    timeoutMs: 120_000,
    ...overrides,
  })
}

/** A fresh copy of the tiny Llama SafeTensors checkpoint. */
export async function checkpoint (t: Test): Promise<string> {
  const dir = await tempDir(t)
  await writeTinySafetensors({ dir })
  return dir
}

/** Anything a conversion may leave behind: temporaries and GGUF files. */
export async function leftovers (dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f.includes('.tmp-') || f.endsWith('.gguf'))
}

/**
 * Marks every process this test starts from now on (tools inherit the environment), so that a test can
 * look for survivors in /proc.
 */
export function markProcesses (t: Test): () => Promise<number[]> {
  const mark = randomUUID()
  const before = process.env.LLAMAGATE_TEST_MARK
  process.env.LLAMAGATE_TEST_MARK = mark
  t.teardown(() => { if (before === undefined) delete process.env.LLAMAGATE_TEST_MARK; else process.env.LLAMAGATE_TEST_MARK = before })
  return async () => (await processesWithMark(mark)).filter((pid) => pid !== process.pid)
}

/**
 * A stand-in interpreter: passes the import probe with the real Python, and for a conversion runs `body`
 * (sh) with $OUT set to the --outfile argument.
 */
export async function fakePython (t: Test, body: string): Promise<string> {
  const file = join(await tempDir(t), 'python')
  await writeFile(file, [
    '#!/bin/sh',
    'case "$*" in *--probe*) exec /usr/bin/python3 "$@";; esac',
    'OUT=$(printf "%s\\n" "$@" | grep -A1 -x -- --outfile | tail -1)',
    body,
    '',
  ].join('\n'), { mode: 0o755 })
  return file
}

/**
 * Says loudly that the conversion tests are skipped and what to install; returns the skip reason (false
 * when ready). CI installs the packages, so CI never skips here.
 */
export function skipUnlessReady (t: Test, readiness: ConverterReadiness): string | false {
  if (readiness.ready && readiness.quantize) return false
  const message = `SafeTensors conversion tests SKIPPED: ${readiness.problems.join('; ')}. To run them: ${readiness.fix}`
  process.stderr.write(`\n*** ${message} ***\n\n`)
  t.comment(message)
  return message
}
