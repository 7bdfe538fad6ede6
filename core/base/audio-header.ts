// What the header of an audio file says: its format and its length, read from the bytes a request brings.

/** The formats llama.cpp's audio loader (miniaudio in tools/mtmd) decodes. */
export type AudioFormat = 'wav' | 'mp3' | 'flac'

/** The format of audio bytes, told by their first bytes; null: none llama.cpp decodes. */
export function audioFormat (bytes: Buffer): AudioFormat | null {
  if (bytes.length >= 12 && bytes.toString('latin1', 0, 4) === 'RIFF' && bytes.toString('latin1', 8, 12) === 'WAVE') return 'wav'
  if (bytes.length >= 4 && bytes.toString('latin1', 0, 4) === 'fLaC') return 'flac'
  if (bytes.length >= 3 && bytes.toString('latin1', 0, 3) === 'ID3') return 'mp3'
  // An MP3 frame's sync word: eleven bits set, then a version and a layer that exist (layer III).
  if (bytes.length >= 4 && bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0 && (bytes[1]! & 0x06) === 0x02 && (bytes[1]! & 0x18) !== 0x08) return 'mp3'
  return null
}

/**
 * How long audio is, in seconds, from its header: a WAV's data chunk over its byte rate, a FLAC's sample count over
 * its rate, an MP3's bytes over its first frame's bit rate (exact for constant bit rates); null when the header does
 * not say.
 */
export function audioDuration (bytes: Buffer, format: AudioFormat): number | null {
  if (format === 'wav') return wavDuration(bytes)
  if (format === 'flac') return flacDuration(bytes)
  return mp3Duration(bytes)
}

function wavDuration (b: Buffer): number | null {
  let byteRate = 0
  for (let at = 12; at + 8 <= b.length;) {
    const id = b.toString('latin1', at, at + 4)
    const size = b.readUInt32LE(at + 4)
    if (id === 'fmt ' && at + 16 <= b.length) byteRate = b.readUInt32LE(at + 16)
    if (id === 'data') return byteRate > 0 ? Math.min(size, b.length - at - 8) / byteRate : null
    at += 8 + size + (size % 2)
  }
  return null
}

function flacDuration (b: Buffer): number | null {
  // STREAMINFO, the first metadata block: 20 bits of sample rate and 36 of total samples, from byte 18 of the file.
  if (b.length < 26) return null
  const rate = (b[18]! << 12) | (b[19]! << 4) | (b[20]! >> 4)
  const samples = (b[21]! & 0x0f) * 2 ** 32 + b.readUInt32BE(22)
  return rate > 0 && samples > 0 ? samples / rate : null
}

const MP3_KBPS = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320] // MPEG-1 layer III
const MP3_KBPS_LOW = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160] // MPEG-2 and 2.5 layer III

function mp3Duration (b: Buffer): number | null {
  let at = 0
  if (b.toString('latin1', 0, 3) === 'ID3' && b.length >= 10) {
    at = 10 + ((b[6]! & 0x7f) << 21 | (b[7]! & 0x7f) << 14 | (b[8]! & 0x7f) << 7 | (b[9]! & 0x7f))
  }
  if (at + 4 > b.length || b[at] !== 0xff || (b[at + 1]! & 0xe0) !== 0xe0) return null
  const mpeg1 = (b[at + 1]! & 0x18) === 0x18
  const kbps = (mpeg1 ? MP3_KBPS : MP3_KBPS_LOW)[b[at + 2]! >> 4] ?? 0
  return kbps > 0 ? (b.length - at) * 8 / (kbps * 1000) : null
}
