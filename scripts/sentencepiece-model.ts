// A SentencePiece `tokenizer.model`: the ModelProto message of sentencepiece_model.proto, serialized by hand
// (protobuf wire format: each field is a varint key `number << 3 | wire type`, then its value).

const Wire = { VARINT: 0, LENGTH_DELIMITED: 2, FIXED32: 5 } as const

/** Just enough of a protobuf encoder for ModelProto's field kinds. */
class Proto {
  private parts: Buffer[] = []
  private varint (v: number): void {
    // Negative int32 values are sign-extended to 64 bits: ten bytes on the wire.
    let n = BigInt.asUintN(64, BigInt(v))
    const bytes: number[] = []
    do {
      const low = Number(n & 0x7fn)
      n >>= 7n
      bytes.push(n ? low | 0x80 : low)
    } while (n)
    this.parts.push(Buffer.from(bytes))
  }
  private key (field: number, wire: number): void { this.varint((field << 3) | wire) }
  int (field: number, v: number): this { this.key(field, Wire.VARINT); this.varint(v); return this }
  bool (field: number, v: boolean): this { return this.int(field, v ? 1 : 0) }
  float (field: number, v: number): this {
    this.key(field, Wire.FIXED32)
    const b = Buffer.alloc(4)
    b.writeFloatLE(v)
    this.parts.push(b)
    return this
  }
  bytes (field: number, v: Buffer): this { this.key(field, Wire.LENGTH_DELIMITED); this.varint(v.length); this.parts.push(v); return this }
  string (field: number, v: string): this { return this.bytes(field, Buffer.from(v, 'utf8')) }
  message (field: number, m: Proto): this { return this.bytes(field, m.toBuffer()) }
  toBuffer (): Buffer { return Buffer.concat(this.parts) }
}

export interface SentencePieceModel {
  /** `type` is ModelProto.SentencePiece.Type, whose numbers GGUF's tokenizer.ggml.token_type shares. */
  pieces: Array<{ piece: string, score: number, type: number }>
  /** BPE merges the highest-scoring adjacent pair first, as llama.cpp's SPM tokenizer does. */
  modelType: 'unigram' | 'bpe'
  unkId: number
  bosId: number
  eosId: number
  /** -1: no padding piece. */
  padId: number
}

/**
 * Serializes a ModelProto with byte fallback (needed for `<0xNN>` pieces) and Llama's normalizer: no
 * normalization rules, a dummy "▁" prefix, spaces escaped to "▁", repeated spaces kept.
 */
export function encodeSentencePieceModel (model: SentencePieceModel): Buffer {
  const proto = new Proto()
  for (const p of model.pieces) proto.message(1, new Proto().string(1, p.piece).float(2, p.score).int(3, p.type))
  const pieceName = (id: number): string | undefined => model.pieces[id]?.piece
  const trainer = new Proto()
    .int(3, model.modelType === 'bpe' ? 2 : 1) // model_type
    .int(4, model.pieces.length) // vocab_size
    .bool(35, true) // byte_fallback
    .int(40, model.unkId).int(41, model.bosId).int(42, model.eosId).int(43, model.padId)
  // The *_piece names are how SentencePieceProcessor finds its special ids at load time.
  const names: Array<[number, number]> = [[45, model.unkId], [46, model.bosId], [47, model.eosId], [48, model.padId]]
  for (const [field, id] of names) { const name = pieceName(id); if (name !== undefined) trainer.string(field, name) }
  proto.message(2, trainer)
  proto.message(3, new Proto()
    .string(1, 'identity') // name
    .bool(3, true) // add_dummy_prefix
    .bool(4, false) // remove_extra_whitespaces
    .bool(5, true)) // escape_whitespaces
  return proto.toBuffer()
}
