import { randomFillSync } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { execa } from 'execa'
import { startGatewayProcess } from '../gateway-process.js'
import { parseSize } from '../../core/base/units.js'
import { FakeHub } from '../../test/helpers/fake-hub.js'
import { writeTinyGguf } from '../fixtures/tiny-model.js'
import { percentile } from '../stats.js'

/**
 * `node dist/scripts/bench/bench-pull.js [--size 1GiB] [--reps 3]`: one large file from the loopback fake hub,
 * pulled by llamagate (SHA-256 checked while streaming) and fetched by `curl -o` then hashed, in turns;
 * prints the speeds, the ratios, and llamagate's peak RSS.
 */
async function main (): Promise<void> {
  const { values } = parseArgs({ options: { size: { type: 'string', default: '1GiB' }, reps: { type: 'string', default: '3' } } })
  const size = parseSize(values.size)
  if (!size) throw new Error('--size must be a size such as 1GiB')
  const dir = await mkdtemp(join(tmpdir(), 'llamagate-bench-pull-'))
  const hub = await FakeHub.start()
  try {
    // A GGUF (so the store can read its header at commit, and no conversion follows): a tiny model's bytes
    // at the start, random bytes up to the size.
    const tiny = await readFile((await writeTinyGguf({ file: join(dir, 'tiny.gguf') })).file)
    const content = randomFillSync(Buffer.allocUnsafe(Math.max(size, tiny.length)))
    tiny.copy(content, 0)
    hub.addRepo('bench/big', { files: [{ path: 'big-Q4_K_M.gguf', content }] })
    const commit = hub.repos.get('bench/big')!.commit!
    const config = join(dir, 'config.yaml')
    await writeFile(config, `data_dir: ${join(dir, 'data')}\nport: 0\nlog_level: info\nhub: { endpoint: ${hub.url} }\n`)
    const { child: gateway, url } = await startGatewayProcess(config, join(dir, 'llamagate.log'))
    const gatewayTimes: number[] = []
    const curlTimes: number[] = []
    const hashTimes: Record<string, number[]> = { openssl: [], sha256sum: [] }
    const syncTimes: number[] = []
    const pullOnce = async (): Promise<void> => {
      await rm(join(dir, 'data', 'models'), { recursive: true, force: true })
      const started = performance.now()
      const res = await fetch(`${url}/api/pull`, { method: 'POST', body: JSON.stringify({ model: 'bench/big', stream: false }) })
      if (res.status !== 200) throw new Error(`pull failed: ${await res.text()}`)
      gatewayTimes.push(performance.now() - started)
      // The gateway keeps the model; delete it through the API so that the next pull starts from nothing.
      await fetch(`${url}/api/delete`, { method: 'DELETE', body: JSON.stringify({ model: 'bench/big' }) })
    }
    // curl downloads, then the file is hashed: by `openssl dgst` (SHA-NI where the CPU has it, the fastest
    // here) and by `sha256sum` (coreutils; no SHA-NI); the reference is curl plus the faster of the two.
    const curlOnce = async (): Promise<void> => {
      const target = join(dir, 'curl.out')
      let started = performance.now()
      await execa('curl', ['-sSfL', '-o', target, `${hub.url}/bench/big/resolve/${commit}/big-Q4_K_M.gguf`])
      curlTimes.push(performance.now() - started)
      // llamagate puts a model's bytes on disk before listing it; `sync --data` does the same for curl's file.
      started = performance.now()
      await execa('sync', ['--data', target])
      syncTimes.push(performance.now() - started)
      for (const [tool, args] of [['openssl', ['dgst', '-sha256', target]], ['sha256sum', [target]]] as const) {
        started = performance.now()
        await execa(tool, [...args])
        hashTimes[tool]!.push(performance.now() - started)
      }
      await rm(target, { force: true })
    }
    for (let rep = 0; rep < Number(values.reps); rep++) {
      // In turns, so that neither always meets a warm page cache or a busy moment first.
      if (rep % 2 === 0) { await pullOnce(); await curlOnce() } else { await curlOnce(); await pullOnce() }
    }
    const status = await readFile(`/proc/${gateway.pid}/status`, 'utf8')
    const peakRss = Number(/VmHWM:\s+(\d+)/.exec(status)![1]) * 1024
    gateway.kill('SIGTERM')
    const mibps = (ms: number): number => size / 2 ** 20 / (ms / 1000)
    const g = percentile(gatewayTimes, 50)
    const download = percentile(curlTimes, 50)
    const openssl = percentile(hashTimes.openssl!, 50)
    const sha256sum = percentile(hashTimes.sha256sum!, 50)
    const reference = download + Math.min(openssl, sha256sum)
    const durable = reference + percentile(syncTimes, 50)
    const result = {
      size_bytes: size, reps: Number(values.reps), llamagate_mib_s: mibps(g), curl_download_mib_s: mibps(download),
      curl_openssl_mib_s: mibps(download + openssl), curl_sha256sum_mib_s: mibps(download + sha256sum),
      ratio: reference / g, ratio_vs_durable: durable / g, ratio_vs_download_alone: download / g, llamagate_peak_rss_mib: peakRss / 2 ** 20,
    }
    process.stdout.write(`pull of ${(size / 2 ** 30).toFixed(2)} GiB (medians of ${result.reps}): llamagate ${result.llamagate_mib_s.toFixed(0)} MiB/s (SHA-256 checked); ` +
      `curl -o ${result.curl_download_mib_s.toFixed(0)} MiB/s without a hash, ${result.curl_openssl_mib_s.toFixed(0)} with openssl dgst, ${result.curl_sha256sum_mib_s.toFixed(0)} with sha256sum; ` +
      `ratio to curl + the faster hash ${result.ratio.toFixed(2)} (+ sync --data, as llamagate syncs: ${result.ratio_vs_durable.toFixed(2)}; to the download alone ${result.ratio_vs_download_alone.toFixed(2)}); llamagate peak RSS ${result.llamagate_peak_rss_mib.toFixed(0)} MiB\n`)
    process.stdout.write(`${JSON.stringify(result)}\n`)
  } finally {
    await hub.close()
    await rm(dir, { recursive: true, force: true })
  }
}

main().catch((err) => { process.stderr.write(`bench-pull failed: ${(err as Error).stack}\n`); process.exit(1) })
