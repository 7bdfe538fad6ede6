/**
 * The V8 settings the gateway runs with, wherever it is started from: the `llamagate` bin's shebang, `npm
 * start`, the benchmarks and the tests that start a real `serve` (a test keeps the three in step).
 *
 * A small young generation: V8 grows it to 16 MiB per semi-space (48 MiB of RSS) under a steady allocation
 * rate, and a proxy's garbage is short-lived and small, so it only costs memory. Measured with 32 streams on
 * the tiny model: peak RSS 161 MiB with V8's default, 129 MiB with 1 MiB; 2 MiB halves the scavenges of 1.
 * It must be given on the command line: V8 sizes its heap when it starts.
 */
export const GATEWAY_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2']
