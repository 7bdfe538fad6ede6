import { Template } from '@huggingface/jinja'
import { parentPort } from 'node:worker_threads'

/**
 * The other end of TemplateRenderer: renders a decision model's question template, one at a time, on a thread the
 * server can stop. Parsed templates are kept by their text (a few models' at once).
 */
const parsed = new Map<string, Template>()
const MAX_TEMPLATES = 16

parentPort!.on('message', ({ id, source, input, maxChars }: { id: number, source: string, input: Record<string, unknown>, maxChars: number }) => {
  try {
    let template = parsed.get(source)
    if (template === undefined) {
      template = new Template(source)
      if (parsed.size >= MAX_TEMPLATES) parsed.delete(parsed.keys().next().value!)
      parsed.set(source, template)
    }
    const text = template.render(input)
    if (text.length > maxChars) throw new Error(`it rendered ${text.length} characters, more than the ${maxChars} a prompt may have`)
    parentPort!.postMessage({ id, text })
  } catch (err) {
    parentPort!.postMessage({ id, error: (err as Error).message ?? String(err) })
  }
})

// Loaded: renders may be timed from here (a busy machine takes seconds to start a thread).
parentPort!.postMessage({ ready: true })
