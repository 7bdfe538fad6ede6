import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { extname, join } from 'node:path'

/** One file of the built page, held in memory with what its answer needs. */
export interface PageFile {
  body: Buffer
  contentType: string
  etag: string
  /** Its name has its content's hash: browsers may keep it for good. Else it is checked again on each load. */
  immutable: boolean
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
}

// esbuild's entryNames '[name]-[hash]': a file so named never changes content, so browsers may keep it for good.
const HASHED = /-[A-Z0-9]{8}\.(?:js|css)$/

/**
 * The page as `npm run build` wrote it (scripts/build/build-web-ui.ts): a handful of small files, read once at start,
 * so that a request never touches the disk and only these names can ever be served (no path to traverse).
 */
export class PageFiles {
  private constructor (private readonly files: Map<string, PageFile>) {}

  /** The files of `dir`; none (an unbuilt checkout) when it does not exist. */
  static async load (dir: string): Promise<PageFiles> {
    const files = new Map<string, PageFile>()
    const names = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [] as string[]
      throw err
    })
    for (const name of names) {
      const contentType = CONTENT_TYPES[extname(name)]
      if (contentType === undefined) continue
      const body = await readFile(join(dir, name))
      files.set(name, {
        body,
        contentType,
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
        // index.html and source maps are checked again on each load (a cheap 304), so a rebuilt page shows at once.
        immutable: HASHED.test(name),
      })
    }
    return new PageFiles(files)
  }

  /** Whether the page was built: without index.html there is nothing to serve. */
  get built (): boolean { return this.files.has('index.html') }

  /** The file of that name, or null. */
  get (name: string): PageFile | null {
    return this.files.get(name) ?? null
  }
}
