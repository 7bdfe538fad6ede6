/** What pulls tell their observers (`puller.events`), by event name. */
export interface PullEvents {
  /** Bytes of model files received from the hub (what a resumed download already had on disk is not counted). */
  bytes: [count: number]
  /** A request to the hub failed (an error status worth retrying, a dropped connection, a stall) and is tried again. */
  retry: [reason: string]
  /** A pull ended in an error; one that its clients left is not a failure. */
  failed: [error: unknown]
}
