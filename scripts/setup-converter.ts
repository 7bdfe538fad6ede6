import { existsSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { execa } from 'execa'
import { loadConfig } from '../core/config.js'
import { Converter } from '../plugins/convert/converter.js'
import { DEBIAN_PACKAGES } from '../plugins/convert/python-env.js'
import { sourceDir } from './llama-cpp-source.js'

function say (line: string): void { process.stdout.write(`[converter] ${line}\n`) }

/**
 * `npm run setup:converter`: makes SafeTensors conversion ready. With a Python package index, a virtual
 * environment at <data_dir>/converter-venv with llama.cpp's converter requirements; without one (these
 * offline Debian machines), Debian's packages through apt-get when root, else the command to run.
 */
async function main (): Promise<void> {
  const config = loadConfig()
  const src = config.llamaCppSrc ?? sourceDir(config.dataDir)
  const converter = new Converter({ python: config.conversion.python, llamaCppSrc: src, dataDir: config.dataDir, quantizePath: null, timeoutMs: config.conversion.timeoutMs })
  if ((await converter.readiness()).ready) { say('conversion is ready'); return }
  const requirements = join(src, 'requirements', 'requirements-convert_hf_to_gguf.txt')
  const venv = join(config.dataDir, 'converter-venv')
  if (existsSync(requirements)) {
    say(`trying a virtual environment at ${venv}`)
    const made = await execa('python3', ['-m', 'venv', venv], { reject: false })
    const pip = made.exitCode === 0 ? await execa(join(venv, 'bin', 'pip'), ['install', '-r', requirements], { reject: false, cwd: src, timeout: 900_000, stdout: 'inherit', stderr: 'inherit' }) : made
    if (pip.exitCode === 0 && (await converter.readiness()).ready) { say('conversion is ready (virtual environment)'); return }
    say('the virtual environment could not be set up (no package index?)')
  }
  if (existsSync('/usr/bin/apt-get') && process.getuid?.() === 0) {
    say(`installing Debian packages: ${DEBIAN_PACKAGES}`)
    await execa('sh', ['-c', `apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${DEBIAN_PACKAGES}`], { stdout: 'inherit', stderr: 'inherit' })
  }
  const readiness = await converter.readiness()
  if (readiness.ready) { say(`conversion is ready (${readiness.python}${readiness.shim ? ', with the compatibility shim' : ''})`); return }
  throw new Error(`conversion is not ready: ${readiness.problems.join('; ')}. ${readiness.fix ?? ''}`)
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  main().catch((err) => { process.stderr.write(`[converter] ${(err as Error).message}\n`); process.exit(1) })
}
