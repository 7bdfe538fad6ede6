import { GatewayError } from '../../core/base/errors.js'
import { formatBytes } from '../../core/base/units.js'

/** What one upload holds of the reserved bytes. */
export interface Reservation { bytes: number }

const FREE_ROOM = 'free room with DELETE /api/blobs/<digest>, or by creating the models they are for (POST /api/create)'

/**
 * limits.blob_quota's accounts: the bytes of uploaded blobs no model is made from (counted on disk as each upload
 * starts) and the bytes of uploads under way (what each declared, or what one without a declared length has
 * received so far). Each upload reserves before a byte is written, so that uploads racing each other cannot pass
 * the quota together.
 */
export class UploadQuota {
  /** Bytes of whole blobs no model is made from, as last counted (plus the uploads finished since). */
  private held = 0
  /** Bytes of the uploads under way. */
  private reserved = 0
  // A count of the blobs on disk and a finished upload's move from reserved to held take turns: a count taken while
  // an upload is renamed into place could otherwise miss its bytes both as reserved and as held.
  private turn: Promise<unknown> = Promise.resolve()

  /**
   * Counts what is held (`count`) and reserves `bytes` for an upload starting.
   * @throws GatewayError 507 `blob_quota` when they would pass `quota`, saying what is held and how to free room
   */
  reserve (quota: number, bytes: number, reservation: Reservation, count: () => Promise<number>): Promise<void> {
    return this.inTurn(async () => {
      this.held = await count()
      if (this.held + this.reserved + bytes > quota) {
        throw new GatewayError(507, `this upload (${formatBytes(bytes)}) would pass the upload quota: ${this.holding(quota)}; ${FREE_ROOM}`, { code: 'blob_quota' })
      }
      this.add(bytes, reservation)
    })
  }

  /**
   * Adds bytes received by an upload that declared no length.
   * @throws GatewayError 507 `blob_quota` once they pass `quota` (the upload is to stop there)
   */
  grow (quota: number, bytes: number, reservation: Reservation): void {
    this.add(bytes, reservation)
    if (this.held + this.reserved > quota) {
      const others = this.reserved - reservation.bytes
      throw new GatewayError(507, `this upload was cut off at ${formatBytes(reservation.bytes)}, past the upload quota: ${this.holding(quota, others)}; ${FREE_ROOM}, then send it again`, { code: 'blob_quota' })
    }
  }

  /** The upload is whole: `commit` puts it in place, in turn with the counts, and its bytes become held ones. */
  settle (reservation: Reservation, commit: () => Promise<void>): Promise<void> {
    return this.inTurn(async () => {
      await commit()
      this.held += reservation.bytes
      this.release(reservation)
    })
  }

  /** Gives back what the upload still holds (it failed, was cut, or is settled already). */
  release (reservation: Reservation): void {
    this.reserved -= reservation.bytes
    reservation.bytes = 0
  }

  private add (bytes: number, reservation: Reservation): void {
    this.reserved += bytes
    reservation.bytes += bytes
  }

  private holding (quota: number, underWay = this.reserved): string {
    const inFlight = underWay > 0 ? `, ${formatBytes(underWay)} of it in uploads under way` : ''
    return `blobs uploaded and not made into a model yet hold ${formatBytes(this.held + underWay)} of its ${formatBytes(quota)} (limits.blob_quota)${inFlight}`
  }

  private inTurn<T> (fn: () => Promise<T>): Promise<T> {
    const run = this.turn.then(fn)
    this.turn = run.catch(() => {})
    return run
  }
}
