// `llamagate pull` in a real terminal (tmux), as a person sees it: the bars move and end at 100%, the final
// line; Ctrl-C stops a pull cleanly (exit 130, nothing left running) and the next pull resumes it with a Range
// request rather than starting over.
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { readdir, readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { formatBytes } from '../../../core/base/units.js'
import { writeTinySafetensors } from '../../../scripts/fixtures/tiny-model.js'
import { tempDir } from '../../helpers/app.js'
import { FakeHub } from '../../helpers/fake-hub.js'
import { serveTinyModels } from '../../helpers/inference.js'
import { CLI, processesWithMark } from '../../helpers/serve-process.js'
import { startTerminal } from '../../helpers/tmux.js'
import { until } from '../../helpers/until.js'
import { skipUnlessReady } from '../../plugins/convert/fixtures.js'
import { tinyGgufBytes } from '../../helpers/tiny-gguf.js'

// One fake hub and one gateway (on a real socket, the test runtime's llama-quantize for the converter) for the
// whole file: each test pulls a repository of its own, at the speed it sets.
const fake = await FakeHub.start()
t.teardown(() => fake.close())
fake.addRepo('acme/split-GGUF', { files: [
  { path: 'big-Q4_K_M-00001-of-00003.gguf', content: await tinyGgufBytes(t, 1) },
  { path: 'big-Q4_K_M-00002-of-00003.gguf', content: Buffer.alloc(200_000, 2) },
  { path: 'big-Q4_K_M-00003-of-00003.gguf', content: Buffer.alloc(150_000, 3) },
] })
fake.addRepo('acme/other-GGUF', { files: [{ path: 'other-Q4_K_M.gguf', content: await tinyGgufBytes(t, 2) }] })
const { app, url } = await serveTinyModels(t, [], { hub: { endpoint: fake.url, token: null } })

/** `llamagate pull` in a fresh terminal; every process it starts carries `mark`. */
async function pullInTerminal (t: Test, model: string, mark: string, ...flags: string[]) {
  return startTerminal(t, [process.execPath, CLI, 'pull', model, '--host', url, ...flags], { LLAMAGATE_TEST_MARK: mark })
}

/** The percentage a file's bar shows on the screen, or null while it has none. */
function percentOf (screen: string, file: string): number | null {
  const match = new RegExp(`${file.replace(/\./g, '\\.')}\\s+[█░]+\\s+(\\d+)% │`).exec(screen)
  return match ? Number(match[1]) : null
}

t.test('the bars move, one per file, with bytes, speed and time left, and end at 100%; then the final line', async (t) => {
  // 0.67 MB at 100 kB/s: about 7 s, so that the bars are seen between their ends on a loaded machine too.
  fake.faults = { bytesPerSecond: 100_000 }
  const term = await pullInTerminal(t, 'acme/split-GGUF', randomUUID())
  const files = fake.repos.get('acme/split-GGUF')!.files.map((f) => f.path)
  const seen = new Map<string, Set<number>>(files.map((f) => [f, new Set()]))
  let moving = ''
  await until('a bar on the screen at two different percentages', async () => {
    const screen = await term.screen()
    for (const file of files) {
      const percent = percentOf(screen, file)
      if (percent !== null && percent > 0 && percent < 100) {
        seen.get(file)!.add(percent)
        moving = screen
      }
    }
    return [...seen.values()].some((s) => s.size >= 2)
  }, 60_000, 100)
  const [file, percents] = [...seen].find(([, s]) => s.size >= 2)!
  t.pass(`the bar of ${file} moved: ${[...percents].join('%, ')}%`)
  t.match(moving, /^big-Q4_K_M-0000\d-of-00003\.gguf\s+█*░+\s+\d+% │ [\d.]+ (bytes|KiB) \/ \d+ KiB\s+│\s+[\d.]+ (bytes|KiB|MiB)\/s │ \d+s left/m, 'name, bar, percent, bytes done of the size, speed, time left')
  t.match(moving, /^pulling acme\/split-GGUF$/m, 'a line above the bars says what is pulled')

  const total = fake.repos.get('acme/split-GGUF')!.files.reduce((sum, f) => sum + f.content.length, 0)
  const end = await term.waitFor(new RegExp(`^pulled acme/split-GGUF \\(3 files, ${formatBytes(total)}\\) in [\\d.]+s$`, 'm'))
  t.equal(await term.exited(), 0)
  for (const file of files) {
    t.equal(percentOf(end, file), 100, `${file}: its own bar, at 100%`)
  }
  t.match(end, /^big-Q4_K_M-00003-of-00003\.gguf\s+█+\s+100% │ 146 KiB \/ 146 KiB\s+│\s+[\d.]+ KiB\/s │ done in [\d.]+s$/m, 'a whole file says so')
})

t.test('Ctrl-C during a pull: one line saying how to resume, exit 130, nothing left running; the next pull resumes with Range', async (t) => {
  const file = fake.repos.get('acme/other-GGUF')!.files[0]!.content
  // About 8 s for the file: time to press Ctrl-C half-way.
  fake.faults = { bytesPerSecond: 40_000 }
  const mark = randomUUID()
  const term = await pullInTerminal(t, 'acme/other-GGUF', mark)
  await until('the bar to pass 20%', async () => (percentOf(await term.screen(), 'other-Q4_K_M.gguf') ?? 0) >= 20, 60_000, 100)
  await term.keys('C-c')
  const screen = await term.waitFor(/^interrupted: the partial download of acme\/other-GGUF is kept; run the same command to resume it$/m)
  t.equal(await term.exited(), 130, 'exit status 130')
  t.notMatch(screen, /pulled acme/, 'no final line')
  t.same(await processesWithMark(mark), [], 'no process of the pull left')
  await until('the server to stop the download once its client left', () => !app.puller.isPulling('acme/other-GGUF'))
  const partial = join(app.config.modelsDir, 'acme', 'other-GGUF', 'other-Q4_K_M.gguf.partial')
  t.ok(existsSync(partial), 'the partial download is kept')
  const kept = (await stat(partial)).size
  t.ok(kept > 0 && kept < file.length, `${kept} of ${file.length} bytes kept`)
  t.equal(app.store.find('acme/other-GGUF'), null, 'nothing half-pulled is listed')

  fake.faults = { bytesPerSecond: 200_000 }
  const ranges = fake.cdnRanges.length
  const again = await pullInTerminal(t, 'acme/other-GGUF', randomUUID())
  const end = await again.waitFor(/^pulled acme\/other-GGUF \(1 file, 316 KiB\) in [\d.]+s$/m)
  t.equal(await again.exited(), 0)
  t.equal(percentOf(end, 'other-Q4_K_M.gguf'), 100)
  const resumed = fake.cdnRanges.slice(ranges).map((r) => Number(/^bytes=(\d+)-$/.exec(r)?.[1]))
  t.equal(resumed.length, 1, `one ranged request (${fake.cdnRanges.slice(ranges).join(', ')})`)
  t.ok(resumed[0]! > 0 && resumed[0]! <= kept, `it asked for the rest, from byte ${resumed[0]} (the partial file held ${kept})`)
  t.ok(app.store.find('acme/other-GGUF'), 'the model is whole and listed')
})

t.test('a SafeTensors pull: the conversion and the quantization have bars of their own', async (t) => {
  // llama.cpp's real converter: skipped, loudly, where its Python packages are missing; a failure instead under
  // LLAMAGATE_REQUIRE_CONVERTER=1 (CI). The gateway's own check, which the pull then reuses.
  if (skipUnlessReady(t, await app.converter.readiness())) return
  fake.faults = {}
  const dir = await tempDir(t)
  await writeTinySafetensors({ dir })
  fake.addRepo('acme/tiny-hf', { files: await Promise.all((await readdir(dir)).map(async (f) => ({ path: f, content: await readFile(join(dir, f)) }))) })
  const term = await pullInTerminal(t, 'acme/tiny-hf', randomUUID(), '--dtype', 'q4_k_m')
  const end = await term.waitFor(/^pulled acme\/tiny-hf \(5 files, [\d.]+ KiB\) in [\d.]+s$/m)
  t.equal(await term.exited(), 0)
  t.match(end, /^model\.safetensors\s+█+\s+100% │[^\n]*\nconfig\.json\s+█+\s+100% │[^\n]*\n(.*100% │.*\n){3}converting to gguf \(f16\)\s+█+\s+100% │ done in [\d.]+m?s\nquantizing q4_k_m\s+█+\s+100% │ done in [\d.]+m?s\npulled /m,
    'the five downloads, then the conversion and the quantization, each a bar of its own')
})
