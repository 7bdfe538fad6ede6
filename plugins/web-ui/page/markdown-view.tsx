import { useMemo } from 'preact/hooks'
import { renderMarkdown } from './markdown.js'

/** Sanitized Markdown; code blocks get a copy button (handled here, by delegation). */
export function Markdown ({ text }: { text: string }) {
  const html = useMemo(() => renderMarkdown(text)
    // Every <pre> in the sanitized output is one the code renderer wrote: raw HTML from the model is escaped.
    .replaceAll('<pre>', '<pre><button type="button" class="copy" aria-label="Copy code">Copy</button>'), [text])
  const onClick = (event: MouseEvent): void => {
    const button = (event.target as Element).closest('button.copy')
    const code = button?.parentElement?.querySelector('code')
    if (button && code) void copyText(code.textContent ?? '').then((ok) => { button.textContent = ok ? 'Copied' : 'Copy failed' })
  }
  return <div class="markdown" onClick={onClick} dangerouslySetInnerHTML={{ __html: html }} />
}

/** The clipboard API where the page is a secure context (loopback is), a selection copy elsewhere. */
export async function copyText (text: string): Promise<boolean> {
  try {
    if (navigator.clipboard) { await navigator.clipboard.writeText(text); return true }
  } catch {}
  const area = document.createElement('textarea')
  area.value = text
  area.setAttribute('readonly', '')
  area.className = 'offscreen'
  document.body.append(area)
  area.select()
  const ok = document.execCommand('copy')
  area.remove()
  return ok
}
