/** One runtime's metrics text, and the labels that say whose they are. */
export interface LabeledText { text: string, labels: Record<string, string> }

interface Family { help: string | null, type: string | null, samples: string[] }

/**
 * The metrics of several runtimes (llama-server's `llamacpp:` series, in Prometheus' text format) as one text:
 * each sample gets the runtime's labels before its own, and the samples of one metric family from every runtime
 * go under a single HELP and TYPE, as the format wants. Names and values are kept as llama-server wrote them.
 */
export function mergeRuntimeSeries (parts: LabeledText[]): string {
  const families = new Map<string, Family>()
  const family = (name: string): Family => {
    let found = families.get(name)
    if (found === undefined) families.set(name, found = { help: null, type: null, samples: [] })
    return found
  }
  for (const { text, labels } of parts) {
    const added = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',')
    // The family the last HELP or TYPE named: its samples may carry suffixes (_bucket, _sum, _count).
    let current: string | null = null
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue
      const meta = /^#\s*(HELP|TYPE)\s+(\S+)/.exec(line)
      if (meta !== null) {
        current = meta[2]!
        const f = family(current)
        if (meta[1] === 'HELP') f.help ??= line
        else f.type ??= line
        continue
      }
      if (line.startsWith('#')) continue
      const nameEnd = line.search(/[{\s]/)
      if (nameEnd <= 0) continue
      const name = line.slice(0, nameEnd)
      const owner = current !== null && (name === current || name.startsWith(`${current}_`)) ? current : name
      const rest = promValue(line.slice(nameEnd))
      const sample = rest.startsWith('{')
        ? `${name}{${added}${rest.startsWith('{}') ? rest.slice(1) : `,${rest.slice(1)}`}`
        : `${name}{${added}}${rest}`
      family(owner).samples.push(sample)
    }
  }
  const lines: string[] = []
  for (const f of families.values()) {
    if (f.help !== null) lines.push(f.help)
    if (f.type !== null) lines.push(f.type)
    lines.push(...f.samples)
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`
}

/**
 * llama-server prints its values with C++ streams: a rate over an empty window comes out `nan`, `-nan` or `inf`,
 * which Prometheus' text format spells `NaN`, `+Inf` and `-Inf` (and a scraper fails the whole scrape on a line it
 * cannot read).
 */
function promValue (rest: string): string {
  // Only after the labels: a label value may hold any text.
  const labelsEnd = rest.lastIndexOf('}') + 1
  return rest.slice(0, labelsEnd) + rest.slice(labelsEnd).replace(/(\s)(-?nan|[+-]?inf)(?=\s|$)/i, (_m, space: string, value: string) => {
    const v = value.toLowerCase()
    return space + (v.endsWith('nan') ? 'NaN' : v.startsWith('-') ? '-Inf' : '+Inf')
  })
}

function escapeLabelValue (value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}
