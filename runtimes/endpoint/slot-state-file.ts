import { constants } from 'node:fs'
import { open } from 'node:fs/promises'

// llama.cpp's sequence state file (llama_state_seq_save_file): 'ggsq', its version, then the tokens the slot
// held (llama-server's packed form), then the KV state.
const MAGIC = 0x67677371
const VERSION = 3
// llama-server's packed tokens: a null token, its format's version, then the token list with its length.
const PACKED_MARKER = 0xffffffff
const PACKED_VERSION = 1
/** More tokens than any context llama.cpp takes: a header claiming more is damaged. */
const MAX_TOKENS = 1 << 24
const HEAD_BYTES = 12
// The file may have been planted: a link is not followed out of its folder, and a FIFO must not hold the open.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK

/**
 * The tokens a saved slot holds, read from the file's head without loading its KV state: what the prompt cache
 * compares a new prompt with. Nothing is allocated past what the file holds, whatever its header claims.
 * @throws Error when the file is not a state file this reader knows (damaged, or another llama.cpp's format), or is
 * a link or not a regular file
 */
export async function readSlotStateTokens (file: string): Promise<Uint32Array> {
  const handle = await open(file, OPEN_FLAGS)
  try {
    const info = await handle.stat()
    if (!info.isFile()) throw new Error('not a regular file')
    const head = Buffer.alloc(HEAD_BYTES)
    await readExactly(handle, head, 0)
    const magic = head.readUInt32LE(0)
    const version = head.readUInt32LE(4)
    const words = head.readUInt32LE(8)
    if (magic !== MAGIC) throw new Error('not a llama.cpp slot state file (bad magic)')
    if (version !== VERSION) throw new Error(`slot state version ${version}, not ${VERSION}`)
    if (words > MAX_TOKENS + 3) throw new Error(`implausible token count ${words}`)
    if (words * 4 > info.size - HEAD_BYTES) throw new Error(`token count ${words} past the file's ${info.size} bytes`)
    const body = Buffer.alloc(words * 4)
    await readExactly(handle, body, HEAD_BYTES)
    const packed = new Uint32Array(body.buffer, body.byteOffset, words)
    if (words >= 3 && packed[0] === PACKED_MARKER) {
      if (packed[1] !== PACKED_VERSION) throw new Error(`packed tokens version ${packed[1]}, not ${PACKED_VERSION}`)
      const count = packed[2]!
      if (count > words - 3) throw new Error(`packed token count ${count} past the ${words - 3} written`)
      return packed.slice(3, 3 + count)
    }
    return packed.slice() // a plain token list (older llama-server)
  } finally {
    await handle.close()
  }
}

async function readExactly (handle: Awaited<ReturnType<typeof open>>, buffer: Buffer, position: number): Promise<void> {
  let done = 0
  while (done < buffer.length) {
    const { bytesRead } = await handle.read(buffer, done, buffer.length - done, position + done)
    if (bytesRead === 0) throw new Error('truncated slot state file')
    done += bytesRead
  }
}
