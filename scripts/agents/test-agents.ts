import { realpathSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { installed, nodeBinary, type NodeMajor } from './agent-install.js'

/** An agent a test starts for real: its npm package at a pinned version, the Node major it needs, its script. */
export interface TestAgent { npmPackage: string, version: string, node: NodeMajor, entry: string }

/** The agents the tests start (installed by `npm test`'s pretest, once per machine, under ~/.llamagate/agents). */
export const TEST_AGENTS = {
  // OpenClaw's engines field: Node >=24.16 <25.
  openclaw: { npmPackage: 'openclaw', version: '2026.9.6', node: 24, entry: 'node_modules/openclaw/openclaw.mjs' },
  // The openai SDK with client.decisions (OpenAI's Decisions API): 7.x asks for Node 22, so it stays out of the
  // devDependencies, which Node 20 installs.
  'openai-decisions': { npmPackage: 'openai', version: '7.55.0', node: 22, entry: 'node_modules/openai/index.mjs' },
} as const satisfies Record<string, TestAgent>

/** The Nodes the suite's smoke part starts the built gateway on (test/core/node-versions.test.ts), besides its own. */
export const SMOKE_NODES = [22, 24] as const satisfies readonly NodeMajor[]

/** The command that starts `agent` (its Node, its entry script), installing what is missing first. */
export async function agentCommand (agent: keyof typeof TEST_AGENTS, log?: (line: string) => void): Promise<[string, string]> {
  const { npmPackage, version, node, entry } = TEST_AGENTS[agent]
  // Its Node first on npm's PATH: install scripts check the version (OpenClaw's preinstall refuses Node 20).
  const nodePath = await nodeBinary(node, { log })
  const dir = await installed(npmPackage, version, { log, node: nodePath })
  return [nodePath, join(dir, entry)]
}

// `node dist/scripts/agents/test-agents.js` (pretest): every test agent and its Node, and the smoke part's Nodes, so
// that no test's time includes an install, and a machine without the registry fails here, saying so, rather than in a test.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const log = (line: string): void => { process.stdout.write(`[agents] ${line}\n`) }
  for (const agent of Object.keys(TEST_AGENTS) as Array<keyof typeof TEST_AGENTS>) {
    const [node, entry] = await agentCommand(agent, log)
    log(`${agent} ${TEST_AGENTS[agent].version}: ${entry} on ${node}`)
  }
  for (const major of SMOKE_NODES) log(`Node ${major} for the smoke part: ${await nodeBinary(major, { log })}`)
}
