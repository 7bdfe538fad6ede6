import { Worker } from 'node:worker_threads'
import { GatewayError } from '../../core/errors.js'

/** The longest one question's template may take to render: past it the thread is stopped and the request fails. */
export const TEMPLATE_RENDER_MS = 2000
/** The most characters one rendered question may have (a request's whole content is at most 8 MiB). */
const MAX_PROMPT_CHARS = 16 << 20
/** The thread's heap: a template that builds more is stopped by V8, not by the server running out of memory. */
const WORKER_HEAP_MB = 256

interface Render { source: string, input: Record<string, unknown>, resolve(text: string): void, reject(err: Error): void }

/** A decision template that did not render: the model file's, so the server's failure, not the request's. */
export class TemplateRenderError extends GatewayError {
  constructor (message: string) {
    super(500, `the model's decision template (tokenizer.chat_template.systemone) ${message}`, { code: 'template_error' })
  }
}

/**
 * Renders decision models' question templates (files from the models folder, so hostile until shown otherwise) on a
 * worker thread, one at a time: a template that loops or builds without end is stopped after TEMPLATE_RENDER_MS, or
 * at WORKER_HEAP_MB of heap, and its request fails; the thread is started again for the next. The event loop never
 * runs a template, so no model file can hold up the server's other requests; a render waits at most for the one
 * before it (TEMPLATE_RENDER_MS).
 */
export class TemplateRenderer {
  private worker: Worker | null = null
  private readonly queue: Render[] = []
  private current: { render: Render, id: number, timer: NodeJS.Timeout } | null = null
  private nextId = 0

  render (source: string, input: Record<string, unknown>): Promise<string> {
    return new Promise((resolve, reject) => {
      this.queue.push({ source, input, resolve, reject })
      this.pump()
    })
  }

  /** Stops the thread, if one runs; renders asked later start another. */
  async close (): Promise<void> {
    const worker = this.worker
    this.worker = null
    await worker?.terminate()
  }

  private pump (): void {
    if (this.current !== null) return
    const render = this.queue.shift()
    if (render === undefined) return
    const id = this.nextId++
    const timer = setTimeout(() => this.stop(new TemplateRenderError(`took longer than ${TEMPLATE_RENDER_MS} ms to render one question: it was stopped`)), TEMPLATE_RENDER_MS)
    this.current = { render, id, timer }
    this.thread().postMessage({ id, source: render.source, input: render.input, maxChars: MAX_PROMPT_CHARS })
  }

  private thread (): Worker {
    if (this.worker !== null) return this.worker
    const worker = new Worker(new URL('./template-worker.js', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } })
    worker.on('message', (message: { id: number, text?: string, error?: string }) => {
      const current = this.current
      if (current === null || current.id !== message.id) return
      clearTimeout(current.timer)
      this.current = null
      if (message.error !== undefined) current.render.reject(new TemplateRenderError(`could not be rendered: ${message.error}`))
      else current.render.resolve(message.text!)
      this.pump()
    })
    worker.on('error', (err) => { if (this.worker === worker) this.stop(new TemplateRenderError(`stopped its rendering thread: ${err.message}`)) })
    worker.on('exit', () => { if (this.worker === worker) this.stop(new TemplateRenderError('stopped its rendering thread')) })
    // An idle thread does not keep the process alive (after the listeners: adding one refs the thread again).
    worker.unref()
    this.worker = worker
    return worker
  }

  /** The render under way fails with `err`; the thread is stopped, and the next render starts another. */
  private stop (err: Error): void {
    const current = this.current
    const worker = this.worker
    this.worker = null
    this.current = null
    if (current !== null) {
      clearTimeout(current.timer)
      current.render.reject(err)
    }
    void worker?.terminate()
    this.pump()
  }
}
