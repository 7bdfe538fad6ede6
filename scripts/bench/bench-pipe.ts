import { connect, createServer, type AddressInfo } from 'node:net'

/**
 * `node dist/scripts/bench/bench-pipe.js <port>`: the bench's "pipe" setup, the least a proxy written in Node can
 * do. Every connection is relayed byte for byte to llama-server on 127.0.0.1:<port>: no HTTP parsing, no
 * model lookup, no scheduling. What it costs against direct is the cost of the extra hop itself (one more
 * process woken, one more read and write per token) on the machine at hand, which llamagate pays too; what
 * llamagate costs beyond it is its own. Prints the port it listens on.
 */
const target = Number(process.argv[2])
if (!Number.isInteger(target) || target <= 0) throw new Error('usage: bench-pipe <llama-server port>')

const server = createServer({ noDelay: true }, (client) => {
  const upstream = connect({ host: '127.0.0.1', port: target, noDelay: true })
  client.pipe(upstream)
  upstream.pipe(client) // llama-server closes after every stream: its end ends the client's side, after the last byte
  client.on('close', () => upstream.destroy())
  client.on('error', () => upstream.destroy())
  upstream.on('error', () => client.destroy())
})
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`))
