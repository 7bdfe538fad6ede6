import type { RuntimeBuild } from '../../runtimes/types.js'
import { cpuRuntimeBuild } from '../../scripts/testing/cpu-runtime.js'

/**
 * The real CPU llama-server the tests run: the one `llamagate/testing` finds for a plugin's tests
 * (`LLAMAGATE_TEST_RUNTIME_BIN`, else the newest build under ~/.llamagate/runtimes).
 */
export function cpuRuntime (): Promise<RuntimeBuild> {
  return cpuRuntimeBuild()
}
