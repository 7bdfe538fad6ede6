/**
 * What services log through. pino's (and so Fastify's) logger fits, so a plugin hands its `app.log` to a
 * service that never imports Fastify; a test hands a small stand-in.
 */
export interface Logger {
  debug(o: unknown, m?: string): void
  info(o: unknown, m?: string): void
  warn(o: unknown, m?: string): void
  error(o: unknown, m?: string): void
}
