// The slot-state reader (runtimes/endpoint/slot-state-file.ts) on files a writer of the prompt-cache folder could
// plant: a header's claim never allocates past the file, and a link or a FIFO is not opened through.
import { execFileSync } from 'node:child_process'
import { symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { readSlotStateTokens } from '../../../runtimes/endpoint/slot-state-file.js'
import { tempDir } from '../../helpers/app.js'

/** A state file's head ('ggsq', version 3, `words`), then `body`. */
function stateFile (words: number, body: number[]): Buffer {
  const file = Buffer.alloc(12 + body.length * 4)
  file.writeUInt32LE(0x67677371, 0)
  file.writeUInt32LE(3, 4)
  file.writeUInt32LE(words, 8)
  body.forEach((word, i) => file.writeUInt32LE(word >>> 0, 12 + i * 4))
  return file
}

t.test('the tokens of a well-formed file, packed as llama-server writes them', async (t) => {
  const file = join(await tempDir(t), 'ok.bin')
  await writeFile(file, stateFile(6, [0xffffffff, 1, 3, 11, 12, 13]))
  t.same([...await readSlotStateTokens(file)], [11, 12, 13])
})

t.test('a header claiming more tokens than the file holds is refused before anything is allocated for them', async (t) => {
  const dir = await tempDir(t)
  // 2^24+3 words would be a 64 MiB buffer; the file holds 16 bytes.
  await writeFile(join(dir, 'big.bin'), stateFile((1 << 24) + 3, [0xffffffff]))
  const before = process.memoryUsage().arrayBuffers
  await t.rejects(readSlotStateTokens(join(dir, 'big.bin')), /token count 16777219 past the file's 16 bytes/)
  t.ok(process.memoryUsage().arrayBuffers - before < 16 << 20, 'no buffer of the claimed size')
  await writeFile(join(dir, 'huge.bin'), stateFile(0xffffffff, []))
  await t.rejects(readSlotStateTokens(join(dir, 'huge.bin')), /implausible token count/)
})

t.test('a link is not followed, a FIFO does not hold the read up', async (t) => {
  const dir = await tempDir(t)
  const outside = join(await tempDir(t), 'real.bin')
  await writeFile(outside, stateFile(1, [7]))
  await symlink(outside, join(dir, 'link.bin'))
  await t.rejects(readSlotStateTokens(join(dir, 'link.bin')), { code: 'ELOOP' }, 'a link to a good state file is refused')
  execFileSync('mkfifo', [join(dir, 'fifo.bin')])
  await t.rejects(readSlotStateTokens(join(dir, 'fifo.bin')), /not a regular file/, 'nobody writes to it: refused, not waited on')
})
