/** One request of a batch's input file, checked. */
export interface BatchLine { line: number, customId: string, url: string, body: Record<string, unknown> }

/** A line that is no request of this batch: it lands in the error file, the others run. */
export interface LineError { line: number, customId: string | null, message: string }

/** What the input file holds: its requests, its bad lines, or (`fatal`) why the batch cannot run at all. */
export interface ReadLines { requests: BatchLine[], errors: LineError[], fatal: string | null }

const MAX_CUSTOM_ID = 512

/**
 * The requests of a batch's input file: JSON lines `{custom_id, method: "POST", url, body}` whose url is the batch's
 * endpoint and whose custom_id is the only one of its text in the file. A line that is not one is an error of its own
 * (the error file says which line and why); a file with no line, or more than `maxRequests`, fails the batch.
 */
export function readLines (text: string, endpoint: string, maxRequests: number): ReadLines {
  const lines = text.split('\n')
  if (lines.at(-1) === '') lines.pop()
  const count = lines.filter((l) => l.trim() !== '').length
  if (count === 0) return { requests: [], errors: [], fatal: 'the input file has no request: one JSON object per line' }
  if (count > maxRequests) return { requests: [], errors: [], fatal: `the input file has ${count} requests, more than limits.batch_requests (${maxRequests})` }
  const requests: BatchLine[] = []
  const errors: LineError[] = []
  const seen = new Set<string>()
  lines.forEach((text, i) => {
    const line = i + 1
    if (text.trim() === '') return
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      errors.push({ line, customId: null, message: `line ${line} is not JSON` })
      return
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      errors.push({ line, customId: null, message: `line ${line} is not a JSON object` })
      return
    }
    const { custom_id: customId, method, url, body } = value as Record<string, unknown>
    const id = typeof customId === 'string' && customId !== '' && customId.length <= MAX_CUSTOM_ID ? customId : null
    const fail = (message: string): void => { errors.push({ line, customId: id, message: `line ${line}: ${message}` }) }
    if (id === null) return fail(`custom_id must be a string of 1-${MAX_CUSTOM_ID} characters`)
    if (seen.has(id)) return fail(`custom_id "${id}" is used by an earlier line: each must be unique`)
    seen.add(id)
    if (method !== 'POST') return fail('method must be "POST"')
    if (url !== endpoint) return fail(`url must be the batch's endpoint, ${endpoint}`)
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return fail('body must be a JSON object')
    if (typeof (body as Record<string, unknown>).model !== 'string') return fail('body.model must name a model')
    requests.push({ line, customId: id, url, body: body as Record<string, unknown> })
  })
  return { requests, errors, fatal: null }
}
