import t from 'tap'
import { runCli, runCliHere } from '../../helpers/serve-process.js'

t.test('help: the command list, each command\'s help, and help for an unknown one', async (t) => {
  const all = await runCli(['help'])
  t.equal(all.code, 0)
  for (const name of ['serve', 'pull', 'run', 'list, ls', 'ps', 'show', 'cp, copy', 'rm, remove', 'stop', 'import', 'create', 'doctor', 'rpc-worker']) t.match(all.stdout, new RegExp(`\\n {2}${name} +\\S`), name)
  const bare = await runCli([])
  t.equal(bare.code, 2, 'no command: the usage, and a failing exit code for scripts')
  t.equal(bare.stdout, all.stdout)
  for (const name of ['serve', 'pull', 'run', 'list', 'ps', 'show', 'cp', 'rm', 'stop', 'import', 'create', 'doctor', 'rpc-worker']) {
    const help = await runCliHere(['help', name])
    t.equal(help.code, 0)
    t.match(help.stdout, new RegExp(`usage: llamagate ${name}`))
    if (name === 'doctor') t.match(help.stdout, /Exit status: 0 when a runtime\s+build is chosen and the server answers \(taking LLAMAGATE_API_KEY if it wants a key\), 1 otherwise/, 'doctor\'s help says what its exit status means')
    t.equal((await runCliHere([name, '--help'])).stdout, help.stdout, `${name} --help is the same text`)
  }
  const unknown = await runCli(['help', 'frobnicate'])
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /unknown command "frobnicate"/)
})
