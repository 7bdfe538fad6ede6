// A small SentencePiece-style vocabulary: the special tokens, the 256 byte tokens llama.cpp's SPM tokenizer
// falls back to, and a few hundred pieces, some of them multi-byte (to exercise UTF-8 handling).

/** GGUF's tokenizer.ggml.token_type, which has SentencePiece's piece type numbers. */
export const TokenType = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, BYTE: 6 } as const

export interface Vocab { tokens: string[], scores: number[], types: number[], bos: number, eos: number, unk: number, imStart: number, imEnd: number }

const WORDS = `the of and to in is was he for it with as his on be at by had are but from or have an they which one you were
her all she there would their we him been has when who will more no if out so said what up its about into than them can only
other new some could time these two may then do first any my now such like our over man me even most made after also did many
before must through back years where much your way well down should because each just those people how too little state good
very make world still own see men work long get here between both life being under never day same another know while last
might us great old year off come since against go came right used take three hello world model token llama gate local server
chat stream answer question`.split(/\s+/)
const EXTRA = ['é', 'è', 'ü', 'ß', 'ñ', '日本', '語', '中文', '한국', 'Привет', '🙂', '🚀', 'café', 'naïve', '…', '—', '€']
const FRAGMENTS = `ing ed er es th re an on en at ou or st ar le al ly ion tion ent ness ment able ous ive est ers ies ity ful less
▁un ▁re ▁in ▁con ▁pro ▁dis ▁pre ▁com ▁ex ▁th ▁wh ▁st ▁sh ▁ch ç ö å ø 東京 世界 こんにちは 你好 😀 👍 ▁ç ▁ö ▁東京 ▁世界 ▁你好`.split(/\s+/)

/** Every piece the vocabulary can hold, most common first: `extraPieces` takes a prefix of this list. */
function piecePool (): string[] {
  const pool = new Set<string>()
  for (const c of 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?;:\'"()-') pool.add(c)
  for (const c of 'abcdefghijklmnopqrstuvwxyz') pool.add(`▁${c}`)
  pool.add('▁')
  for (const e of EXTRA) { pool.add(e); pool.add(`▁${e}`) }
  for (const w of WORDS) pool.add(`▁${w}`)
  for (const w of WORDS) pool.add(w)
  for (const f of FRAGMENTS) pool.add(f)
  return [...pool]
}

/** The vocabulary: `<unk>`, `<s>`, `</s>`, 256 byte tokens, `extraPieces` pieces, `<|im_start|>`, `<|im_end|>`. */
export function tinyVocab (extraPieces = 300): Vocab {
  const pool = piecePool()
  if (!Number.isInteger(extraPieces) || extraPieces < 0 || extraPieces > pool.length) {
    throw new RangeError(`extraPieces must be an integer from 0 to ${pool.length}, not ${extraPieces}`)
  }
  const tokens: string[] = ['<unk>', '<s>', '</s>']
  const types: number[] = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL]
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`)
    types.push(TokenType.BYTE)
  }
  for (const p of pool.slice(0, extraPieces)) { tokens.push(p); types.push(TokenType.NORMAL) }
  const imStart = tokens.push('<|im_start|>') - 1
  types.push(TokenType.CONTROL)
  const imEnd = tokens.push('<|im_end|>') - 1
  types.push(TokenType.CONTROL)
  // SentencePiece scores: the tokenizer merges the higher-scoring (here: earlier) pieces first; special and
  // byte tokens score 0.
  const scores = tokens.map((_, i) => (types[i] === TokenType.NORMAL ? -i / 10 : 0))
  return { tokens, scores, types, bos: 1, eos: imEnd, unk: 0, imStart, imEnd }
}

/** ChatML, which llama-server's Jinja engine renders. */
export const CHAT_TEMPLATE = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
