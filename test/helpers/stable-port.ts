import { readFile } from 'node:fs/promises'
import { createServer } from 'node:net'

/**
 * A loopback port free now, below the kernel's ephemeral range: for a test that lets a listener go and binds the same
 * port again (a worker restarted where its config names it). A port the kernel picked (`listen(0)`) may meanwhile be
 * given to any other process's connection or listener; one below that range is taken only by an explicit bind.
 */
export async function stablePort (): Promise<number> {
  const range = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => '32768 60999')
  const below = Math.min(Number(range.trim().split(/\s+/)[0]) || 32768, 32768)
  const low = Math.max(below - 12_000, 1024)
  for (let tries = 0; tries < 50; tries++) {
    const port = low + Math.floor(Math.random() * (below - low))
    if (await bindable(port)) return port
  }
  throw new Error(`no free port found between ${low} and ${below}`)
}

function bindable (port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}
