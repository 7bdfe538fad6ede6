import { readFile, writeFile } from 'node:fs/promises'
import { basename } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { CLIENT_FLAGS, CLIENT_OPTIONS, JSON_FLAG, JSON_OPTION, UsageError, type Command } from '../../core/platform/command.js'
import type { GatewayClient } from '../../core/platform/gateway-client.js'
import type { BatchObject } from './batch-store.js'

type Action = 'submit' | 'status' | 'results' | 'cancel' | 'list'
const ACTIONS: readonly Action[] = ['submit', 'status', 'results', 'cancel', 'list']
const OVER = ['completed', 'failed', 'expired', 'cancelled']
const BAR_WIDTH = 30
// How often a watch asks how the batch is doing.
const POLL_MS = 500

/**
 * `llamagate batch`: OpenAI's Batch API from the command line: submit a JSONL of requests (uploaded, then made a
 * batch; `--wait` watches it with a progress bar and `--out` writes its results), a batch's status, its results,
 * cancel, list.
 */
export const batchCommand: Command = {
  name: 'batch',
  summary: 'run a JSONL of requests as a background batch: submit, watch with a progress bar, fetch the results',
  usage: [
    'llamagate batch submit <file.jsonl> [--endpoint PATH] [--window 24h] [--wait] [--out FILE]',
    'llamagate batch status <batch-id> [--wait]',
    'llamagate batch results <batch-id> [--errors] [--out FILE]',
    'llamagate batch cancel <batch-id>',
    'llamagate batch list',
  ],
  flags: [
    '--endpoint PATH  submit: the endpoint of every line (default: the first line\'s url)',
    '--window TIME    submit: the completion window, after which what is left expires (default: 24h)',
    '--wait           submit, status: watch until the batch is over, with a progress bar',
    '--out FILE       submit (with --wait), results: write the results there instead of to standard output',
    '--errors         results: the error file (failed, cancelled or expired requests, bad lines) instead',
    JSON_FLAG,
    ...CLIENT_FLAGS,
  ],
  options: {
    ...CLIENT_OPTIONS, ...JSON_OPTION,
    endpoint: { type: 'string' }, window: { type: 'string' }, wait: { type: 'boolean' }, out: { type: 'string' }, errors: { type: 'boolean' },
  },
  positionals: { min: 1, max: 2 },
  positionalsHint: 'expected submit <file>, status <id>, results <id>, cancel <id> or list',
  async run ({ values, positionals, stdout, stderr, client }) {
    const [action, target] = positionals as [string, string | undefined]
    if (!ACTIONS.includes(action as Action)) throw new UsageError(`unknown action "${action}": expected ${ACTIONS.join(', ')}`)
    if ((action === 'list') !== (target === undefined)) throw new UsageError(action === 'list' ? 'batch list takes nothing more' : `batch ${action} needs ${action === 'submit' ? 'a file' : 'a batch id'}`)
    const server = client()
    const show = (batch: BatchObject): void => { stdout.write(values.json === true ? `${JSON.stringify(batch, null, 2)}\n` : `${line(batch)}\n`) }
    switch (action as Action) {
      case 'list': {
        const { data } = await server.json<{ data: BatchObject[] }>('GET', '/v1/batches?limit=100')
        if (values.json === true) stdout.write(`${JSON.stringify(data, null, 2)}\n`)
        else if (data.length === 0) stdout.write('no batches yet (llamagate batch submit <file.jsonl> makes one)\n')
        else for (const batch of data) stdout.write(`${line(batch)}\n`)
        return 0
      }
      case 'cancel':
        show(await server.json<BatchObject>('POST', `/v1/batches/${encodeURIComponent(target!)}/cancel`))
        return 0
      case 'results':
        return await results(server, await server.json<BatchObject>('GET', `/v1/batches/${encodeURIComponent(target!)}`), values, stdout, stderr)
      case 'status': {
        const batch = await server.json<BatchObject>('GET', `/v1/batches/${encodeURIComponent(target!)}`)
        if (values.wait !== true) { show(batch); return 0 }
        const over = await watch(server, batch, stderr)
        show(over)
        return over.status === 'completed' ? 0 : 1
      }
      case 'submit': {
        const text = await readFile(target!, 'utf8').catch((err: NodeJS.ErrnoException) => { throw new UsageError(`cannot read ${target}: ${err.code ?? err.message}`) })
        const endpoint = (values.endpoint as string | undefined) ?? firstUrl(text)
        const form = new FormData()
        form.append('purpose', 'batch')
        form.append('file', new Blob([text]), basename(target!))
        const file = await (await server.send('POST', '/v1/files', { raw: form })).json() as { id: string }
        const created = await server.json<BatchObject>('POST', '/v1/batches', { input_file_id: file.id, endpoint, completion_window: (values.window as string | undefined) ?? '24h' })
        stderr.write(`submitted ${created.id} (${endpoint}, file ${file.id})\n`)
        if (values.wait !== true) { show(created); return 0 }
        const over = await watch(server, created, stderr)
        show(over)
        if (typeof values.out === 'string') await results(server, over, values, stdout, stderr)
        return over.status === 'completed' ? 0 : 1
      }
    }
  },
}

/** A batch on one line: id, status, its counts, its endpoint. */
function line (batch: BatchObject): string {
  const { total, completed, failed } = batch.request_counts
  return `${batch.id}  ${batch.status}  ${completed}/${total} done${failed > 0 ? `, ${failed} failed` : ''}  ${batch.endpoint}`
}

/** The endpoint the file's first request names. @throws UsageError when it names none */
function firstUrl (text: string): string {
  const first = text.split('\n').find((l) => l.trim() !== '')
  try {
    const url = (JSON.parse(first ?? '') as { url?: unknown }).url
    if (typeof url === 'string') return url
  } catch { /* told below */ }
  throw new UsageError('the file\'s first line names no url: give --endpoint, or write JSONL lines {"custom_id", "method": "POST", "url", "body"}')
}

/** Asks how the batch is doing until it is over, drawing its progress (one line redrawn on a terminal, a line per change elsewhere). */
async function watch (server: GatewayClient, batch: BatchObject, stderr: NodeJS.WriteStream): Promise<BatchObject> {
  let shown = ''
  for (;;) {
    const { total, completed, failed } = batch.request_counts
    const done = completed + failed
    const filled = total === 0 ? 0 : Math.round(BAR_WIDTH * done / total)
    const text = `${batch.status.padEnd(11)} [${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${done}/${total}${failed > 0 ? ` (${failed} failed)` : ''}`
    if (text !== shown) {
      stderr.write(stderr.isTTY ? `\r${text}` : `${text}\n`)
      shown = text
    }
    if (OVER.includes(batch.status)) {
      if (stderr.isTTY) stderr.write('\n')
      return batch
    }
    await sleep(POLL_MS)
    batch = await server.json<BatchObject>('GET', `/v1/batches/${encodeURIComponent(batch.id)}`)
  }
}

/** Writes a batch's output (or, `--errors`, error) file to --out or standard output. */
async function results (server: GatewayClient, batch: BatchObject, values: Record<string, unknown>, stdout: NodeJS.WriteStream, stderr: NodeJS.WriteStream): Promise<number> {
  const id = values.errors === true ? batch.error_file_id : batch.output_file_id
  if (id === null) {
    stderr.write(OVER.includes(batch.status)
      ? `${batch.id} has no ${values.errors === true ? 'error' : 'output'} file: ${values.errors === true ? 'nothing failed' : 'no request was answered'}\n`
      : `${batch.id} is ${batch.status}: its results come once it is over (llamagate batch status ${batch.id} --wait)\n`)
    return OVER.includes(batch.status) ? 0 : 1
  }
  const text = await (await server.send('GET', `/v1/files/${encodeURIComponent(id)}/content`)).text()
  if (typeof values.out === 'string') {
    await writeFile(values.out, text)
    stderr.write(`wrote ${text.split('\n').filter((l) => l !== '').length} result lines to ${values.out}\n`)
  } else {
    stdout.write(text)
  }
  return 0
}
