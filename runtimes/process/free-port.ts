import { createServer } from 'node:net'

/** A loopback port free right now (the kernel's pick). Another process could take it before we do. */
export function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}
