import { chmod, mkdir, writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import t from 'tap'
import { runProbe } from '../../runtimes/probe.js'
import { tempDir } from '../helpers/app.js'
import { spawnsDuring } from '../helpers/spawns.js'

// A hardware probe runs only when its program is there: on most machines most probes are missing, and a spawn that
// fails still forks the whole server first.

t.test('a probe on PATH runs and gives its output; a missing one is null without a process started', async (t) => {
  const dir = await tempDir(t)
  const bin = join(dir, 'bin')
  await mkdir(bin)
  await writeFile(join(bin, 'fake-smi'), '#!/bin/sh\necho "GPU 0: $1"\n')
  await chmod(join(bin, 'fake-smi'), 0o755)
  await writeFile(join(bin, 'not-executable-smi'), '#!/bin/sh\necho no\n')
  const env = { PATH: `${join(dir, 'empty')}:${bin}` }

  let output: string | null = null
  t.equal(await spawnsDuring(async () => { output = await runProbe('fake-smi', ['ok'], env) }), 1, 'a present probe: one process')
  t.equal(output, 'GPU 0: ok', 'its output')
  t.equal(await runProbe(join(bin, 'fake-smi'), ['path'], {}), 'GPU 0: path', 'a probe named by its path')
  for (const [name, command, probeEnv] of [
    ['not on PATH', 'missing-smi', env],
    ['on PATH but not executable', 'not-executable-smi', env],
    ['no PATH at all', 'fake-smi', {}],
    ['only on a relative PATH entry (never run from the current folder)', 'fake-smi', { PATH: relative(process.cwd(), bin) }],
  ] as const) {
    let result: string | null = 'unset'
    const spawned = await spawnsDuring(async () => { result = await runProbe(command, [], probeEnv) })
    t.equal(result, null, `${name}: null`)
    t.equal(spawned, 0, `${name}: no process started`)
  }
})
