import t from 'tap'
import { runSoak } from '../../helpers/soak-run.js'

// The soak's hostile mode (npm run soak -- --hostile) end to end on a short load, beside soak.test.ts (its own
// process, so that the two runs, each a gateway and its runtimes, go side by side).
// The hostile section: after the warm-up, attackers in the faults' place, each in a loop, API keys on;
// three more beside them: a hostile upstream, a quota dodger and a cache-folder writer, each with its own key
// or files, and chat's and batch's usage audited as in the plain soak.
// The run goes on past its 10 s until every attacker's first attempt has ended (a stream nobody reads takes the
// longest: 4 MB of tokens must back up before the stall limit starts counting).
t.test('npm run soak --hostile, 10 s: every normal request answered, every attacker refused as promised, flat', async (t) => {
  const { code, output, report } = await runSoak(t, ['--hostile', '--seconds', '10', '--concurrency', '2', '--idle-connections', '20'])
  t.equal(code, 0, `the hostile soak passes:\n${output.slice(-4000)}`)
  t.match(output, /== hostile clients: attack /, 'the hostile ledger is printed')
  t.match(output, /soak: everything held/)
  t.equal(report.ok, true)
  t.same(report.problems, [])
  t.equal(report.settings.hostile, true)
  t.equal(report.settings.max_loaded_models, 3, 'a room for the long model besides the two the normal clients share')
  t.equal(report.faults.injected, 0, 'no faults: the attackers take their place')

  const h = report.hostile
  t.equal(h.ok, true)
  t.same(h.problems, [])
  t.same(h.settings, {
    body_timeout_s: 2, stream_stall_timeout_s: 2, idle_connections: 20, long_model: 'soak/long', api_keys: true,
    upstream: { model_prefix: 'hostile/', limits: { upstream_answer_size: '1MiB', upstream_error_size: '16KiB', upstream_line_size: '256KiB' } },
    dodger_tokens_per_day: 3000, prompt_cache: { min_tokens: 16, size: '2MiB' },
  })
  t.ok(h.attack.start_s > 0 && h.attack.start_s < h.attack.deadline_s && h.attack.deadline_s <= h.attack.end_s, `attack ${h.attack.start_s}-${h.attack.end_s} s`)

  const n = h.normal
  t.ok(n.requests > 10, `${n.requests} normal requests`)
  t.equal(n.failed, 0, 'no normal request failed')
  t.equal(n.answered, n.requests, 'every normal request answered')
  t.equal(n.requests, report.requests.total, 'the ledger holds only the normal clients')
  t.equal(report.requests.by_outcome.http_error + report.requests.by_outcome.error_event, 0, 'none answered with an error')
  t.ok(n.baseline.finished > 0 && n.under_attack.finished > 0, `answers before (${n.baseline.finished}) and under the attack (${n.under_attack.finished})`)
  for (const phase of [n.baseline, n.under_attack]) t.ok(phase.p50_ms > 0 && phase.p99_ms >= phase.p50_ms, `p50 ${phase.p50_ms} ms, p99 ${phase.p99_ms} ms`)

  // Each attacker got what docs/operations.md promises, and nothing else.
  const expected: Record<string, string[]> = {
    slow_body: ['401, connection closed', 'cut at body_timeout, nothing answered'],
    non_reader: ['200, cut at stream_stall_timeout without its last event'],
    schema_bomb: ['400 schema_too_large', '400 too_deep'],
    refused_field: ['400 unsupported_parameter'],
    blob_flood: ['201', '200', '400 digest_mismatch'],
    idle_connections: ['held open until the attacker let go', '408, closed by the gateway'],
    // A 502 or a begun stream's error event naming the limit or the check; the key cut out; no impossible count booked.
    hostile_upstream: [
      '502 a tool call numbered 10^7', '200, then an error event: a tool call numbered 10^7', '502 limits.upstream_answer_size', '200, then an error event: limits.upstream_answer_size',
      '502 limits.upstream_error_size', '200, then an error event: limits.upstream_line_size', '502 an impossible token count', '200, then an error event: an impossible token count',
      '200, the key cut out', '200, then an error event: the key cut out', 'every count whole, at most 64 tokens a request',
    ],
    quota_dodger: [
      '200, left after 50-100 tokens', '200, shortened to what the day had left (finish_reason length)', '429 tokens_per_day: its running requests hold the rest',
      '429 tokens_per_day: the day spent', '429 tokens_per_day: the day\'s rest too small for the prompt', 'within its day, and at least the tokens it read',
    ],
    cache_writer: [
      'whole', 'left alone: not a name the gateway writes', 'deleted with its .bin, inside the folder: its sidecar disagrees with its name',
      'dropped at the start: counted by its size on disk, past the budget', 'the link left as it was, its sidecar deleted', 'left as it was',
      'left as they were (read at a start only)', 'the traversal sidecar deleted with its .bin, the rest left',
      'not met yet: the link and its target left as they were', 'met at a restore or a sweep: its sidecar dropped, the link and its target left as they were',
      'not met yet: the FIFO left as it was', 'met at a restore or a sweep: its sidecar dropped, the FIFO left as it was',
      'not met yet: left as it was (read at a start only)', 'rewritten by the gateway from its name', 'deleted by the gateway with its save, inside the folder',
    ],
  }
  t.same(Object.keys(h.attackers).sort(), Object.keys(expected).sort(), 'every kind of attacker is in the ledger')
  for (const [kind, answers] of Object.entries(expected)) {
    const entry = h.attackers[kind]
    t.ok(entry.attempts >= 1, `${kind}: ${entry.attempts} attempt(s)`)
    t.equal(entry.unexpected, 0, `${kind}: no unexpected answer`)
    t.same(Object.keys(entry.answers).filter((a) => !answers.includes(a)), [], `${kind}: only its expected answers (${JSON.stringify(entry.answers)})`)
    t.equal(Object.values(entry.answers as Record<string, number>).reduce((a, b) => a + b, 0), entry.attempts, `${kind}: every attempt counted once`)
  }
  t.ok(h.attackers.slow_body.answers['401, connection closed'] >= 1 && h.attackers.slow_body.answers['cut at body_timeout, nothing answered'] >= 1, 'slow bodies with a key and without')
  t.ok(h.attackers.slow_body.ms['cut at body_timeout, nothing answered'].min >= 1800, 'cut no sooner than limits.body_timeout')
  t.ok(h.attackers.non_reader.ms['200, cut at stream_stall_timeout without its last event'].min >= 2000, 'non-readers cut no sooner than the stall limit')
  t.ok(h.attackers.blob_flood.answers['201'] >= 1 && h.attackers.blob_flood.answers['200'] >= 1, 'blobs uploaded and deleted')
  // The other three: the upstream's attacks answered before its usage was read; the dodger's streams let in and left; the
  // files planted before the start judged once each (the start-up scan met them), the victims whole to the end.
  const upstream = h.attackers.hostile_upstream
  t.ok(upstream.attempts >= 2 && upstream.answers['every count whole, at most 64 tokens a request'] === 1, `the hostile upstream: ${upstream.attempts - 1} attack(s), then its usage`)
  const dodger = h.attackers.quota_dodger
  t.ok(dodger.answers['200, left after 50-100 tokens'] >= 1 && dodger.answers['within its day, and at least the tokens it read'] === 1, 'the dodger let in, left early, its usage within its day')
  const writer = h.attackers.cache_writer.by_variant
  const scanned: Array<[string, string]> = [
    ['before the start: a sidecar whose id climbs out of the folder', 'deleted with its .bin, inside the folder: its sidecar disagrees with its name'],
    ['before the start: a sidecar whose key climbs out of the folder', 'deleted with its .bin, inside the folder: its sidecar disagrees with its name'],
    ['before the start: a sidecar of its own name with an id climbing out', 'left alone: not a name the gateway writes'],
    ['before the start: a save claiming 0 bytes, 50 MB on disk', 'dropped at the start: counted by its size on disk, past the budget'],
    ['before the start: a link named like a save\'s .bin, out of the folder', 'the link left as it was, its sidecar deleted'],
    ['before the start: a FIFO named like a save\'s .bin', 'left as it was'],
  ]
  for (const [variant, answer] of scanned) t.same(writer[variant], { [answer]: 1 }, `${variant}: ${answer}`)
  t.same(writer['the files outside the folder, after the gateway exited'], { whole: 1 }, 'the victims outside the folder whole after the gateway exited')
  t.ok(writer['the files outside the folder'].whole >= 2, 'and at each of the writer\'s looks')

  const idle = h.attackers.idle_connections.attempts
  t.ok(idle >= 20 && idle % 20 === 0, `rounds of 20 idle connections (${idle}: a round ends at header_timeout, 2 s here)`)
  t.same(h.unexpected, [])

  t.ok(h.resources.samples > 3, `${h.resources.samples} samples under the attack`)
  for (const key of ['rss_mib', 'fds']) {
    const r = h.resources[key]
    t.ok(r.first > 0 && r.max >= r.first && r.max >= r.last, `${key}: first ${r.first}, last ${r.last}, max ${r.max}`)
    // Two seconds of attack are sampled, not judged (the 10-minute run is: docs/reliability.md).
    t.equal(r.flat, null, `${key}: not judged on a ${h.resources.rule.match(/lasted (\S+) s/)?.[1]} s attack`)
  }
  t.match(h.resources.rule, /^not judged: the attack lasted [\d.]+ s, under 60 s$/)
  t.match(output, /descriptors first \d+, last \d+, max \d+; median [\d.]+ early → [\d.]+ at the end: not judged/)
  t.ok(h.blobs.max_files <= h.blobs.bound, `at most ${h.blobs.max_files} blobs at once (bound ${h.blobs.bound})`)
  t.same(h.blobs.at_end, { files: 0, partials: 0 }, 'no blob or partial upload left')
  t.same(h.blobs.partial_model_files_at_end, [])

  // The keys file, as in the plain soak: chat's and batch's usage exactly what their answers said.
  t.equal(report.keys.ok, true, 'the usage audit passed')
  t.same(report.keys.problems, [])
  t.same(report.keys.others.map((u: { key: string }) => u.key).sort(), ['dodger', 'relay'], 'the attackers\' keys counted apart from the audit')

  t.equal(report.requests.slots_held_after_settle, 0, 'every slot given back, the non-readers\' too')
  t.equal(report.processes.left_after_exit, 0, 'no process left after the gateway exited')
  t.ok(report.processes.peak_llama_servers <= 3 + 1, 'never more llama-servers than max_loaded_models (plus one stopping), those prepared ahead apart')
  t.ok(report.processes.peak_prepared <= 2 + 1, 'prepared ahead: two standing by at most, and a load waiting for room')
  t.ok(report.resources.end.fds - report.resources.after_warmup.fds <= report.settings.tolerance.fds, 'descriptors back where they were before the attack')
})
