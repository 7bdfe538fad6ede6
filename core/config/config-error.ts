/** A config that cannot be used. `message` lists every problem, one per line, for a person to read. */
export class ConfigError extends Error {
  constructor (readonly problems: string[]) {
    super('invalid configuration:\n  ' + problems.join('\n  '))
    this.name = 'ConfigError'
  }
}
