import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { GATEWAY_NODE_FLAGS } from '../../core/base/node-flags.js'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { startServe } from '../helpers/serve-process.js'
import { tempDir } from '../helpers/app.js'

t.test('the bin\'s shebang and npm start run node with the gateway\'s V8 flags', async (t) => {
  const shebang = (await readFile(join(PACKAGE_ROOT, 'core/cli/cli.ts'), 'utf8')).split('\n')[0]
  t.equal(shebang, `#!/usr/bin/env -S node ${GATEWAY_NODE_FLAGS.join(' ')}`)
  const built = (await readFile(join(PACKAGE_ROOT, 'dist/core/cli/cli.js'), 'utf8')).split('\n')[0]
  t.equal(built, shebang, 'the build keeps the shebang')
  const pkg = JSON.parse(await readFile(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
  // exec: the shell npm runs the script in hands its place to node, so that a SIGTERM to npm start reaches the gateway.
  t.equal(pkg.scripts.start, `exec node ${GATEWAY_NODE_FLAGS.join(' ')} dist/core/cli/cli.js serve`)
})

t.test('a served gateway has the small young generation the flags ask for', async (t) => {
  const dir = await tempDir(t)
  const serve = await startServe(['--port', '0', '--models', join(dir, 'models')], { LLAMAGATE_HOME: dir })
  t.teardown(() => { serve.child.kill('SIGKILL') })
  const cmdline = (await readFile(`/proc/${serve.child.pid}/cmdline`, 'utf8')).split('\0')
  for (const flag of GATEWAY_NODE_FLAGS) t.ok(cmdline.includes(flag), `${flag} on the command line`)
  serve.child.kill('SIGTERM')
  t.equal((await serve.exited).code, 0)
})
