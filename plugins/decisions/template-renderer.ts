import { Worker } from 'node:worker_threads'
import { GatewayError } from '../../core/base/errors.js'

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
  /** The thread has loaded and said so: a render's deadline starts when it is handed over, not while a thread boots. */
  private ready = false
  private readonly queue: Render[] = []
  private current: { render: Render, id: number, timer: NodeJS.Timeout } | null = null
  private nextId = 0

  /**
   * @param renderMs the longest one render may take (TEMPLATE_RENDER_MS)
   * @param heapMb the thread's heap (WORKER_HEAP_MB); a test sets both to try one bound alone, in a moment
   */
  constructor (private readonly renderMs = TEMPLATE_RENDER_MS, private readonly heapMb = WORKER_HEAP_MB) {}

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
    this.ready = false
    await worker?.terminate()
  }

  private pump (): void {
    if (this.current !== null) return
    if (this.queue.length === 0) {
      // Idle: the thread stays for the next render, but does not keep the process alive.
      this.worker?.unref()
      return
    }
    const worker = this.thread()
    // Renders wait on it: the process lives until they are done.
    worker.ref()
    if (!this.ready) return
    const render = this.queue.shift()!
    const id = this.nextId++
    const timer = setTimeout(() => this.stop(new TemplateRenderError(`took longer than ${this.renderMs} ms to render one question: it was stopped`)), this.renderMs)
    this.current = { render, id, timer }
    worker.postMessage({ id, source: render.source, input: render.input, maxChars: MAX_PROMPT_CHARS })
  }

  private thread (): Worker {
    if (this.worker !== null) return this.worker
    const worker = new Worker(new URL('./template-worker.js', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: this.heapMb } })
    worker.on('message', (message: { id: number, text?: string, error?: string, ready?: true }) => {
      if (message.ready === true) {
        if (this.worker === worker) { this.ready = true; this.pump() }
        return
      }
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
    this.worker = worker
    this.ready = false
    return worker
  }

  /** The render under way fails with `err`; the thread is stopped, and the next render starts another. */
  private stop (err: Error): void {
    const current = this.current
    const worker = this.worker
    const started = this.ready
    this.worker = null
    this.ready = false
    this.current = null
    if (current !== null) {
      clearTimeout(current.timer)
      current.render.reject(err)
    }
    void worker?.terminate()
    // A thread that ended before it loaded would end so again: what waits fails with it, and the next render tries anew.
    if (!started) for (const render of this.queue.splice(0)) render.reject(err)
    this.pump()
  }
}
