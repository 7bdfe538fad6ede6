import { rm, rmdir, stat } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import { BadRequestError, GatewayError, ModelNotFoundError } from '../../core/base/errors.js'
import { parseModelName } from '../../core/base/model-name.js'
import { overlay } from '../../core/config/request-options.js'
import { sha256File } from './file-hash.js'
import { readGgufInfo } from './gguf-info.js'
import { ggufParts, hardLinkOrCopy, isLaterSplitPart, linkOrCopy, type LinkKind } from './link-file.js'
import type { Manifest, ManifestFile, Variant } from './manifest.js'
import type { ModelRecord } from './model-record.js'
import type { ManifestInput, ModelWriter, OpenWriterOptions } from './model-writer.js'
import { modelKey } from './store-layout.js'

/** What a created model has of its own (`/api/create`): its system prompt, default options, chat template. */
export type ModelSettings = Pick<Manifest, 'system' | 'parameters' | 'template'>

/** A file on this disk (a verified upload, a quantized output) to make a model of, under `name`. */
export interface LocalFile { name: string, path: string, sha256: string }

/** A file name a created model may use: a plain `.gguf` name in its folder. @throws BadRequestError */
export function checkModelFileName (name: string): void {
  if (!/^[\w.-]+\.gguf$/i.test(name) || name.startsWith('.')) throw new BadRequestError(`file name ${JSON.stringify(name)} is not a GGUF file name (letters, digits, . _ -, ending in .gguf)`)
}

/** `given` over `base`: what is given replaces, parameters merge key by key (num_predict and max_tokens as one). */
export function inheritSettings (base: ModelSettings | null, given: ModelSettings): ModelSettings {
  const system = given.system ?? base?.system
  const template = given.template ?? base?.template
  const parameters = base?.parameters || given.parameters ? overlay(base?.parameters, given.parameters) : undefined
  return { ...(system !== undefined ? { system } : {}), ...(template !== undefined ? { template } : {}), ...(parameters ? { parameters } : {}) }
}

/** What making a model needs of the store: the models it has, and a writer holding a model's lock. */
interface WriterSource {
  get(name: string): ModelRecord
  openWriter(name: string, opts?: OpenWriterOptions): Promise<ModelWriter>
}

/**
 * Every way a model is made from files already on this disk (an import, a copy, Ollama's create) or given a
 * converted variant. Each goes through the store's writers: under the model's lock, committed whole or not at all.
 */
export class ModelCreation {
  constructor (private readonly store: WriterSource) {}

  /**
   * Registers a GGUF already on disk (all parts of a split one), linked rather than copied where the file
   * system allows; the manifest says where it came from and how it was linked.
   * @throws InvalidModelNameError, BadRequestError (no such file, not a GGUF), ConflictError
   */
  async import (name: string, file: string, options: { projector?: string } = {}): Promise<ModelRecord> {
    const { id } = parseModelName(name)
    const source = await readableGguf(file)
    const projector = options.projector === undefined ? null : await readableGguf(options.projector)
    if (projector !== null && basename(projector) === basename(source)) throw new BadRequestError(`cannot import ${options.projector} as the projector: it has the model file's name (they would share one file in the model's folder)`)
    let parts: string[]
    try {
      parts = await ggufParts(source)
    } catch (err) {
      throw new BadRequestError(`cannot import ${file}: ${(err as Error).message}`)
    }
    const writer = await this.store.openWriter(id, { wait: true })
    try {
      const files: ManifestFile[] = []
      let link: LinkKind | undefined
      for (const part of parts) {
        const target = join(writer.dir, basename(part))
        const kind = await linkOrCopy(part, target)
        link ??= kind
        files.push({ name: basename(part), size: (await stat(target)).size, sha256: await sha256File(target) })
      }
      if (projector !== null) {
        const target = join(writer.dir, basename(projector))
        await linkOrCopy(projector, target)
        files.push({ name: basename(projector), size: (await stat(target)).size, sha256: await sha256File(target) })
      }
      return await writer.commit({
        name: id,
        format: 'gguf',
        source: { type: 'import', path: source, link },
        files,
        primary: basename(source),
        variants: [],
        ...(projector !== null ? { projector: basename(projector) } : {}),
      })
    } finally {
      await writer.release()
    }
  }

  /**
   * Makes `to` a second name of the model `from` (Ollama's copy): its files hard-linked into the new folder, so
   * that no byte is copied and either name can be deleted without the other. An existing `to` is replaced.
   * @throws InvalidModelNameError, ModelNotFoundError, BadRequestError (the same name), ConflictError (either
   *   being written)
   */
  async copy (from: string, to: string): Promise<ModelRecord> {
    return this.derive(from, to, (manifest, id, link) => ({ ...manifest, name: id, source: { type: 'copy', model: manifest.name, link } }))
  }

  /**
   * Ollama's create from a local model: its files shared, as by copy, with `settings` over its own.
   * @throws ModelNotFoundError (from), BadRequestError (the same name), ConflictError
   */
  async createFrom (name: string, from: string, settings: ModelSettings): Promise<ModelRecord> {
    return this.derive(from, name, (manifest, id, link) => ({
      ...manifest, ...inheritSettings(manifest, settings), name: id, source: { type: 'create', model: manifest.name, link },
    }))
  }

  /**
   * Ollama's create from GGUF files on this disk (verified uploads, a quantized output): one GGUF, or the
   * parts of one split GGUF, linked into the model's folder under their names.
   * @throws BadRequestError (a bad file name, not one model), GatewayError 422 (not a GGUF), ConflictError
   */
  async createFromFiles (name: string, files: LocalFile[], settings: ModelSettings): Promise<ModelRecord> {
    const { id } = parseModelName(name)
    for (const file of files) checkModelFileName(file.name)
    const firsts = files.filter((f) => !isLaterSplitPart(f.name))
    if (firsts.length !== 1) throw new BadRequestError(`"files" must hold one GGUF (or the parts of one split GGUF); found ${firsts.length} models`)
    const primary = firsts[0]!
    // Checked before anything is linked: a model this one replaces keeps its files if the upload is no GGUF.
    await readGgufInfo(primary.path).catch((err: Error) => {
      throw new GatewayError(422, `model "${id}": ${primary.name} is not a readable GGUF file (${err.message})`, { code: 'invalid_gguf' })
    })
    const writer = await this.store.openWriter(id, { wait: true })
    try {
      return await this.linkAndCommit(writer, files.map((f) => ({ from: f.path, name: f.name })), async () => {
        await ggufParts(join(writer.dir, primary.name)).catch((err: Error) => { throw new BadRequestError(`"files": ${err.message}`) })
        const manifestFiles: ManifestFile[] = []
        for (const f of files) manifestFiles.push({ name: f.name, size: (await stat(f.path)).size, sha256: f.sha256 })
        return { name: id, format: 'gguf', source: { type: 'create' }, files: manifestFiles, primary: primary.name, variants: [], ...inheritSettings(null, settings) }
      })
    } finally {
      await writer.release()
    }
  }

  /**
   * Adds a GGUF made from a SafeTensors model (the converter's output, already in the model's folder) to its
   * manifest, replacing one of the same dtype. @throws ModelNotFoundError, BadRequestError
   */
  async addVariant (name: string, variant: Variant): Promise<ModelRecord> {
    const writer = await this.store.openWriter(name, { wait: true })
    try {
      const current = writer.existing
      if (!current) throw new ModelNotFoundError(parseModelName(name).id)
      return await writer.commit({ ...manifestInput(current), variants: [...current.variants.filter((v) => v.dtype !== variant.dtype), variant] })
    } finally {
      await writer.release()
    }
  }

  /**
   * A new model `to` made of the files of `from`, its manifest shaped by `shape`. Both models' locks are held:
   * the source is neither deleted nor rewritten while its files are linked (its lock is not waited for).
   */
  private async derive (from: string, to: string, shape: (manifest: ManifestInput & { variants: Variant[] }, id: string, link: LinkKind | undefined) => ManifestInput): Promise<ModelRecord> {
    const source = this.store.get(from)
    const { id } = parseModelName(to)
    if (modelKey(id) === modelKey(source.name)) throw new BadRequestError(`"${to}" is the model "${source.name}" itself: give another name`)
    const reading = await this.store.openWriter(source.name)
    try {
      const manifest = reading.existing
      if (!manifest) throw new ModelNotFoundError(source.name)
      const writer = await this.store.openWriter(id, { wait: true })
      try {
        const names = [...manifest.files.map((f) => f.name), ...manifest.variants.map((v) => v.file)]
        return await this.linkAndCommit(writer, names.map((name) => ({ from: join(reading.dir, name), name })),
          (link) => shape(manifestInput(manifest), id, link))
      } finally {
        await writer.release()
      }
    } finally {
      await reading.release()
    }
  }

  /**
   * Hard-links files into a writer's folder (a copy where the file system has none, never a symlink that would
   * break with its source), then commits the manifest `describe` gives. A new model that fails on the way leaves
   * nothing behind; a model it would have replaced keeps its manifest, and so stays whole.
   */
  private async linkAndCommit (writer: ModelWriter, links: Array<{ from: string, name: string }>, describe: (link: LinkKind | undefined) => ManifestInput | Promise<ManifestInput>): Promise<ModelRecord> {
    const linked: string[] = []
    try {
      let link: LinkKind | undefined
      for (const { from, name } of links) {
        const kind = await hardLinkOrCopy(from, join(writer.dir, name))
        linked.push(name)
        link ??= kind
      }
      return await writer.commit(await describe(link))
    } catch (err) {
      if (writer.existing === null) {
        for (const name of linked) await rm(join(writer.dir, name), { force: true })
        await rmdir(writer.dir).then(() => rmdir(dirname(writer.dir))).catch(() => {})
      }
      throw err
    }
  }

}

/** A committed manifest as the input of the next commit: what the store derives again (GGUF facts, time) left out. */
function manifestInput (manifest: Manifest): ManifestInput & { variants: Variant[] } {
  const { version: _v, modified_at: _m, gguf: _g, projector_inputs: _p, ...input } = manifest
  return input
}

/** The absolute path of a GGUF file to import. @throws BadRequestError when it is missing or no GGUF */
async function readableGguf (file: string): Promise<string> {
  const path = resolve(file)
  let info
  try {
    info = await stat(path)
  } catch {
    throw new BadRequestError(`cannot import ${file}: no such file`)
  }
  if (!info.isFile()) throw new BadRequestError(`cannot import ${file}: not a file`)
  try {
    await readGgufInfo(path)
  } catch (err) {
    throw new BadRequestError(`cannot import ${file}: not a GGUF file (${(err as Error).message})`)
  }
  return path
}
