import { crc32, deflateSync } from 'node:zlib'
import { writeGguf, type GgufValue } from './gguf-writer.js'
import type { Tensor } from './tensor-data.js'
import { seededTensor } from './tiny-llama.js'

/**
 * A tiny random-weight vision projector (an `mmproj` GGUF, as llama.cpp's converter writes them for LLaVA):
 * a CLIP-style ViT (patch embedding, class token, learned positions, pre-norm blocks) and LLaVA's two-layer
 * `mlp` projector, the simplest one llama.cpp's clip.cpp (tools/mtmd) accepts. Paired with a text model of the
 * same `n_embd` (`--model chat.gguf --mmproj this.gguf`), llama-server takes images in chat messages as it
 * does for a real vision model: it decodes the image, resizes it to 32x32, encodes it into one embedding per
 * 8x8 patch (16), and feeds those to the text model. What the model says about the picture is noise; the path
 * an image takes through llama-server is real.
 */
export interface TinyProjectorOptions {
  /** Where to write the GGUF. */
  file: string
  /** The text model's `n_embd`: the projector's output width (llama-server refuses a mismatch). */
  textEmbd: number
  /** @default 1 */
  seed?: number
  name?: string
}

/** The projector's fixed shape. clip.cpp resizes every image to `imageSize` squared. */
export const TINY_PROJECTOR = {
  imageSize: 32,
  patchSize: 8,
  /** The ViT's width. */
  nEmbd: 32,
  nHead: 2,
  nFf: 64,
  /** LLaVA uses the second-to-last block's output, so of 2 blocks one runs. */
  nLayer: 2,
  /** Embeddings (prompt positions) one image takes: one per patch, the class token dropped. */
  tokensPerImage: (32 / 8) ** 2,
} as const

export async function writeTinyProjector (options: TinyProjectorOptions): Promise<{ file: string, bytes: number }> {
  const { imageSize, patchSize, nEmbd, nHead, nFf, nLayer } = TINY_PROJECTOR
  const textEmbd = options.textEmbd
  const seed = options.seed ?? 1
  const nPos = (imageSize / patchSize) ** 2 + 1 // patches and the class token
  const kv: Record<string, GgufValue> = {
    // What convert_hf_to_gguf.py writes for an mmproj: the dummy architecture `clip`, type `mmproj`.
    'general.architecture': { type: 'string', value: 'clip' },
    'general.type': { type: 'string', value: 'mmproj' },
    'general.name': { type: 'string', value: options.name ?? 'tiny llava projector' },
    'general.file_type': { type: 'u32', value: 1 },
    'general.alignment': { type: 'u32', value: 32 },
    'clip.has_vision_encoder': { type: 'bool', value: true },
    'clip.projector_type': { type: 'string', value: 'mlp' },
    'clip.vision.image_size': { type: 'u32', value: imageSize },
    'clip.vision.patch_size': { type: 'u32', value: patchSize },
    'clip.vision.embedding_length': { type: 'u32', value: nEmbd },
    'clip.vision.feed_forward_length': { type: 'u32', value: nFf },
    'clip.vision.projection_dim': { type: 'u32', value: textEmbd },
    'clip.vision.block_count': { type: 'u32', value: nLayer },
    'clip.vision.attention.head_count': { type: 'u32', value: nHead },
    'clip.vision.attention.layer_norm_epsilon': { type: 'f32', value: 1e-5 },
    // CLIP's (OpenAI) normalization, as llava-1.5's preprocessor config has it.
    'clip.vision.image_mean': { type: 'f32[]', value: [0.48145466, 0.4578275, 0.40821073] },
    'clip.vision.image_std': { type: 'f32[]', value: [0.26862954, 0.26130258, 0.27577711] },
  }
  // Matrices f16, as the converter writes them (the conv2d kernel included: ggml's CPU im2col takes f16);
  // vectors (biases, norms, the class token) f32, as ggml's CPU add wants them against f32 activations.
  const t = (name: string, shape: number[], scale: number): Tensor => seededTensor(seed, name, shape, 'f16', scale)
  const vec = (name: string, size: number, scale = 0.02): Tensor => seededTensor(seed, name, [size], 'f32', scale)
  const norm = (name: string, size: number): Tensor[] => [seededTensor(seed, `${name}.weight`, [size], 'f32'), vec(`${name}.bias`, size)]
  const tensors: Tensor[] = [
    // A conv2d kernel, [out channels, in channels (RGB), kh, kw] outermost first: GGUF ne [kw, kh, 3, n_embd].
    t('v.patch_embd.weight', [nEmbd, 3, patchSize, patchSize], 0.05),
    vec('v.class_embd', nEmbd, 0.5),
    t('v.position_embd.weight', [nPos, nEmbd], 0.5),
    ...norm('v.pre_ln', nEmbd),
  ]
  for (let b = 0; b < nLayer; b++) {
    const p = `v.blk.${b}`
    tensors.push(
      ...norm(`${p}.ln1`, nEmbd),
      t(`${p}.attn_q.weight`, [nEmbd, nEmbd], 0.1), vec(`${p}.attn_q.bias`, nEmbd),
      t(`${p}.attn_k.weight`, [nEmbd, nEmbd], 0.1), vec(`${p}.attn_k.bias`, nEmbd),
      t(`${p}.attn_v.weight`, [nEmbd, nEmbd], 0.1), vec(`${p}.attn_v.bias`, nEmbd),
      t(`${p}.attn_out.weight`, [nEmbd, nEmbd], 0.1), vec(`${p}.attn_out.bias`, nEmbd),
      ...norm(`${p}.ln2`, nEmbd),
      // ffn_down's rows are n_embd wide only when n_ff == n_embd, which clip.cpp would take for a legacy
      // up/down swap: n_ff stays 2 * n_embd.
      t(`${p}.ffn_up.weight`, [nFf, nEmbd], 0.1), vec(`${p}.ffn_up.bias`, nFf),
      t(`${p}.ffn_down.weight`, [nEmbd, nFf], 0.1), vec(`${p}.ffn_down.bias`, nEmbd),
    )
  }
  // LLaVA's projector: mm.0 (vision width to text width), GELU, mm.2 (text width to text width). clip.cpp
  // reads the output width from mm.2.weight. Small weights keep the image's embeddings near the text's scale.
  tensors.push(
    t('mm.0.weight', [textEmbd, nEmbd], 0.1), vec('mm.0.bias', textEmbd),
    t('mm.2.weight', [textEmbd, textEmbd], 0.1), vec('mm.2.bias', textEmbd),
  )
  const bytes = await writeGguf(options.file, kv, tensors)
  return { file: options.file, bytes }
}

/** A `width` x `height` RGB picture (a colour gradient with a diagonal stripe) as a PNG file's bytes. */
export function tinyPng (width = 32, height = 32): Buffer {
  const rgb = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3
      const stripe = Math.abs(x - y) < 2
      rgb[i] = stripe ? 255 : Math.round(255 * x / Math.max(1, width - 1))
      rgb[i + 1] = stripe ? 255 : Math.round(255 * y / Math.max(1, height - 1))
      rgb[i + 2] = stripe ? 255 : 96
    }
  }
  return encodePng(width, height, rgb)
}

/** 8-bit RGB pixels, row by row (`width * height * 3` bytes), as a PNG: one IDAT chunk, no filtering. */
export function encodePng (width: number, height: number, rgb: Uint8Array): Buffer {
  if (rgb.length !== width * height * 3) throw new Error(`expected ${width * height * 3} bytes of RGB, got ${rgb.length}`)
  const rows = Buffer.alloc(height * (1 + width * 3))
  for (let y = 0; y < height; y++) {
    rows[y * (1 + width * 3)] = 0 // filter type: none
    rows.set(rgb.subarray(y * width * 3, (y + 1) * width * 3), y * (1 + width * 3) + 1)
  }
  const header = Buffer.alloc(13)
  header.writeUInt32BE(width, 0)
  header.writeUInt32BE(height, 4)
  header.set([8, 2, 0, 0, 0], 8) // bit depth 8, colour type 2 (RGB), deflate, adaptive filtering, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', deflateSync(rows)),
    pngChunk('IEND', Buffer.alloc(0)),
  ])
}

function pngChunk (type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length)
  out.writeUInt32BE(data.length, 0)
  out.write(type, 4, 'latin1')
  data.copy(out, 8)
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length)
  return out
}
