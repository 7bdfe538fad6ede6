import { BadRequestError, NotFoundError } from '../../core/base/errors.js'
import type { HubFile } from './hub-client.js'

/** What a pull downloads from a repository, and what it is. */
export interface FilePlan {
  format: 'gguf' | 'safetensors'
  files: HubFile[]
  /** The GGUF to load (part 1 of a split); null for SafeTensors. */
  primary: string | null
  /** The vision projector (an `mmproj` GGUF, also in `files`) to load beside it; null when the repository has none. */
  projector: string | null
}

// Largest to smallest, after huggingface.js GGUF_QUANT_ORDER: the default choice walks down from Q4_K_M.
const QUANT_ORDER = ['F32', 'BF16', 'F16', 'Q8_K_XL', 'Q8_0', 'Q6_K_XL', 'Q6_K', 'Q5_K_XL', 'Q5_K_M', 'Q5_K_S', 'Q5_0', 'Q5_1',
  'Q4_K_XL', 'Q4_K_M', 'Q4_K_S', 'IQ4_NL', 'IQ4_XS', 'Q4_0', 'Q4_1', 'MXFP4_MOE', 'Q3_K_XL', 'Q3_K_L', 'Q3_K_M', 'Q3_K_S',
  'IQ3_M', 'IQ3_S', 'IQ3_XS', 'IQ3_XXS', 'Q2_K_XL', 'Q2_K', 'Q2_K_S', 'IQ2_M', 'IQ2_S', 'IQ2_XS', 'IQ2_XXS', 'IQ1_S', 'IQ1_M', 'TQ1_0', 'TQ2_0']
const NOT_A_MODEL = /mmproj|imatrix|mtp-|eagle3-|dflash-|dspark-/i
const PROJECTOR = /mmproj/i
// When no projector matches the model's quant, full precision first: projectors are small, and quantized ones lose most.
const PROJECTOR_FALLBACK = ['F16', 'BF16', 'F32']
const SPLIT = /^(.+)-(\d{5})-of-(\d{5})\.gguf$/i
const SAFETENSORS_EXTRAS = /^(config\.json|generation_config\.json|tokenizer\.json|tokenizer\.model|tokenizer_config\.json|special_tokens_map\.json|added_tokens\.json|vocab\.json|merges\.txt|model\.safetensors\.index\.json)$/

interface Candidate { files: HubFile[], name: string, quant: string | null }

/** A repository path that could climb out of the model's folder is refused (the hub is not trusted blindly). */
export function checkPath (path: string): void {
  if (path === '' || path.startsWith('/') || path.includes('\\') || path.includes('\0') || path.split('/').some((p) => p === '..' || p === '.' || p === '')) {
    throw new BadRequestError(`the repository lists an unsafe file path ${JSON.stringify(path)}; refusing to download it`)
  }
}

function quantOf (name: string): string | null {
  const upper = name.toUpperCase().replace(/\.GGUF$/, '').replace(/-\d{5}-OF-\d{5}$/, '')
  let found: string | null = null
  for (const quant of QUANT_ORDER) {
    const at = upper.lastIndexOf(quant)
    if (at !== -1 && /[-._/]/.test(upper[at - 1] ?? '-') && (at + quant.length === upper.length || /[-._]/.test(upper[at + quant.length]!))) {
      if (!found || quant.length > found.length) found = quant
    }
  }
  return found
}

/** GGUF model files grouped into candidates: a split model is one candidate of all its parts. */
function candidates (files: HubFile[]): Candidate[] {
  const groups = new Map<string, Candidate>()
  for (const file of files) {
    const base = file.path.split('/').pop()!
    if (!base.toLowerCase().endsWith('.gguf') || NOT_A_MODEL.test(base)) continue
    const split = SPLIT.exec(file.path)
    const key = split ? `${split[1]}|${split[3]}` : file.path
    const group = groups.get(key) ?? { files: [], name: file.path, quant: quantOf(base) }
    group.files.push(file)
    groups.set(key, group)
  }
  for (const group of groups.values()) {
    group.files.sort((a, b) => a.path.localeCompare(b.path))
    group.name = group.files[0]!.path
  }
  return [...groups.values()]
}

function folderOf (path: string): string {
  const at = path.lastIndexOf('/')
  return at === -1 ? '' : path.slice(0, at)
}

function bitsOf (quant: string | null): number | null {
  const digits = quant === null ? null : /\d+/.exec(quant)
  return digits ? Number(digits[0]) : null
}

/**
 * The vision projector for a chosen GGUF, as llama.cpp's `-hf` picks it (hub-protocol §7.2 step 6): an `mmproj`
 * GGUF in the model file's folder or one above it, the deepest such folder winning; among those, the one of the
 * model's quant, else F16 (then BF16, F32), else the nearest in bits.
 */
function chooseProjector (files: HubFile[], primary: string, quant: string | null): HubFile | null {
  const home = folderOf(primary)
  const near = files.filter((f) => {
    const base = f.path.split('/').pop()!
    const dir = folderOf(f.path)
    return PROJECTOR.test(base) && base.toLowerCase().endsWith('.gguf') && (dir === '' || home === dir || home.startsWith(`${dir}/`))
  })
  if (near.length === 0) return null
  const depth = Math.max(...near.map((f) => folderOf(f.path).length))
  const deepest = near.filter((f) => folderOf(f.path).length === depth)
  const quantOfFile = (f: HubFile): string | null => quantOf(f.path.split('/').pop()!)
  const exact = quant === null ? undefined : deepest.find((f) => quantOfFile(f) === quant)
  if (exact) return exact
  for (const fallback of PROJECTOR_FALLBACK) {
    const found = deepest.find((f) => quantOfFile(f) === fallback)
    if (found) return found
  }
  const want = bitsOf(quant) ?? 16
  const distance = (f: HubFile): number => Math.abs((bitsOf(quantOfFile(f)) ?? 1000) - want)
  return [...deepest].sort((a, b) => distance(a) - distance(b))[0]!
}

/**
 * Chooses what to download (hub-protocol §7.4): a GGUF by `tag` (a quant label or a file name,
 * case-insensitive), or by default Q4_K_M, then Q8_0, then the nearest smaller quant, then the first;
 * every part of a split GGUF, and the vision projector beside it if there is one (never as the model); never imatrix files. Without GGUF, SafeTensors weights with their
 * config and tokenizer. Neither: an error that says what the repository holds.
 */
export function planFiles (repo: string, files: HubFile[], tag: string | null): FilePlan {
  for (const file of files) checkPath(file.path)
  const ggufs = candidates(files)
  if (ggufs.length > 0) {
    let chosen: Candidate | undefined
    if (tag) {
      const wanted = tag.toLowerCase()
      chosen = ggufs.find((c) => c.files.some((f) => f.path.toLowerCase() === wanted || f.path.split('/').pop()!.toLowerCase() === wanted)) ??
        ggufs.find((c) => c.quant?.toLowerCase() === wanted)
      if (!chosen) throw new NotFoundError(`${repo} has no GGUF for tag "${tag}"; it offers: ${ggufs.map((c) => c.quant ?? c.name).join(', ')}`)
    } else {
      chosen = ggufs.find((c) => c.quant === 'Q4_K_M') ?? ggufs.find((c) => c.quant === 'Q8_0')
      if (!chosen) {
        const target = QUANT_ORDER.indexOf('Q4_K_M')
        const smaller = ggufs.filter((c) => c.quant && QUANT_ORDER.indexOf(c.quant) > target).sort((a, b) => QUANT_ORDER.indexOf(a.quant!) - QUANT_ORDER.indexOf(b.quant!))
        chosen = smaller[0] ?? ggufs[0]
      }
    }
    const primary = chosen!.files[0]!.path
    const projector = chooseProjector(files, primary, chosen!.quant)
    return { format: 'gguf', files: projector ? [...chosen!.files, projector] : chosen!.files, primary, projector: projector?.path ?? null }
  }
  const weights = files.filter((f) => f.path.endsWith('.safetensors') && !f.path.includes('/'))
  if (weights.length > 0 && files.some((f) => f.path === 'config.json')) {
    return { format: 'safetensors', files: [...weights, ...files.filter((f) => SAFETENSORS_EXTRAS.test(f.path))], primary: null, projector: null }
  }
  const shown = files.slice(0, 8).map((f) => f.path).join(', ')
  throw new NotFoundError(`${repo} holds neither a GGUF file nor SafeTensors weights with a config.json (it has: ${shown || 'no files'}${files.length > 8 ? ', ...' : ''})`)
}
