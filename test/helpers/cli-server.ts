import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { tempDir } from './app.js'
import { realisticModel } from './realistic-models.js'
import { cpuRuntime } from './runtime.js'
import { runCli, startServe, type ServeProcess } from './serve-process.js'

/**
 * A real `llamagate serve` (the built CLI, its own process) with the qwen2-vocabulary fixture imported as
 * acme/qwen, for tests of the client commands. `extra` is appended to its config.yaml.
 */
export async function serveForCli (t: { teardown: (fn: () => unknown) => void }, extra = ''): Promise<{ serve: ServeProcess, config: string, dir: string }> {
  const dir = await tempDir(t)
  const runtime = await cpuRuntime()
  const config = join(dir, 'config.yaml')
  await writeFile(config, `data_dir: ${dir}\nport: 0\nlog_level: info\nruntimes:\n  cpu: { bin: ${runtime.binDir} }\ndefault_options: { num_ctx: 512, num_parallel: 1, num_thread: 1 }\n${extra}`)
  const imported = await runCli(['import', 'acme/qwen', await realisticModel('qwen25'), '--config', config])
  if (imported.code !== 0) throw new Error(`import failed: ${imported.stderr}`)
  const serve = await startServe(['--config', config])
  t.teardown(() => { serve.child.kill('SIGKILL') })
  return { serve, config, dir }
}
