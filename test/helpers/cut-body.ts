import { Readable } from 'node:stream'

/** `text` as a body the network cut at `cuts` (byte offsets): a character or a delimiter may be split across reads. */
export function cutBody (text: string, cuts: number[]): Readable {
  const bytes = Buffer.from(text)
  const at = [0, ...cuts, bytes.length]
  return Readable.from(at.slice(1).map((end, i) => bytes.subarray(at[i], end)))
}

/** Everything a generator yields, in order. */
export async function all<T> (items: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = []
  for await (const item of items) out.push(item)
  return out
}
