// An example model source (`app.modelSources.add`), typed by `llamagate/plugin`: `llamagate pull folder/<name>` (or
// POST /api/pull) copies `<dir>/<name>.gguf` from a folder (a share, a mounted disk) into the store, its progress
// streamed as the hub's is; every other name is still pulled from the hub.
//
//   plugins:
//     - path: llamagate-plugin-folder-source
//       options: { dir: /mnt/models, owner: folder }
import { createReadStream, createWriteStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { definePlugin, ModelNotFoundError, Type } from 'llamagate/plugin'

export default definePlugin({
  name: 'folder-source',
  options: Type.Object({
    dir: Type.String({ minLength: 1 }),
    owner: Type.String({ pattern: '^[A-Za-z0-9_][A-Za-z0-9._-]*$', default: 'folder' }),
  }, { additionalProperties: false }),
  register (app, options) {
    // `<owner>/<name>[:tag]` and only that owner's: the name is already checked to be no path (no `/`, no `..`).
    const fileOf = (model: string): string | null => {
      const match = /^([^/:]+)\/([^/:]+)(?::.*)?$/.exec(model)
      return match !== null && match[1]!.toLowerCase() === options.owner.toLowerCase() ? `${match[2]}.gguf` : null
    }
    app.modelSources.add({
      name: 'folder',
      claims: (model) => fileOf(model) !== null,
      async pull (model, { signal, progress, dir }) {
        const name = fileOf(model)!
        const from = join(options.dir, name)
        const size = await stat(from).then((s) => s.size, () => null)
        if (size === null) throw new ModelNotFoundError(model)
        let copied = 0
        const counted = new Transform({
          transform (chunk: Buffer, _encoding, done) {
            copied += chunk.length
            progress({ status: `copying ${name}`, digest: name, total: size, completed: copied })
            done(null, chunk)
          },
        })
        progress({ status: `copying ${name}`, digest: name, total: size, completed: 0 })
        const to = join(dir, name)
        await pipeline(createReadStream(from), counted, createWriteStream(to), { signal })
        return to
      },
    })
  },
})
