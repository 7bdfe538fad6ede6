import { execFile } from 'node:child_process'
import { createHash, randomUUID } from 'node:crypto'
import { copyFile, lstat, mkdir, readdir, readFile, readlink, rename, rm, symlink, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { AttackResult, AttackWorker } from './soak-attack-kinds.js'

// The hostile soak's cache-folder writer: whoever can write into the models folder plants files in its
// prompt-cache folder (plugins/prompt-cache/prompt-cache-folder.ts): sidecars naming paths outside it, a save lying
// about its size, links and a FIFO named like saves, files of its own; and swaps the gateway's live saves for links
// out of the folder and for FIFOs. Files outside the folder must outlive the run untouched, and what the gateway
// did not write be left as it was. The gateway reads the folder whole once, at its first load: a first round is
// planted before it starts; the later ones meet its saves, restores and budget sweeps.

const SAVE_BIN = /^([0-9a-f]{16})-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.bin$/
/** A key no model of the soak has: names the gateway would write, for saves it never made. */
const FOREIGN_KEY = '0123456789abcdef'
/** How long a swapped save is left before it is looked at: long enough for its model to be swapped out and in. */
const JUDGE_AFTER_MS = 15_000
const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')
const kind = 'cache_writer' as const

interface Plant {
  variant: string
  dueAt: number
  /** What became of it, and whether that is an answer docs/operations.md allows. */
  judge: () => Promise<{ answer: string, expected: boolean }>
  /** Removes what is left of it: the writer tidies its own, so that the folder stays bounded. */
  tidy: () => Promise<void>
}

const exists = (file: string): Promise<boolean> => lstat(file).then(() => true, () => false)
const mkfifo = async (file: string): Promise<void> => { await promisify(execFile)('mkfifo', [file]) }

/** A sidecar as the gateway writes it, with `claims` on top. */
function sidecar (key: string, id: string, claims: Record<string, unknown> = {}): string {
  return JSON.stringify({ id, key, salt: '', model: 'soak/alpha', tokens: 100, bytes: 1000, savedAt: Date.now(), lastUsed: Date.now(), ...claims })
}

export class CacheWriter {
  readonly dir: string
  private readonly outside: string
  /** Files outside the folder, where a traversal or a link would land, and their bytes' digests. */
  private readonly victims = new Map<string, string>()
  private plants: Plant[] = []
  /** The saves it has planted over, and those it planted: never taken for the gateway's. */
  private readonly taken = new Set<string>()
  private rounds = 0
  private rand: () => number = Math.random

  constructor (modelsDir: string, private readonly dataDir: string) {
    this.dir = join(modelsDir, '.prompt-cache')
    this.outside = join(dataDir, 'outside')
  }

  /** The victims, and a first round that the gateway's start-up scan meets (judged at the writer's first attempt). */
  async plantBeforeStart (): Promise<void> {
    await mkdir(this.dir, { recursive: true })
    await mkdir(this.outside, { recursive: true })
    for (const name of ['victim.json', 'victim.bin']) await this.victim(join(this.dataDir, name), Buffer.from('not the gateway\'s\n'))
    const state = join(this.outside, 'state.bin')
    await this.victim(state, Buffer.alloc(4096, 7))
    const at = (name: string): string => join(this.dir, name)
    const [a, b, c, d, e, f] = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()]
    const gone = (...names: string[]) => async () => (await Promise.all(names.map((n) => exists(at(n))))).every((x) => !x)
    const there = (...names: string[]) => async () => (await Promise.all(names.map((n) => exists(at(n))))).every((x) => x)
    const scanned = (variant: string, answer: string, holds: () => Promise<boolean>): Plant => ({
      variant: `before the start: ${variant}`, dueAt: 0, tidy: async () => {},
      judge: async () => await holds() ? { answer, expected: true } : { answer: `not ${answer}`, expected: false },
    })
    // The attack as first found: a name of its own, an id climbing out, a size past any budget, used long ago.
    await writeFile(at('evil.json'), JSON.stringify({ id: '/../../../../victim', key: 'x', model: 'soak/alpha', tokens: 1, bytes: 1e12, savedAt: 0, lastUsed: 0 }))
    await writeFile(at('evil.bin'), 'x')
    // The same under the gateway's own names: the name says one thing, the sidecar another.
    await writeFile(at(`${FOREIGN_KEY}-${a}.json`), sidecar(FOREIGN_KEY, '/../../../../victim', { bytes: 1e12 }))
    await writeFile(at(`${FOREIGN_KEY}-${a}.bin`), 'x')
    await writeFile(at(`${FOREIGN_KEY}-${b}.json`), sidecar('../../../victim', b, { bytes: 1e12 }))
    await writeFile(at(`${FOREIGN_KEY}-${b}.bin`), 'x')
    // A save that says it weighs nothing: 50 MB to stat (sparse), past the soak's budget alone.
    await writeFile(at(`${FOREIGN_KEY}-${c}.json`), sidecar(FOREIGN_KEY, c, { bytes: 0 }))
    await writeFile(at(`${FOREIGN_KEY}-${c}.bin`), '')
    await truncate(at(`${FOREIGN_KEY}-${c}.bin`), 50e6)
    // Links named like saves, out to the victims; a FIFO, which would hold an open that waits for a writer.
    await symlink(state, at(`${FOREIGN_KEY}-${d}.bin`))
    await writeFile(at(`${FOREIGN_KEY}-${d}.json`), sidecar(FOREIGN_KEY, d, { lastUsed: Date.now() + 1e9 }))
    await symlink(join(this.dataDir, 'victim.json'), at(`${FOREIGN_KEY}-${e}.json`))
    await mkfifo(at(`${FOREIGN_KEY}-${f}.bin`))
    await mkdir(at('photos'), { recursive: true })
    await writeFile(at('photos/cat.jpg'), 'meow')
    await writeFile(at('notes.txt'), 'mine')
    await writeFile(at('tmp-notes.bin'), 'mine too')
    const links = async (...names: string[]) => (await Promise.all(names.map(async (n) => (await lstat(at(n)).catch(() => null))?.isSymbolicLink() === true))).every((x) => x)
    this.plants.push(
      scanned('a sidecar of its own name with an id climbing out', 'left alone: not a name the gateway writes', there('evil.json', 'evil.bin')),
      scanned('a sidecar whose id climbs out of the folder', 'deleted with its .bin, inside the folder: its sidecar disagrees with its name', gone(`${FOREIGN_KEY}-${a}.json`, `${FOREIGN_KEY}-${a}.bin`)),
      scanned('a sidecar whose key climbs out of the folder', 'deleted with its .bin, inside the folder: its sidecar disagrees with its name', gone(`${FOREIGN_KEY}-${b}.json`, `${FOREIGN_KEY}-${b}.bin`)),
      scanned('a save claiming 0 bytes, 50 MB on disk', 'dropped at the start: counted by its size on disk, past the budget', gone(`${FOREIGN_KEY}-${c}.json`, `${FOREIGN_KEY}-${c}.bin`)),
      scanned('a link named like a save\'s .bin, out of the folder', 'the link left as it was, its sidecar deleted', async () => await links(`${FOREIGN_KEY}-${d}.bin`) && await gone(`${FOREIGN_KEY}-${d}.json`)()),
      scanned('a link named like a sidecar, out to a victim', 'left as it was', () => links(`${FOREIGN_KEY}-${e}.json`)),
      scanned('a FIFO named like a save\'s .bin', 'left as it was', async () => (await lstat(at(`${FOREIGN_KEY}-${f}.bin`)).catch(() => null))?.isFIFO() === true),
      scanned('files and a folder of its own', 'left alone: not a name the gateway writes', there('notes.txt', 'tmp-notes.bin', 'photos/cat.jpg')),
    )
  }

  /** The writer's loop: what became of its earlier plants, the victims, then more plants. */
  worker (rand: () => number): AttackWorker {
    this.rand = rand
    return { kind, pauseMs: 3000, attempt: () => this.round(), finish: () => this.look(true) }
  }

  /** The victims once more, after the gateway exited (its shutdown saves and sweeps are the last). */
  async afterExit (): Promise<AttackResult> {
    const t0 = performance.now()
    const { answer, expected } = await this.victimsWhole()
    return { kind, variant: 'the files outside the folder, after the gateway exited', answer, expected, ms: performance.now() - t0 }
  }

  private async round (): Promise<AttackResult[]> {
    const results = await this.look(false)
    this.rounds++
    await this.plantLive()
    return results
  }

  /** Judges the plants that are due (all of them at the end), tidies them, and checks the victims. */
  private async look (all: boolean): Promise<AttackResult[]> {
    const results: AttackResult[] = []
    const now = Date.now()
    const due = this.plants.filter((p) => all || p.dueAt <= now)
    this.plants = this.plants.filter((p) => !due.includes(p))
    for (const plant of due) {
      const t0 = performance.now()
      const { answer, expected } = await plant.judge()
      await plant.tidy()
      results.push({ kind, variant: plant.variant, answer, expected, ms: performance.now() - t0 })
    }
    const t0 = performance.now()
    const { answer, expected } = await this.victimsWhole()
    results.push({ kind, variant: 'the files outside the folder', answer, expected, ms: performance.now() - t0 })
    return results
  }

  /**
   * Mid-run plants: one of the gateway's live saves swapped for a link to a copy of it outside the folder, or for a
   * FIFO, or its sidecar overwritten with one whose id climbs out; and, under a live key, names the gateway would
   * write that it never did (read at a start only).
   */
  private async plantLive (): Promise<void> {
    const live = await this.liveSaves()
    const save = live[Math.floor(this.rand() * live.length)]
    const dueAt = Date.now() + JUDGE_AFTER_MS
    if (save !== undefined) {
      this.taken.add(save)
      const bin = join(this.dir, `${save}.bin`)
      const json = join(this.dir, `${save}.json`)
      const swap = join(this.dir, `swap-${randomUUID()}`)
      const how = this.rounds % 3
      if (how === 0 || how === 1) {
        // A link to a real state file (the most tempting target: llama-server would restore it), or a FIFO.
        const target = join(this.outside, `${save}.bin`)
        if (how === 0) {
          await copyFile(bin, target).catch(() => {})
          if (!await exists(target)) return
          await this.victim(target, await readFile(target))
          await symlink(target, swap)
        } else await mkfifo(swap)
        // rename replaces the name at once: the gateway sees its save, or the planted file.
        if (await rename(swap, bin).then(() => true, () => false)) this.plants.push(this.swapped(how === 0 ? 'a live save\'s .bin swapped for a link out of the folder' : 'a live save\'s .bin swapped for a FIFO', bin, json, how === 0 ? target : null, dueAt))
        await rm(swap, { force: true })
      } else {
        const planted = sidecar(save.slice(0, 16), '/../../../../victim', { bytes: 0, lastUsed: 0 })
        await writeFile(json, planted)
        this.plants.push({
          variant: 'a live save\'s sidecar overwritten: an id climbing out of the folder',
          dueAt,
          judge: async () => {
            const now = await readFile(json, 'utf8').catch(() => null)
            if (now === null) return { answer: 'deleted by the gateway with its save, inside the folder', expected: true }
            if (now === planted) return { answer: 'not met yet: left as it was (read at a start only)', expected: true }
            // Rewritten at a restore: the id its name says, not the planted one.
            const id = (() => { try { return (JSON.parse(now) as { id?: unknown }).id } catch { return null } })()
            return id === save.slice(17) ? { answer: 'rewritten by the gateway from its name', expected: true } : { answer: `rewritten with id ${JSON.stringify(id)}`, expected: false }
          },
          tidy: async () => {},
        })
      }
    }
    // Names the gateway would write, under a key it uses, for saves it never made: left until a start reads them.
    const key = save?.slice(0, 16) ?? FOREIGN_KEY
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()]
    const names = [`${key}-${a}.json`, `${key}-${a}.bin`, `${key}-${b}.bin`, `${key}-${c}.json`, `junk-${a}.txt`]
    // A regular .bin beside a sidecar: what a live save looks like, and so never to be taken for one.
    this.taken.add(`${key}-${a}`)
    await writeFile(join(this.dir, names[0]!), sidecar(key, '/../../../../victim', { bytes: 0 }))
    await writeFile(join(this.dir, names[1]!), 'x')
    await mkfifo(join(this.dir, names[2]!))
    await symlink(join(this.dataDir, 'victim.json'), join(this.dir, names[3]!))
    await writeFile(join(this.dir, names[4]!), 'junk')
    this.plants.push({
      variant: 'names the gateway writes, for saves it never made: a traversal sidecar, a FIFO, a link; and junk',
      dueAt,
      judge: async () => {
        const [sidecarThere, binThere, fifo, link, junk] = await Promise.all(names.map((n) => lstat(join(this.dir, n)).catch(() => null)))
        const foreignLeft = fifo?.isFIFO() === true && link?.isSymbolicLink() === true && junk?.isFile() === true
        // The gateway may delete a sidecar of its names that disagrees with its name (with its .bin), and nothing else.
        if (!foreignLeft) return { answer: 'a FIFO, link or file of its own removed', expected: false }
        return sidecarThere !== null && binThere !== null
          ? { answer: 'left as they were (read at a start only)', expected: true }
          : { answer: 'the traversal sidecar deleted with its .bin, the rest left', expected: sidecarThere === null && binThere === null }
      },
      tidy: async () => { for (const n of names) await rm(join(this.dir, n), { force: true }) },
    })
  }

  /** A live save swapped for a link (to `target`, outside) or a FIFO: met by a restore or a sweep, or not yet. */
  private swapped (variant: string, bin: string, json: string, target: string | null, dueAt: number): Plant {
    const what = target === null ? 'the FIFO left as it was' : 'the link and its target left as they were'
    return {
      variant,
      dueAt,
      judge: async () => {
        const info = await lstat(bin).catch(() => null)
        const intact = target === null ? info?.isFIFO() === true : info?.isSymbolicLink() === true && await readlink(bin) === target
        if (!intact) return { answer: `${target === null ? 'the FIFO' : 'the link'} ${info === null ? 'removed' : `replaced by ${info.isFile() ? `a file of ${info.size} bytes` : info.isSymbolicLink() ? 'another link' : 'something else'}`}`, expected: false }
        const bytes = target === null ? null : await readFile(target).catch(() => null)
        if (target !== null && (bytes === null || sha(bytes) !== this.victims.get(target))) return { answer: `its target outside the folder ${bytes === null ? 'deleted' : 'changed'}`, expected: false }
        return await exists(json)
          ? { answer: `not met yet: ${what}`, expected: true }
          : { answer: `met at a restore or a sweep: its sidecar dropped, ${what}`, expected: true }
      },
      tidy: async () => {
        await rm(bin, { force: true })
        if (target !== null) {
          this.victims.delete(target)
          await rm(target, { force: true })
        }
      },
    }
  }

  /** The gateway's saves now: a regular `.bin` of its names with its sidecar, not one of the writer's. */
  private async liveSaves (): Promise<string[]> {
    const names = await readdir(this.dir).catch(() => [] as string[])
    const found: string[] = []
    for (const name of names) {
      const match = SAVE_BIN.exec(name)
      const stem = `${match?.[1]}-${match?.[2]}`
      if (match === null || match[1] === FOREIGN_KEY || this.taken.has(stem)) continue
      if ((await lstat(join(this.dir, name)).catch(() => null))?.isFile() === true && names.includes(`${stem}.json`)) found.push(stem)
    }
    return found
  }

  private async victim (file: string, bytes: Buffer): Promise<void> {
    await writeFile(file, bytes)
    this.victims.set(file, sha(bytes))
  }

  private async victimsWhole (): Promise<{ answer: string, expected: boolean }> {
    const harmed: string[] = []
    for (const [file, digest] of this.victims) {
      const bytes = await readFile(file).catch(() => null)
      if (bytes === null || sha(bytes) !== digest) harmed.push(`${file.slice(this.dataDir.length + 1)} ${bytes === null ? 'deleted' : 'changed'}`)
    }
    return harmed.length === 0 ? { answer: 'whole', expected: true } : { answer: harmed.join(', '), expected: false }
  }
}
