import { randomUUID } from 'node:crypto'
import { cp, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import tap, { type Test } from 'tap'
import { Converter, type ConverterOptions } from '../../../plugins/convert/converter.js'
import type { ConverterReadiness } from '../../../plugins/convert/python-env.js'
import { writeTinySafetensors } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { once } from '../../helpers/once.js'
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

/**
 * One real converter for the test process (a file run alone, or the folder's group): its readiness check imports
 * torch (about 2 s of CPU), and a converter remembers a ready answer, so the process pays for one check. Not for
 * tests that close or cancel it.
 */
export const sharedConverter = once(() => realConverter(tap))

const template = once(async () => (await writeTinySafetensors({ dir: await tempDir(tap) })).dir)

/** A fresh copy of the tiny Llama SafeTensors checkpoint (generated once per test process, then copied). */
export async function checkpoint (t: Test): Promise<string> {
  const dir = await tempDir(t)
  await cp(await template(), dir, { recursive: true })
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

const SYSTEM_PYTHON = '/usr/bin/python3'

/**
 * What the stand-in answers to the import probe: the system Python's own answer, taken from the shared
 * converter's check (so that each stand-in does not import torch again); where that Python is not the ready
 * one, the probe runs it after all.
 */
async function probeAnswer (): Promise<string> {
  const r = await (await sharedConverter()).readiness()
  if (!r.ready || r.python !== SYSTEM_PYTHON) return `exec ${SYSTEM_PYTHON} "$@"`
  return `echo '${JSON.stringify({ ok: true, papered: r.papered })}'; exit 0`
}

/**
 * A stand-in interpreter: passes the import probe as the real Python does, and for a conversion runs `body`
 * (sh) with $OUT set to the --outfile argument.
 */
export async function fakePython (t: Test, body: string): Promise<string> {
  const file = join(await tempDir(t), 'python')
  await writeFile(file, [
    '#!/bin/sh',
    `case "$*" in *--probe*) ${await probeAnswer()};; esac`,
    'OUT=$(printf "%s\\n" "$@" | grep -A1 -x -- --outfile | tail -1)',
    body,
    '',
  ].join('\n'), { mode: 0o755 })
  return file
}

/** Set (to 1) where the converter must be ready: CI (.ci/run) sets it, so that CI never skips these tests. */
export const REQUIRE_CONVERTER = 'LLAMAGATE_REQUIRE_CONVERTER'

/**
 * Whether the conversion tests can run here: false when the converter is ready (the interpreter with its
 * packages, llama.cpp's source tree and llama-quantize), else the reason, for `{ skip }` or an early return.
 * Not ready is a failure of `t`, with the reason and what to install, where LLAMAGATE_REQUIRE_CONVERTER=1
 * (CI); elsewhere it is a skip, said loudly, so that a developer without the Python packages can still run
 * the suite.
 */
export function skipUnlessReady (t: Test, readiness: ConverterReadiness): string | false {
  if (readiness.ready && readiness.quantize) return false
  const reason = `${readiness.problems.join('; ') || 'no llama-quantize'}. To run them: ${readiness.fix ?? 'build the runtime with llama-quantize (npm run runtime:build)'}`
  if (process.env[REQUIRE_CONVERTER] === '1') {
    t.fail(`the SafeTensors converter is not ready, and ${REQUIRE_CONVERTER}=1 says it must be: ${reason}`)
    return `converter not ready: ${reason}`
  }
  const message = `SafeTensors conversion tests SKIPPED: ${reason}`
  process.stderr.write(`\n*** ${message} ***\n\n`)
  t.pass('the SafeTensors converter is ready', { skip: message })
  return message
}
