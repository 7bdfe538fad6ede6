import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { cpus, tmpdir, totalmem } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../../core/platform/config.js'
import { GATEWAY_NODE_FLAGS } from '../../core/base/node-flags.js'
import { PACKAGE_ROOT } from '../../core/base/paths.js'
import { runtimeProcesses } from '../../runtimes/process/runtime-processes.js'
import { RuntimeRegistry } from '../../runtimes/registry.js'
import { ensureBenchModels, parseBenchModel, QUANTS, SHAPES, type ShapeName } from './bench-models.js'
import { benchCacheGroups } from './bench-cache-groups.js'
import { benchBatches } from './bench-batches.js'
import { benchDecisions } from './bench-decisions.js'
import { benchLongPrompt } from './bench-long-prompt.js'
import { benchMixed } from './bench-mixed.js'
import { ensureMixedModels, MIXED_SHAPES, type MixedShape } from './bench-mixed-models.js'
import { benchMultiTurn } from './bench-multi-turn.js'
import { benchSwap } from './bench-swap.js'
import { benchSwapCache } from './bench-swap-cache.js'
import { benchUpstreams } from './bench-upstreams.js'
import { benchTags } from './bench-tags.js'
import { benchThroughput } from './bench-throughput.js'
import { mergeReport } from './bench-report.js'
import { findOrFetchSource } from './llama-cpp-source.js'
import { writeTinyGguf } from '../fixtures/tiny-model.js'

/** What `npm run bench -- --help` prints: the scenarios and every option. */
const USAGE = `\`npm run bench\`: llamagate side by side with llama-server itself in one run, scenario by scenario
(\`--scenario throughput,swap,long-prompt,multi-turn,swap-cache,upstreams\` or \`all\`; throughput alone by default):
- throughput: streamed load at 1, 8 and 32 streams through direct, router, pipe and llamagate, cold starts
  (bench-throughput.ts), on \`--model tiny\` (default; \`--large\` adds a 258 MiB one) or a real-size shape;
- swap, long-prompt, multi-turn, swap-cache: on the real-size \`--shape\` (llama-1b on CPU, llama-8b on a GPU backend), made
  on first use under ~/.llamagate/bench (bench-models.ts); \`--shape qwen35-2b\` or \`gemma3-1b\` for the hybrid and the
  sliding-window architectures, whose caches llama-server restores from context checkpoints (qwen35-tiny and
  gemma3-tiny: the same at a test size, to try a scenario in seconds);
- upstreams: two back llamagates behind fronts routing by conversation prefix and in turns, on the tiny model:
  cached prompt tokens over \`--conversations\` x \`--upstream-turns N\` (messages of a third of \`--words\`), and the
  front's added time to first token at 1 and 8 streams (\`--ttft-rounds N\`, after \`--ttft-warmup N\` untimed bursts of 8
  each way; bench-upstreams.ts);
- cache-groups: what keys kept apart in the prompt caches cost a key's cached share, on the tiny model: \`--conversations\`
  x \`--upstream-turns\` with a shared system prompt (\`--system-words\`), keys off, one key, two keys in two groups and
  in one (bench-cache-groups.ts);
- mixed: \`--users N\` agent users on three models of three architectures (hybrid, sliding window, plain), room for
  one, each with a ~1,500-token system prompt and a growing conversation (\`--turns N\`, 6; answers of \`--reply N\`
  tokens; think times of \`--think 0.3,1.5\` seconds, an agent's turnaround: a tool's result and the next request), seeded (\`--seed 1,2\`), against router mode and llamagate side by side,
  \`--rounds N\` each (medians); \`--mixed-shape tiny|realistic\`; \`--gateway-limits 'min_residency: 0s'\` (repeatable,
  '' for the defaults) runs llamagate with those limits; \`--keep-logs DIR\` keeps each llamagate run's log there
  (bench-mixed.ts);
- decisions: one 4-question System One decision through llamagate against one 1-token /completion of its first
  prompt through llama-server and its router, side by side, and decisions per second at 1 and 4 at once, on the tiny
  openjev fixture (bench-decisions.ts);
- batches: on tiny models with 4 slots, a person's short streamed chat every \`--batch-every\` ms (2000; \`--batch-people\`, 30, a
  round), alone and beside a background batch of \`--batch-requests\` (500) on the same model, \`--batch-rounds\` (3)
  side by side: time to first token, median and p95; the batch alone against its requests sent straight at the
  gateway 4 at once (twice as many rounds, in turns of order); a batch of 60 across three models that do not fit together: loads per model (bench-batches.ts).
\`--backend cuda\` (or rocm, metal, vulkan) runs every setup on that build; \`--baseline DIR\` adds another built
llamagate checkout to the throughput rotation, \`--plugin FILE\` this llamagate with that plugin loaded (\`noop\`: a call
hook in every phase that does nothing, scripts/bench/noop-hooks-plugin.ts; \`empty\`: none, its control); \`--reps N\`, \`--tokens N\`, \`--cold N\`, \`--threads N\` (0:
llama-server's default), \`--parallel N\` (the throughput run's slots, 8), \`--tags-models N\` (the tiny run's /api/tags list, 1,000), \`--concurrency 1,8,32\` (\`--rounds 16,4,2\`: requests per client at each), \`--prompt-tokens 4096,16384\`, \`--switches N\`,
\`--conversations N --turns N --words N --reply N\`, \`--prefix-words N --swap-ins N\` (swap-cache: an agent's shared
prefix, ~1.3 tokens a word, on two models that do not fit together; bench-swap-cache.ts; \`--flash-attn on|off|auto\` and
\`--repack on|off\`: llama-server's switches in every setup alike, both off unless given), \`--out FILE\`. The tiny throughput run writes
docs/benchmarks[-<backend>].json; the others merge their sections into docs/benchmarks-realistic[-<backend>].json.
`

const SCENARIOS = ['throughput', 'swap', 'long-prompt', 'multi-turn', 'swap-cache', 'upstreams', 'cache-groups', 'mixed', 'decisions', 'batches'] as const
type Scenario = (typeof SCENARIOS)[number]
const TINY = { tiny: { nEmbd: 64, nLayer: 2, nFf: 128 }, large: { nEmbd: 1024, nLayer: 8, nFf: 4096 } } as const
const PARALLEL = 8
const CTX_PER_SLOT = 512

function say (line: string): void { process.stdout.write(`${line}\n`) }

async function main (): Promise<void> {
  const { values } = parseArgs({
    options: {
      help: { type: 'boolean', short: 'h', default: false },
      scenario: { type: 'string', default: 'throughput' }, model: { type: 'string' }, shape: { type: 'string' },
      concurrency: { type: 'string', default: '1,8,32' }, rounds: { type: 'string' }, large: { type: 'boolean', default: false }, reps: { type: 'string', default: '5' },
      tokens: { type: 'string', default: '128' }, threads: { type: 'string' }, cold: { type: 'string', default: '9' }, out: { type: 'string' },
      backend: { type: 'string', default: 'cpu' }, baseline: { type: 'string' }, 'prompt-tokens': { type: 'string', default: '4096,16384' },
      switches: { type: 'string', default: '6' }, conversations: { type: 'string', default: '4' }, turns: { type: 'string' },
      words: { type: 'string', default: '120' }, reply: { type: 'string', default: '16' },
      'prefix-words': { type: 'string', default: '7400' }, 'swap-ins': { type: 'string', default: '3' }, 'flash-attn': { type: 'string' }, repack: { type: 'string' },
      'batch-requests': { type: 'string', default: '500' }, 'batch-people': { type: 'string', default: '30' }, 'batch-every': { type: 'string', default: '2000' }, 'batch-rounds': { type: 'string', default: '3' },
      'upstream-turns': { type: 'string', default: '10' }, 'system-words': { type: 'string', default: '300' }, 'ttft-rounds': { type: 'string', default: '40' }, 'ttft-warmup': { type: 'string', default: '200' },
      'tags-models': { type: 'string', default: '1000' },
      users: { type: 'string', default: '6' }, seed: { type: 'string', default: '1' }, think: { type: 'string', default: '0.3,1.5' }, 'keep-logs': { type: 'string' },
      'mixed-shape': { type: 'string', default: 'tiny' }, 'gateway-limits': { type: 'string', multiple: true }, plugin: { type: 'string' },
      // The throughput run's slots per llama-server (8): fewer than the streams makes every setup queue.
      parallel: { type: 'string', default: String(PARALLEL) },
    },
  })
  if (values.help) {
    process.stdout.write(USAGE)
    return
  }
  const scenarios = (values.scenario === 'all' ? [...SCENARIOS] : values.scenario.split(',')) as Scenario[]
  for (const s of scenarios) if (!SCENARIOS.includes(s)) throw new Error(`unknown scenario ${JSON.stringify(s)}: one of ${SCENARIOS.join(', ')}, or all`)
  // llama.cpp's CPU threads spin between the steps of a token. On a machine of 2 cores, its default (one per
  // core) leaves none for the load generator or a proxy, and every setup measures the scheduler's noise more
  // than itself (tiny model, direct: 2270 tok/s with 1 thread, 1750 with 2). So there every setup gets
  // the same --threads 1 (llamagate through its num_thread option); --threads N sets another, 0 leaves
  // llama-server's default.
  const threadsArg = values.threads !== undefined ? Number(values.threads) : cpus().length <= 2 ? 1 : 0
  const threads = threadsArg > 0 ? threadsArg : undefined
  say(`llama-server threads in every setup: ${threads ?? 'its default'}; llamagate runs with ${GATEWAY_NODE_FLAGS.join(' ')}`)
  const reps = Number(values.reps)
  const maxTokens = Number(values.tokens)
  const config = loadConfig()
  const registry = await RuntimeRegistry.create({ config })
  // Every setup runs the same build: the CPU one by default (the one CI and every machine has), or the
  // GPU build named by --backend, where the GPU rather than the proxy sets the pace.
  const build = registry.builds.find((b) => b.backend === values.backend)
  if (!build) throw new Error(`no ${values.backend} llama-server: run npm run runtime:build -- --backend ${values.backend} first`)
  const defaultShape: ShapeName = build.backend === 'cpu' ? 'llama-1b' : 'llama-8b'
  const shape = (values.shape ?? defaultShape) as ShapeName
  if (!(shape in SHAPES)) throw new Error(`unknown shape ${JSON.stringify(shape)}: one of ${Object.keys(SHAPES).join(', ')}`)
  const throughputModels = values.model?.split(',') ?? (scenarios.length > 1 ? [`${shape}-q4_k_m`, `${shape}-q8_0`] : ['tiny', ...(values.large ? ['large'] : [])])
  const tinyOnly = scenarios.join() === 'throughput' && throughputModels.every((m) => m in TINY)
  const suffix = values.backend === 'cpu' ? '' : `-${values.backend}`
  const output = values.out ?? (tinyOnly ? `docs/benchmarks${suffix}.json` : `docs/benchmarks-realistic${suffix}.json`)
  const dir = await mkdtemp(join(tmpdir(), 'llamagate-bench-'))
  const report: Record<string, unknown> = {
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model, memory_gib: Math.round(totalmem() / 2 ** 30), node: process.version },
    llama_cpp: `${build.version} ${build.commit ?? ''}`.trim(),
    backend: build.backend,
    devices: registry.devices.filter((d) => d.backend === build.backend).map((d) => d.name),
    settings: { reps, threads: threads ?? 'llama-server default', gateway_node_flags: GATEWAY_NODE_FLAGS },
  }
  // The real-size models every scenario after the first asks for, made once per machine.
  const benchDir = join(config.dataDir, 'bench')
  const realistic = async (name: string): Promise<string> => {
    const { shape: s, quant } = parseBenchModel(name)
    const { dir: src } = await findOrFetchSource(config.dataDir, config.llamaCppSrc, say)
    return (await ensureBenchModels({ shape: s, quants: QUANTS, build, llamaCppSrc: src, benchDir, say })).get(quant)!
  }
  try {
    if (scenarios.includes('throughput')) {
      const models = []
      for (const label of throughputModels) {
        const modelDir = join(dir, `throughput-${label}`)
        await mkdir(modelDir, { recursive: true })
        const tiny = TINY[label as keyof typeof TINY]
        const file = tiny !== undefined
          ? (await writeTinyGguf({ file: join(modelDir, `${label}.gguf`), ...tiny, nHead: tiny.nEmbd >= 1024 ? 16 : 4, name: label })).file
          : await realistic(label)
        say(`\n== throughput, model ${label}`)
        models.push(await benchThroughput({
          build, file, label, dir: modelDir, shape: { ctxPerSlot: CTX_PER_SLOT, parallel: Number(values.parallel), ...(threads !== undefined ? { threads } : {}) },
          levels: values.concurrency.split(',').filter((c) => c !== '').map(Number), rounds: (values.rounds ?? '16,4,2').split(',').map(Number), reps, maxTokens, cold: Number(values.cold),
          ...(values.baseline !== undefined ? { baseline: values.baseline } : {}), ...(values.plugin !== undefined ? { plugin: values.plugin } : {}), say,
        }))
      }
      report.throughput = { parallel: Number(values.parallel), ctx_per_slot: CTX_PER_SLOT, max_tokens: maxTokens, models }
      if (tinyOnly) {
        const tags = await benchTags(Number(values['tags-models']))
        report[`tags_${tags.models}`] = tags
        say(`\n/api/tags with ${tags.models.toLocaleString('en')} models: p50 ${tags.p50_ms.toFixed(2)} ms, p99 ${tags.p99_ms.toFixed(2)} ms`)
      }
    }
    if (scenarios.includes('swap')) {
      say(`\n== model swap, ${shape}`)
      const [a, b] = [`${shape}-q4_k_m`, `${shape}-q8_0`]
      report.swap = await benchSwap({
        build, models: [{ label: a, file: await realistic(a) }, { label: b, file: await realistic(b) }], dir: join(dir, 'swap'),
        shape: { ctxPerSlot: 2048, parallel: 4, ...(threads !== undefined ? { threads } : {}) }, switches: Number(values.switches), say,
      })
    }
    if (scenarios.includes('swap-cache')) {
      const [a, b] = [`${shape}-q4_k_m`, `${shape}-q8_0`]
      say(`\n== swap-cache, ${shape}`)
      // Each shape's figures under a name of their own (the default shape's keep the name they had).
      report[shape === defaultShape ? 'swap_cache' : `swap_cache_${shape.replace(/-/g, '_')}`] = await benchSwapCache({
        build, models: [{ label: a, file: await realistic(a) }, { label: b, file: await realistic(b) }], dir: join(dir, 'swap-cache'),
        prefixWords: Number(values['prefix-words']), swapIns: Number(values['swap-ins']), ...(threads !== undefined ? { threads } : {}),
        // Off unless asked: its check compares answers with a cold evaluation's, which these kernels make cut-dependent.
        flashAttn: flashAttnValue(values['flash-attn'] ?? 'off'), repack: onOff('--repack', values.repack ?? 'off'), say,
      })
    }
    if (scenarios.includes('upstreams')) {
      say('\n== upstreams: two back llamagates behind a front, tiny model')
      const modelDir = join(dir, 'upstreams')
      await mkdir(modelDir, { recursive: true })
      // Room for a whole conversation (the tiny vocabulary takes several tokens a word).
      const file = (await writeTinyGguf({ file: join(modelDir, 'tiny.gguf'), ...TINY.tiny, nHead: 4, nCtxTrain: 8192, name: 'tiny' })).file
      report.upstreams = await benchUpstreams({
        build, file, dir: modelDir, conversations: Number(values.conversations), turns: Number(values['upstream-turns']),
        words: Number(values.words) / 3, reply: Number(values.reply), rounds: Number(values['ttft-rounds']), warmup: Number(values['ttft-warmup']), ...(threads !== undefined ? { threads } : {}), say,
      })
    }
    if (scenarios.includes('cache-groups')) {
      say('\n== cache groups: a key\'s cached share with keys kept apart, tiny model')
      const modelDir = join(dir, 'cache-groups')
      await mkdir(modelDir, { recursive: true })
      const file = (await writeTinyGguf({ file: join(modelDir, 'tiny.gguf'), ...TINY.tiny, nHead: 4, nCtxTrain: 16384, name: 'tiny' })).file
      report.cache_groups = await benchCacheGroups({
        build, file, dir: modelDir, conversations: Number(values.conversations), turns: Number(values['upstream-turns']), words: Number(values.words) / 3,
        systemWords: Number(values['system-words']), reply: Number(values.reply), ...(threads !== undefined ? { threads } : {}), say,
      })
    }
    const main = `${shape}-q4_k_m`
    if (scenarios.includes('batches')) {
      say('\n== batches: a person beside a background batch, the batch against the same requests sent straight, three models')
      const modelDir = join(dir, 'batches')
      await mkdir(modelDir, { recursive: true })
      report.batches = await benchBatches({
        build, dir: modelDir, requests: Number(values['batch-requests']), people: Number(values['batch-people']), everyMs: Number(values['batch-every']),
        rounds: Number(values['batch-rounds']), ...(threads !== undefined ? { threads } : {}), say,
      })
    }
    if (scenarios.includes('decisions')) {
      say('\n== decisions: a 4-question decision against a 1-token completion of its prompt, tiny openjev')
      const modelDir = join(dir, 'decisions')
      await mkdir(modelDir, { recursive: true })
      const { dir: src } = await findOrFetchSource(config.dataDir, config.llamaCppSrc, say)
      report.decisions = await benchDecisions({ build, llamaCppSrc: src, dir: modelDir, reps, ...(threads !== undefined ? { threads } : {}), say })
    }
    if (scenarios.includes('long-prompt')) {
      say(`\n== long prompts, ${main}`)
      report.long_prompt = await benchLongPrompt({
        build, file: await realistic(main), label: main, dir: join(dir, 'long-prompt'), sizes: values['prompt-tokens'].split(',').map(Number),
        reps: Number(values.reps), ...(threads !== undefined ? { threads } : {}), say,
      })
    }
    if (scenarios.includes('multi-turn')) {
      say(`\n== multi-turn, ${main}`)
      report.multi_turn = await benchMultiTurn({
        build, file: await realistic(main), label: main, dir: join(dir, 'multi-turn'), conversations: Number(values.conversations),
        turns: Number(values.turns ?? 20), words: Number(values.words), reply: Number(values.reply), ...(threads !== undefined ? { threads } : {}), say,
      })
    }
    if (scenarios.includes('mixed')) {
      const mixedShape = values['mixed-shape'] as MixedShape
      if (!MIXED_SHAPES.includes(mixedShape)) throw new Error(`unknown --mixed-shape ${JSON.stringify(mixedShape)}: one of ${MIXED_SHAPES.join(', ')}`)
      say(`\n== mixed: agent users on three models of three architectures, room for one, ${mixedShape} shape`)
      const { dir: src } = await findOrFetchSource(config.dataDir, config.llamaCppSrc, say)
      const [thinkLow, thinkHigh] = values.think.split(',').map((x) => Number(x) * 1000)
      const counts = { '--rounds': Number(values.rounds ?? 1), '--users': Number(values.users), '--turns': Number(values.turns ?? 6) }
      for (const [flag, n] of Object.entries(counts)) if (!Number.isInteger(n) || n < 1) throw new Error(`${flag}: one whole number of at least 1 for the mixed scenario`)
      report[`mixed_${mixedShape}`] = await benchMixed({
        build, models: await ensureMixedModels({ shape: mixedShape, build, llamaCppSrc: src, benchDir, say }), dir: join(dir, 'mixed'), shape: mixedShape,
        users: counts['--users'], turns: counts['--turns'], seeds: values.seed.split(',').map(Number), rounds: counts['--rounds'],
        thinkMs: [thinkLow!, thinkHigh ?? thinkLow!], reply: Number(values.reply), systemWords: 1500, messageWords: 140,
        gatewayLimits: values['gateway-limits'] ?? [''], ...(values['keep-logs'] !== undefined ? { keepLogs: resolve(values['keep-logs']) } : {}), ...(threads !== undefined ? { threads } : {}), say,
      })
    }
    const path = resolve(PACKAGE_ROOT, output)
    // A run of some scenarios keeps the others' last figures.
    const before = !tinyOnly && existsSync(path) ? JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown> : {}
    await writeFile(path, JSON.stringify(mergeReport(before, { date: new Date().toISOString(), ...report }, values.scenario === 'all'), null, 2) + '\n')
    say(`\nwrote ${output}`)
  } finally {
    await runtimeProcesses.stopAll()
    await rm(dir, { recursive: true, force: true })
  }
}

main().catch((err: Error & { code?: string }) => {
  // A mistyped option is the user's to fix: its message and where the options are, not a stack.
  if (err.code?.startsWith('ERR_PARSE_ARGS_')) {
    process.stderr.write(`bench: ${err.message} (npm run bench -- --help lists the options)\n`)
    process.exit(2)
  }
  process.stderr.write(`bench failed: ${err.stack}\n`)
  process.exit(1)
})

/** `--flash-attn on|off|auto`: llama-server's own switch, for every setup of a scenario alike. */
function flashAttnValue (value: string): 'on' | 'off' | 'auto' {
  if (value === 'on' || value === 'off' || value === 'auto') return value
  throw new Error(`--flash-attn ${JSON.stringify(value)}: on, off or auto`)
}

/** `--repack on|off`: llama-server's weight repacking, for every setup alike. */
function onOff (flag: string, value: string): boolean {
  if (value === 'on' || value === 'off') return value === 'on'
  throw new Error(`${flag} ${JSON.stringify(value)}: on or off`)
}
