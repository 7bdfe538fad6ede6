/**
 * A command line that runs `command` with `env` over the inherited environment, through env(1), which execs the
 * program in place: the same pid, and the spare shells (forked with the gateway's environment) still launch it.
 * env(1) reads every argument holding `=` as a variable until the program's, so a program whose path holds one
 * (`/opt/build=2/bin/llama-server`) is exec'd by a shell in between.
 */
export function withEnv (command: readonly string[], env: Readonly<Record<string, string>> | undefined): string[] {
  const vars = Object.entries(env ?? {}).map(([name, value]) => `${name}=${value}`)
  if (vars.length === 0) return [...command]
  const program = command[0]?.includes('=') === true ? ['/bin/sh', '-c', 'exec "$0" "$@"'] : []
  return ['/usr/bin/env', ...vars, ...program, ...command]
}
