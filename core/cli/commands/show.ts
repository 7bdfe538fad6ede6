import { CLIENT_FLAGS, CLIENT_OPTIONS, JSON_FLAG, JSON_OPTION, type Command } from './command.js'

interface ShowReply {
  details: { format: string, family?: string, parameter_size?: string, quantization_level?: string }
  model_info: Record<string, unknown>
  template?: string
  parameters?: string
  system?: string
  capabilities: string[]
  projector_info?: Record<string, unknown>
}

export const show: Command = {
  name: 'show',
  summary: 'show a model\'s details, capabilities, parameters and system prompt',
  usage: ['llamagate show <model> [--json | --template | --system | --parameters | --verbose]'],
  flags: [
    JSON_FLAG,
    '--template       print only the chat template',
    '--system         print only the system prompt',
    '--parameters     print only the default parameters',
    '--verbose        list every key of the GGUF header too',
    ...CLIENT_FLAGS,
  ],
  options: {
    ...CLIENT_OPTIONS, ...JSON_OPTION,
    template: { type: 'boolean' }, system: { type: 'boolean' }, parameters: { type: 'boolean' }, verbose: { type: 'boolean' },
  },
  positionals: { min: 1, max: 1 },
  positionalsHint: 'expected one model name',
  async run ({ values, positionals, stdout, client }) {
    const reply = await client().json<ShowReply>('POST', '/api/show', { model: positionals[0], verbose: values.verbose === true })
    if (values.json) stdout.write(`${JSON.stringify(reply, null, 2)}\n`)
    else if (values.template) stdout.write(`${reply.template ?? ''}\n`)
    else if (values.system) stdout.write(`${reply.system ?? ''}\n`)
    else if (values.parameters) stdout.write(`${reply.parameters ?? ''}\n`)
    else stdout.write(describe(reply, values.verbose === true))
    return 0
  },
}

/** Ollama's layout: indented sections of aligned key/value lines. */
export function describe (reply: ShowReply, verbose = false): string {
  const info = reply.model_info
  const arch = String(info['general.architecture'] ?? reply.details.family ?? '')
  const model: Array<[string, unknown]> = [
    ['architecture', arch],
    ['parameters', reply.details.parameter_size],
    ['context length', info[`${arch}.context_length`]],
    ['embedding length', info[`${arch}.embedding_length`]],
    ['quantization', reply.details.quantization_level],
    ['format', reply.details.format],
  ]
  const sections: string[] = [section('Model', model)]
  if (reply.projector_info) {
    const p = reply.projector_info
    sections.push(section('Projector', [['architecture', p['general.architecture']], ['projector type', p['clip.projector_type']]]))
  }
  sections.push(section('Capabilities', reply.capabilities.map((c) => [c, ''])))
  if (reply.parameters) sections.push(section('Parameters', reply.parameters.split('\n').map((l) => [l.trim(), ''])))
  if (reply.system) sections.push(section('System', reply.system.split('\n').map((l) => [l, ''])))
  if (verbose) sections.push(section('Metadata', Object.entries(info).map(([k, v]) => [k, Array.isArray(v) && v.length === 0 ? '[...]' : v])))
  return sections.join('\n') + '\n'
}

function section (title: string, rows: Array<[string, unknown]>): string {
  const shown = rows.filter(([, v]) => v !== undefined && v !== null)
  const width = Math.max(0, ...shown.map(([k]) => k.length))
  const lines = shown.map(([k, v]) => `    ${v === '' ? k : `${k.padEnd(width + 4)}${typeof v === 'object' ? JSON.stringify(v) : String(v)}`}`.trimEnd())
  return `  ${title}\n${lines.join('\n')}\n`
}
