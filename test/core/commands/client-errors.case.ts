import t from 'tap'
import { serveForCli } from '../../helpers/cli-server.js'
import { runCli, runCliHere } from '../../helpers/serve-process.js'

t.test('client errors: one line on stderr, never a stack, and the exit code says which kind', async (t) => {
  const { app, url } = await serveForCli(t)
  const unknown = await runCli(['show', 'acme/nothing', '--host', url])
  t.equal(unknown.code, 1)
  t.equal(unknown.stderr, 'llamagate show: model "acme/nothing" not found, pull it first\n')
  const badName = await runCliHere(['stop', '../x', '--host', url])
  t.equal(badName.code, 1)
  t.match(badName.stderr, /^llamagate stop: .*invalid model name[^\n]*\n$/)

  const badFlag = await runCliHere(['list', '--colour'])
  t.equal(badFlag.code, 2)
  t.match(badFlag.stderr, /^llamagate list: Unknown option '--colour'[\s\S]*usage: llamagate list/)
  const missing = await runCliHere(['cp', 'acme/qwen'])
  t.equal(missing.code, 2)
  t.match(missing.stderr, /^llamagate cp: expected <source> <destination>\n/)
  const extra = await runCliHere(['ps', 'acme/qwen'])
  t.equal(extra.code, 2)
  t.match(extra.stderr, /takes no arguments/)
  const badHost = await runCliHere(['list', '--host', 'ftp://x'])
  t.equal(badHost.code, 2)
  t.match(badHost.stderr, /"ftp:\/\/x" is not an http or https address/)

  // A port nothing listens on: the server is not running.
  const closed = new URL(url)
  await app.close()
  const down = await runCli(['list', '--host', closed.href])
  t.equal(down.code, 1)
  t.equal(down.stderr, `llamagate list: could not reach llamagate at ${closed.origin} (connection refused). Is it running? Start it with: llamagate serve (or point at another with --host URL or LLAMAGATE_HOST)\n`)
  for (const run of [unknown, badName, badFlag, missing, down]) t.notMatch(run.stderr, /\n\s+at /, 'no stack')
})
