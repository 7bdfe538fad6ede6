/** What the converter tells its observers (`converter.events`), by event name. */
export interface ConverterEvents {
  /**
   * A variant was made, in `seconds`. A quantized type made from a SafeTensors model counts the f16 it starts from
   * when that had to be made first, which is also counted as an f16 conversion of its own.
   */
  converted: [dtype: string, seconds: number]
  /** A conversion failed; one cancelled (its clients left, its model was deleted, the gateway closed) is not a failure. */
  failed: [dtype: string, error: unknown]
}
