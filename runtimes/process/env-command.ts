/**
 * A command line that runs `command` with `env` over the inherited environment, through env(1), which execs the
 * program in place: the same pid, and the spare shells (forked with the gateway's environment) still launch it.
 */
export function withEnv (command: readonly string[], env: Readonly<Record<string, string>> | undefined): string[] {
  const vars = Object.entries(env ?? {}).map(([name, value]) => `${name}=${value}`)
  return vars.length > 0 ? ['/usr/bin/env', ...vars, ...command] : [...command]
}
