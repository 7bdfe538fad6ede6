import { createServer } from 'node:http'
import { Writable } from 'node:stream'
import t from 'tap'
import { ollamaAddressCheck } from '../../../core/cli/commands/ollama-address-check.js'
import { buildTestApp, testConfig } from '../../helpers/app.js'
import { holdOllamaPort } from '../../helpers/ollama-port.js'

// `ollama_listen: auto`, the default: Ollama's own address, 127.0.0.1:11434, where Ollama's clients look without a base
// URL; taken (Ollama itself runs), one warning and the start goes on. The port is the machine's: holdOllamaPort.
// Here, beside the other tests that need it (the clients at their default base URL), so that one process takes them
// in turn and the suite's other process never waits on the lock.

/** The app as config.yaml's default has it, its warnings about Ollama's address kept (not the converter's, say). */
async function autoApp (t: Parameters<typeof testConfig>[0]): Promise<{ app: Awaited<ReturnType<typeof buildTestApp>>, warnings: string[] }> {
  const warnings: string[] = []
  const stream = new Writable({
    write (chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter((l) => l.trim() !== '')) {
        const { msg } = JSON.parse(line) as { msg: string }
        if (msg.includes('Ollama')) warnings.push(msg)
      }
      done()
    },
  })
  const app = await buildTestApp(await testConfig(t, { ollama_listen: 'auto' }), { logger: { level: 'warn', stream } })
  t.teardown(() => app.close())
  return { app, warnings }
}

t.test('auto: Ollama\'s address served and said; taken by Ollama itself, one warning, the start goes on; doctor says which', async (t) => {
  const { url: ollama, port } = await holdOllamaPort(t)

  const served = await autoApp(t)
  const main = await served.app.listen({ host: '127.0.0.1', port: 0 })
  t.ok(served.app.ollamaListener?.listening, 'listening on Ollama\'s port')
  t.ok(served.app.startupNotes.includes(`Ollama's clients on ${ollama} (native streams NDJSON unless asked for SSE)`), 'the start line says where')
  t.same(served.warnings, [], 'no warning')
  t.match(await (await fetch(`${ollama}/api/version`)).json(), { llamagate_version: String })
  t.same(await ollamaAddressCheck(served.app.config.ollamaListen, main), { name: 'ollama clients', status: 'ok', message: `they reach llamagate at ${ollama} (Ollama's address: no base URL to set)`, fix: null })
  await served.app.close()

  // Ollama itself on its port (as much of it as doctor asks).
  const ollamaItself = createServer((req, res) => res.end(req.url === '/api/version' ? '{"version":"0.14.0"}' : '{}'))
  await new Promise<void>((resolve) => ollamaItself.listen(port, '127.0.0.1', resolve))
  t.teardown(() => ollamaItself.close())
  const beside = await autoApp(t)
  const url = await beside.app.listen({ host: '127.0.0.1', port: 0 })
  t.equal((await fetch(`${url}/api/health`)).status, 200, 'started, and answering on its main address')
  t.notOk(beside.app.ollamaListener?.listening, 'not on Ollama\'s port')
  t.notOk(beside.app.startupNotes.some((note) => note.includes('Ollama\'s clients')), 'the start line does not claim it')
  t.same(beside.warnings, [`not serving Ollama's clients at ${ollama}: the port is in use (another Ollama server, or llamagate already running?); they reach llamagate at its main address, with their base URL set (ollama_listen: off to not try)`], 'one warning says so')
  t.same(await ollamaAddressCheck(beside.app.config.ollamaListen, url), {
    name: 'ollama clients',
    status: 'warn',
    message: `${ollama} is Ollama 0.14.0's: Ollama's clients reach it, not llamagate`,
    fix: `stop Ollama and restart llamagate serve, or set their base URL to ${url}`,
  }, 'doctor: Ollama\'s clients reach Ollama')
  await beside.app.close()
  await new Promise((resolve) => ollamaItself.close(resolve))
  t.match(await ollamaAddressCheck(beside.app.config.ollamaListen, url), { status: 'warn', message: `nothing that speaks Ollama's API answers at ${ollama} (ollama_listen)` }, 'doctor: nothing there')
})
