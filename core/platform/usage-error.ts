/** A mistake in how a command was called: reported with the command's usage, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError'
}
