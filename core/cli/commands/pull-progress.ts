import cliProgress from 'cli-progress'
import { formatBytes, formatDuration } from './human.js'

/** One event of POST /api/pull's stream (plugins/download/pull-service.ts, plugins/convert/converter.ts). */
export interface PullEvent { status: string, digest?: string, total?: number, completed?: number }

/** Shows a pull as its events come: bars on a terminal, plain lines elsewhere. */
export interface PullProgress {
  update: (event: PullEvent) => void
  /** Stops drawing (the pull ended, failed or was interrupted), leaving the terminal as it was. */
  stop: () => void
  /** The last line: `pulled acme/tiny (3 files, 12.3 MiB) in 4.2s`, or that nothing needed fetching. */
  summary: (model: string, elapsedMs: number) => string
}

/** Bars when `stream` is a terminal; plain lines, no escape codes, for pipes and CI. */
export function pullProgress (stream: NodeJS.WriteStream): PullProgress {
  return stream.isTTY ? new BarProgress(stream) : new LineProgress(stream)
}

// Speed is measured over the last few seconds, so that it follows the network rather than the whole history.
const SPEED_WINDOW_MS = 3000

/** A file being downloaded, or a conversion step: what both views need to know about it. */
class Task {
  completed: number
  total: number | undefined
  done = false
  readonly started = Date.now()
  finished: number | null = null
  /** What the first event said was already there (a resumed file, or one that needs no download). */
  readonly initial: number
  private readonly samples: Array<[number, number]> = []

  constructor (readonly kind: 'file' | 'step', readonly name: string, event: PullEvent) {
    this.completed = event.completed ?? 0
    this.total = event.total
    this.initial = this.completed
    this.samples.push([this.started, this.completed])
    if (kind === 'file' && this.total !== undefined && this.completed >= this.total) this.finish()
  }

  update (event: PullEvent): void {
    if (event.total !== undefined) this.total = event.total
    if (event.completed !== undefined) this.completed = event.completed
    const now = Date.now()
    this.samples.push([now, this.completed])
    while (this.samples.length > 2 && now - this.samples[0]![0] > SPEED_WINDOW_MS) this.samples.shift()
    if (this.total !== undefined && this.completed >= this.total) this.finish()
  }

  finish (): void {
    if (this.done) return
    this.done = true
    this.finished = Date.now()
    if (this.total !== undefined) this.completed = this.total
  }

  /** 0-100, floored: 100 only when whole. */
  get percent (): number {
    if (this.done) return 100
    return this.total ? Math.min(99, Math.floor(this.completed / this.total * 100)) : 0
  }

  /** A file that needed no download: whole on its first event. */
  get wasWhole (): boolean { return this.kind === 'file' && this.total !== undefined && this.initial >= this.total }

  get elapsedMs (): number { return (this.finished ?? Date.now()) - this.started }

  /** Bytes a second: recent ones while it runs, the average once done. */
  get speed (): number {
    if (this.done) return this.elapsedMs > 0 ? (this.completed - this.initial) / (this.elapsedMs / 1000) : 0
    const [at, from] = this.samples[0]!
    const [lastAt, to] = this.samples.at(-1)!
    return lastAt > at ? (to - from) / ((lastAt - at) / 1000) : 0
  }

  /** Milliseconds left at the current speed; null while there is no speed to go by. */
  get leftMs (): number | null {
    const speed = this.speed
    return this.total !== undefined && speed > 0 ? (this.total - this.completed) / speed * 1000 : null
  }
}

/** The tasks of one pull, in the order they started, and what the stream said about them. */
class Pull {
  readonly tasks = new Map<string, Task>()
  header: string | null = null
  headerShown = false

  /** The task the event is about (made on its first event), or null for the header and `success`. */
  taskOf (event: PullEvent): { task: Task, isNew: boolean } | null {
    if (event.status === 'success') {
      for (const task of this.tasks.values()) task.finish()
      return null
    }
    const isFile = event.status.startsWith('downloading ') && event.digest !== undefined
    if (!isFile && event.status.startsWith('pulling ')) {
      this.header = event.status
      return null
    }
    const key = isFile ? `file:${event.digest}` : `step:${event.status}`
    const known = this.tasks.get(key)
    if (known) {
      known.update(event)
      return { task: known, isNew: false }
    }
    // A step is over when the next one (or another file) begins, whether or not it reported 100%.
    for (const task of this.tasks.values()) if (task.kind === 'step') task.finish()
    const task = new Task(isFile ? 'file' : 'step', isFile ? event.digest! : event.status, event)
    this.tasks.set(key, task)
    return { task, isNew: true }
  }

  summary (model: string, elapsedMs: number): string {
    const files = [...this.tasks.values()].filter((t) => t.kind === 'file')
    const size = files.reduce((sum, f) => sum + (f.total ?? f.completed), 0)
    const what = `${files.length} ${files.length === 1 ? 'file' : 'files'}, ${formatBytes(size)}`
    const fetched = files.some((f) => !f.wasWhole) || [...this.tasks.values()].some((t) => t.kind === 'step')
    return fetched ? `pulled ${model} (${what}) in ${formatDuration(elapsedMs)}` : `${model} is up to date (${what}, nothing to download)`
  }
}

function speedText (bytesPerSecond: number): string { return `${formatBytes(Math.round(bytesPerSecond))}/s` }

function leftText (ms: number | null): string {
  if (ms === null) return ''
  return ms < 60_000 ? `${Math.ceil(ms / 1000)}s left` : `${formatDuration(ms)} left`
}

/** A line at the start, at most three as it goes (each quarter passed), one at the end. */
class LineProgress implements PullProgress {
  private readonly pull = new Pull()
  private readonly quarters = new Map<Task, number>()

  constructor (private readonly out: NodeJS.WriteStream) {}

  update (event: PullEvent): void {
    const running = [...this.pull.tasks.values()].filter((t) => !t.done)
    const found = this.pull.taskOf(event)
    // Steps that the event ended (`success`, the next step) get their last line.
    for (const task of running) if (task.done && task !== found?.task) this.finished(task)
    if (found === null) return
    const { task, isNew } = found
    if (!this.pull.headerShown && this.pull.header !== null) {
      this.pull.headerShown = true
      this.line(this.pull.header)
    }
    if (isNew) this.started(task)
    else if (task.done) this.finished(task)
    else this.progressed(task)
  }

  private started (task: Task): void {
    if (task.kind === 'step') {
      this.quarters.set(task, 0)
      this.line(task.name)
      return
    }
    const size = formatBytes(task.total ?? 0)
    if (task.done) { this.line(`${task.name}: already here (${size})`); return }
    this.quarters.set(task, Math.floor(task.percent / 25))
    if (task.completed > 0) this.line(`${task.name}: downloading ${size}, resuming at ${formatBytes(task.completed)} (${task.percent}%)`)
    else this.line(`${task.name}: downloading ${size}`)
  }

  private progressed (task: Task): void {
    const quarter = Math.floor(task.percent / 25)
    if (quarter <= (this.quarters.get(task) ?? 0)) return
    this.quarters.set(task, quarter)
    this.line(task.kind === 'file'
      ? `${task.name}: ${task.percent}% (${formatBytes(task.completed)} of ${formatBytes(task.total ?? 0)}, ${speedText(task.speed)})`
      : `${task.name}: ${task.percent}%`)
  }

  private finished (task: Task): void {
    if (!this.quarters.has(task)) return // reported whole on its first line already
    this.quarters.delete(task)
    this.line(task.kind === 'file'
      ? `${task.name}: done (${formatBytes(task.total ?? 0)} in ${formatDuration(task.elapsedMs)}, ${speedText(task.speed)})`
      : `${task.name}: done in ${formatDuration(task.elapsedMs)}`)
  }

  private line (text: string): void { this.out.write(`${text}\n`) }

  stop (): void {}

  summary (model: string, elapsedMs: number): string { return this.pull.summary(model, elapsedMs) }
}

const NAME_MAX = 40
const BAR_MAX = 40

/** cli-progress's MultiBar: one bar per file and per step, redrawn in place on the terminal. */
class BarProgress implements PullProgress {
  private readonly pull = new Pull()
  private multibar: cliProgress.MultiBar | null = null
  private readonly bars = new Map<Task, cliProgress.SingleBar>()
  private nameWidth = 16

  constructor (private readonly out: NodeJS.WriteStream) {}

  update (event: PullEvent): void {
    const found = this.pull.taskOf(event)
    // Steps and files the event ended are drawn whole.
    for (const [task, bar] of this.bars) if (task.done) bar.update(task.total ?? 100)
    if (found === null) return
    const { task, isNew } = found
    if (isNew) {
      this.nameWidth = Math.min(NAME_MAX, Math.max(this.nameWidth, task.name.length))
      this.bars.set(task, this.start().create(task.total ?? 100, task.completed, { task }))
    } else {
      const bar = this.bars.get(task)!
      if (task.total !== undefined && task.total !== bar.getTotal()) bar.setTotal(task.total)
      bar.update(task.completed)
    }
  }

  private start (): cliProgress.MultiBar {
    if (this.multibar === null) {
      // The header goes above the bars, written before they take over the bottom of the screen.
      if (this.pull.header !== null) this.out.write(`${this.pull.header}\n`)
      this.multibar = new cliProgress.MultiBar({
        stream: this.out,
        hideCursor: true,
        fps: 10,
        // Speed and time left change between events too.
        forceRedraw: true,
        format: (_options, params, payload) => this.format(payload.task as Task, params.maxWidth),
      })
    }
    return this.multibar
  }

  private format (task: Task, width: number): string {
    const name = task.name.length > this.nameWidth ? `…${task.name.slice(-(this.nameWidth - 1))}` : task.name.padEnd(this.nameWidth)
    const percent = `${String(task.percent).padStart(3)}%`
    let details: string
    if (task.kind === 'step') {
      details = task.done ? `done in ${formatDuration(task.elapsedMs)}` : formatDuration(task.elapsedMs)
    } else {
      const bytes = `${formatBytes(task.completed)} / ${formatBytes(task.total ?? 0)}`.padEnd(21)
      if (task.wasWhole) details = `${bytes} │ already here`
      else details = `${bytes} │ ${speedText(task.speed).padStart(12)} │ ${task.done ? `done in ${formatDuration(task.elapsedMs)}` : leftText(task.leftMs)}`
    }
    const barWidth = Math.max(10, Math.min(BAR_MAX, width - name.length - percent.length - details.length - 8))
    const filled = Math.round(barWidth * task.percent / 100)
    return `${name}  ${'█'.repeat(filled)}${'░'.repeat(barWidth - filled)} ${percent} │ ${details}`
  }

  stop (): void {
    this.multibar?.stop()
    this.multibar = null
  }

  summary (model: string, elapsedMs: number): string { return this.pull.summary(model, elapsedMs) }
}
