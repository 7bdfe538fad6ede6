import DOMPurify from 'dompurify'
import hljs from 'highlight.js/lib/core'
import bash from 'highlight.js/lib/languages/bash'
import c from 'highlight.js/lib/languages/c'
import cpp from 'highlight.js/lib/languages/cpp'
import css from 'highlight.js/lib/languages/css'
import diff from 'highlight.js/lib/languages/diff'
import go from 'highlight.js/lib/languages/go'
import java from 'highlight.js/lib/languages/java'
import javascript from 'highlight.js/lib/languages/javascript'
import json from 'highlight.js/lib/languages/json'
import markdown from 'highlight.js/lib/languages/markdown'
import python from 'highlight.js/lib/languages/python'
import rust from 'highlight.js/lib/languages/rust'
import sql from 'highlight.js/lib/languages/sql'
import typescript from 'highlight.js/lib/languages/typescript'
import xml from 'highlight.js/lib/languages/xml'
import yaml from 'highlight.js/lib/languages/yaml'
import { Marked, type Tokens } from 'marked'

// The languages models write most; each is a few kilobytes. Aliases (js, py, sh, html, ...) come with them.
const LANGUAGES = { bash, c, cpp, css, diff, go, java, javascript, json, markdown, python, rust, sql, typescript, xml, yaml }
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language)

export function escapeHtml (text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!)
}

function highlight (code: string, lang: string | undefined): string {
  const name = lang?.trim().split(/\s+/)[0]?.toLowerCase()
  if (name && hljs.getLanguage(name)) return hljs.highlight(code, { language: name, ignoreIllegals: true }).value
  return escapeHtml(code)
}

/**
 * Markdown as models write it (GitHub's flavour). Model output is untrusted: raw HTML in it is shown as text,
 * not parsed; images become links (a page that loads what a model names would let the model make the browser
 * fetch any address); code blocks are highlighted. DOMPurify then has the last word on what is left.
 */
const marked = new Marked({
  gfm: true,
  async: false,
  renderer: {
    html ({ text }: Tokens.HTML | Tokens.Tag): string { return escapeHtml(text) },
    image ({ href, text }: Tokens.Image): string { return `<a href="${escapeHtml(href)}">${escapeHtml(text || href)}</a>` },
    code ({ text, lang }: Tokens.Code): string {
      const label = lang ? `<span class="code-lang">${escapeHtml(lang.split(/\s+/)[0] ?? '')}</span>` : ''
      return `<pre>${label}<code class="hljs">${highlight(text.replace(/\n$/, ''), lang)}</code></pre>`
    },
  },
})

// Links open in a new tab, without giving it this page (window.opener) or the address it came from.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank')
    node.setAttribute('rel', 'noopener noreferrer nofollow')
  }
})

const PURIFY = {
  // Only what Markdown produces; forms, media, frames and styles have no place in an answer.
  FORBID_TAGS: ['style', 'img', 'svg', 'math', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed', 'video', 'audio', 'picture', 'source', 'link', 'meta', 'base'],
  // Inline styles would be refused by the page's CSP anyway; ids and names could shadow the page's own.
  FORBID_ATTR: ['style', 'id', 'name', 'srcset', 'action', 'formaction'],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  ALLOW_DATA_ATTR: false,
}

/** Markdown to HTML that is safe to put into the page: sanitized, with highlighted code. */
export function renderMarkdown (text: string): string {
  const html = marked.parse(text) as string
  return DOMPurify.sanitize(html, PURIFY)
}
