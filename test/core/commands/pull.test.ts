// `llamagate pull` without a terminal (a pipe, as in CI): the real binary against a real gateway whose hub is
// the loopback fake. Plain lines, no escape codes; errors as one line and an exit code.
import { createServer } from 'node:net'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { formatBytes } from '../../../core/base/units.js'
import { writeTinySafetensors } from '../../../scripts/fixtures/tiny-model.js'
import { build, tempDir } from '../../helpers/app.js'
import { FakeHub, sha256 } from '../../helpers/fake-hub.js'
import { serveTinyModels } from '../../helpers/inference.js'
import { runCli } from '../../helpers/serve-process.js'
import { realConverter, skipUnlessReady } from '../../plugins/convert/fixtures.js'
import { tinyGgufBytes } from '../../helpers/tiny-gguf.js'

// The SafeTensors pull runs llama.cpp's real converter: skipped, loudly, where its Python packages are missing;
// a failure instead under LLAMAGATE_REQUIRE_CONVERTER=1 (CI).
const skipConversion = skipUnlessReady(t, await (await realConverter(t)).readiness())

async function hub (t: Test): Promise<FakeHub> {
  const fake = await FakeHub.start()
  t.teardown(() => fake.close())
  fake.addRepo('acme/tiny-GGUF', { files: [
    { path: 'README.md', content: Buffer.from('# tiny'), lfs: false },
    { path: 'tiny-Q4_K_M.gguf', content: await tinyGgufBytes(t, 1) },
    { path: 'tiny-Q8_0.gguf', content: await tinyGgufBytes(t, 2) },
  ] })
  return fake
}

/** The gateway on a real socket, its hub the fake one. */
async function gateway (t: Test, fake: FakeHub) {
  const app = await build(t, { hub: { endpoint: fake.url, token: null } })
  return { app, url: await app.listen({ host: '127.0.0.1', port: 0 }) }
}

// eslint-disable-next-line no-control-regex
const ESCAPE = /\x1b/

t.test('a pull in a pipe: plain progress lines, the final line on stdout, exit 0; the model is then listed', async (t) => {
  const fake = await hub(t)
  const { url } = await gateway(t, fake)
  const file = fake.repos.get('acme/tiny-GGUF')!.files.find((f) => f.path === 'tiny-Q4_K_M.gguf')!.content
  const size = formatBytes(file.length)
  // About 1.6 s: long enough for progress lines between the first and the last.
  fake.faults = { bytesPerSecond: 200_000 }
  const { code, stdout, stderr } = await runCli(['pull', 'acme/tiny-GGUF', '--host', url])
  t.equal(code, 0, stderr)
  t.notMatch(stdout + stderr, ESCAPE, 'no escape codes')
  const lines = stderr.trimEnd().split('\n')
  t.equal(lines[0], 'pulling acme/tiny-GGUF')
  t.equal(lines[1], `tiny-Q4_K_M.gguf: downloading ${size}`)
  t.match(lines.at(-1), new RegExp(`^tiny-Q4_K_M\\.gguf: done \\(${size} in [\\d.]+s, [\\d.]+ KiB/s\\)$`))
  const progress = lines.slice(2, -1)
  t.ok(progress.length >= 1 && progress.length <= 3, `one to three progress lines, no more:\n${stderr}`)
  const percents = progress.map((line) => {
    const match = new RegExp(`^tiny-Q4_K_M\\.gguf: (\\d+)% \\([\\d.]+ KiB of ${size}, [\\d.]+ KiB/s\\)$`).exec(line)
    t.ok(match, `a progress line: ${line}`)
    return Number(match?.[1])
  })
  t.same(percents.map((p) => Math.floor(p / 25)), [...new Set(percents.map((p) => Math.floor(p / 25)))].sort(), `one line per quarter passed, in order (${percents.join(', ')})`)
  t.ok(percents.every((p) => p >= 25 && p < 100))
  t.match(stdout, new RegExp(`^pulled acme/tiny-GGUF \\(1 file, ${size}\\) in \\d+(\\.\\d)?s\\n$`))

  const tags = await (await fetch(`${url}/api/tags`)).json() as { models: Array<{ name: string, size: number }> }
  t.same(tags.models.map((m) => [m.name, m.size]), [['acme/tiny-GGUF', file.length]], '/api/tags lists it')

  // A second pull of a model already there: nothing is fetched, and it says so.
  const before = fake.cdnBytes.get(sha256(file))
  const again = await runCli(['pull', 'acme/tiny-GGUF', '--host', url])
  t.equal(again.code, 0, again.stderr)
  t.equal(again.stderr, `pulling acme/tiny-GGUF\ntiny-Q4_K_M.gguf: already here (${size})\n`)
  t.equal(again.stdout, `acme/tiny-GGUF is up to date (1 file, ${size}, nothing to download)\n`)
  t.equal(fake.cdnBytes.get(sha256(file)), before, 'no byte fetched again')
})

t.test('errors: one line on stderr and exit 1; bad usage: exit 2 with the usage', async (t) => {
  const fake = await hub(t)
  const { url } = await gateway(t, fake)

  const missing = await runCli(['pull', 'acme/missing', '--host', url])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /^llamagate pull: repository acme\/missing was not found on http:\/\/127\.0\.0\.1:\d+[^\n]*\n$/, 'an unknown repository: one line')
  t.equal(missing.stdout, '')

  const badName = await runCli(['pull', '../evil', '--host', url])
  t.equal(badName.code, 1)
  t.equal(badName.stderr, 'llamagate pull: invalid model name "../evil": expected <owner>/<name>, each part 1-96 characters of A-Z a-z 0-9 . _ -\n')
  const badTag = await runCli(['pull', 'acme/tiny-GGUF:a/b', '--host', url])
  t.equal(badTag.code, 1)
  t.match(badTag.stderr, /^llamagate pull: invalid model name "acme\/tiny-GGUF:a\/b"[^\n]*\n$/)

  const flag = await runCli(['pull', 'acme/tiny-GGUF', '--bogus', '--host', url])
  t.equal(flag.code, 2)
  t.match(flag.stderr, /^llamagate pull: Unknown option '--bogus'/)
  t.match(flag.stderr, /usage: llamagate pull <owner>\/<name>\[:tag\]/)
  const none = await runCli(['pull', '--host', url])
  t.equal(none.code, 2)
  t.match(none.stderr, /^llamagate pull: expected one model: <owner>\/<name>\[:tag\]\n/)
  const dtype = await runCli(['pull', 'acme/tiny-GGUF', '--dtype', 'q9_z', '--host', url])
  t.equal(dtype.code, 2)
  t.match(dtype.stderr, /^llamagate pull: --dtype "q9_z" is not a GGUF type the converter makes; one of f32, f16, bf16, q8_0, q4_0, /)
  t.equal(fake.cdnBytes.size, 0, 'none of them downloaded anything')

  // A port nothing listens on.
  const closed = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
  const down = await runCli(['pull', 'acme/tiny-GGUF', '--host', `127.0.0.1:${closed}`])
  t.equal(down.code, 1)
  t.equal(down.stderr, `llamagate pull: could not reach llamagate at http://127.0.0.1:${closed} (connection refused). Is it running? Start it with: llamagate serve (or point at another with --host URL or LLAMAGATE_HOST)\n`)
})

t.test('a SafeTensors pull: the conversion and quantization steps as lines, then the final line', { skip: skipConversion }, async (t) => {
  const dir = await tempDir(t)
  await writeTinySafetensors({ dir })
  const fake = await FakeHub.start()
  t.teardown(() => fake.close())
  const files = await Promise.all((await readdir(dir)).map(async (f) => ({ path: f, content: await readFile(join(dir, f)), lfs: f.endsWith('.safetensors') || f === 'tokenizer.model' })))
  fake.addRepo('acme/tiny-hf', { files })
  const server = await serveTinyModels(t, [], { hub: { endpoint: fake.url } })

  const { code, stdout, stderr } = await runCli(['pull', 'acme/tiny-hf', '--dtype', 'Q4_K_M', '--host', server.url])
  t.equal(code, 0, stderr)
  t.notMatch(stdout + stderr, ESCAPE)
  const lines = stderr.trimEnd().split('\n')
  t.equal(lines[0], 'pulling acme/tiny-hf')
  for (const f of files) t.ok(lines.includes(`${f.path}: downloading ${formatBytes(f.content.length)}`), `a line as ${f.path} starts`)
  const steps = lines.slice(lines.indexOf('converting to gguf (f16)'))
  const quantizing = steps.indexOf('quantizing q4_k_m')
  t.ok(quantizing > 0, `the conversion, then the quantization:\n${stderr}`)
  t.match(steps.slice(1, quantizing - 1), Array(Math.max(0, quantizing - 2)).fill(/^converting to gguf \(f16\): \d+%$/), 'between them, only the conversion\'s progress')
  t.match(steps[quantizing - 1], /^converting to gguf \(f16\): done in [\d.]+m?s$/)
  t.match(lines.at(-1), /^quantizing q4_k_m: done in [\d.]+m?s$/)
  t.ok(steps.length <= 10, 'a few lines for the steps, no more')
  const total = files.reduce((sum, f) => sum + f.content.length, 0)
  t.match(stdout, new RegExp(`^pulled acme/tiny-hf \\(${files.length} files, ${formatBytes(total)}\\) in [\\d.]+s\\n$`))
  t.same(server.app.store.get('acme/tiny-hf').manifest.variants.map((v) => v.dtype).sort(), ['f16', 'q4_k_m'], 'both variants were made and recorded')
})
