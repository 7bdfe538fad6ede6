import t from 'tap'
import { runSoak } from '../../helpers/soak-run.js'

// The soak (npm run soak) is how the gateway's reliability is measured over minutes: this runs the built
// script end to end on a short load, so that a change that breaks the harness (a client, a fault, a probe,
// the ledger) is caught here and not on the day of a long run. Everything is real: a `llamagate serve`, the
// CPU llama-server, the fake hub, the converter. The run must come out clean: no request hung, no process
// left, no partial model listed, descriptors flat, every kind of fault injected and weathered, and under its three
// API keys the gateway's usage equal to what the answers told the clients, with a 403 and a 429 seen.
// The shortest soak there is (10 s): the load goes on past it until every kind of fault has been injected once
// (the soak's own rule, bounded at 5 minutes past the deadline), so that a short run checks all a long one does.
t.test('npm run soak, 10 s: it stops by itself, every request is accounted for, every fault injected, nothing left', async (t) => {
  const { code, output, report } = await runSoak(t, ['--seconds', '10', '--concurrency', '4'])
  t.equal(code, 0, `the soak passes:\n${output.slice(-4000)}`)
  t.match(output, /requests: \d+, accounted for \d+/, 'the ledger is printed')
  t.match(output, /soak: everything held/)

  t.equal(report.ok, true)
  t.same(report.problems, [])
  t.equal(report.settings.max_loaded_models, 2)
  t.equal(report.settings.clients, 4)

  const { requests } = report
  t.ok(requests.total > 20, `${requests.total} requests`)
  t.same(Object.keys(requests.by_outcome).sort(), ['client_aborted', 'cut', 'error_event', 'finished', 'http_error', 'hung', 'limited', 'refused', 'transport_error'], 'every outcome is counted')
  t.equal(requests.by_outcome.hung, 0, 'none hung')
  t.equal(requests.by_outcome.cut, 0, 'none cut silently')
  t.equal(requests.by_outcome.transport_error, 0, 'no connection failed')
  t.equal(requests.accounted, requests.total, 'every request is accounted for')
  t.equal(Object.values(requests.by_outcome as Record<string, number>).reduce((a, b) => a + b, 0), requests.total)
  t.ok(requests.by_outcome.finished > 0, 'answers came')
  t.ok(requests.by_outcome.client_aborted > 0, 'clients left mid-stream')
  t.ok(requests.by_outcome.error_event > 0 || requests.by_outcome.http_error > 0, 'the faults cost some requests an error, reported as one')
  t.same(Object.keys(requests.by_surface).sort(), ['api/chat', 'api/chat stream', 'api/generate', 'api/generate stream', 'v1/chat/completions', 'v1/chat/completions stream'], 'every surface, streamed and whole')
  t.equal(requests.slots_held_after_settle, 0, 'no slot held once the clients were gone')

  // The keys: chat and batch only ever got whole answers, chat's request for a model not its own a 403 and batch's
  // past its limits a 429; the usage the gateway counted for them is what their answers said, to the token.
  const { keys } = report
  t.equal(keys.ok, true, 'the usage audit passed')
  t.same(keys.problems, [])
  t.ok(keys.refused >= 1 && requests.by_outcome.refused === keys.refused, `${keys.refused} request(s) for a model outside chat's list refused (403)`)
  t.ok(keys.limited >= 1 && requests.by_outcome.limited === keys.limited, `${keys.limited} batch request(s) told to wait (429 with Retry-After)`)
  t.same(Object.keys(keys.keys.chat.outcomes).sort(), ['finished', 'refused'], 'chat: whole answers and refusals only')
  t.same(Object.keys(keys.keys.batch.outcomes).sort(), ['finished', 'limited'], 'batch: whole answers and 429s only')
  for (const key of ['chat', 'batch']) {
    const rows = keys.compared.filter((c: { key: string }) => c.key === key)
    t.ok(rows.length > 0 && rows.every((c: { equal: boolean, gateway: { requests: number, generated_tokens: number } }) => c.equal && c.gateway.requests > 0 && c.gateway.generated_tokens > 0), `${key}: the usage counted equals what its clients were told, per model`)
  }
  t.ok(keys.keys.ops.usage.totals.requests > 0, 'the soak\'s own key (faults, leavers) is counted too')

  const { faults } = report
  for (const kind of ['kill_runtime', 'converter_run', 'pull_dropped_connections', 'delete_during_load', 'pull_client_left', 'pull_corrupt_file']) {
    t.ok(faults.by_kind[kind]?.injected >= 1, `${kind} injected`)
    t.equal(faults.by_kind[kind]?.as_expected, faults.by_kind[kind]?.injected, `${kind}: the gateway came through it`)
  }
  t.ok(report.gateway_log.evictions > 0, `models evicted (${report.gateway_log.evictions}) with max_loaded_models 2`)
  t.ok(report.gateway_log.runtime_died >= 1, 'the killed runtime was seen to die')

  t.equal(report.processes.left_after_exit, 0, 'no process left after the gateway exited')
  t.same(report.processes.orphans_while_running, [])
  t.ok(report.processes.samples > 0, 'processes were compared with /api/ps while it ran')
  t.ok(report.processes.peak_llama_servers <= 2 + 1, 'never more llama-servers than max_loaded_models (plus one stopping), those prepared ahead apart')
  t.ok(report.processes.peak_prepared <= 2 + 1, 'prepared ahead: two standing by at most, and a load waiting for room')
  t.equal(report.processes.gateway_exit.code, 0, 'the gateway exits cleanly on SIGTERM')
  t.equal(report.models.partial_listed, 0, 'no partial model listed')
  t.ok(report.models.checks > 3, 'the listing was checked against the disk many times')

  for (const when of ['start', 'after_warmup', 'end']) {
    const q = report.resources[when]
    t.ok(q.rss_mib > 20 && q.fds > 5, `${when}: RSS ${q.rss_mib} MiB, ${q.fds} fds`)
    t.equal(q.loaded_models, 0, `${when}: measured with no model loaded`)
  }
  t.ok(report.resources.end.fds - report.resources.after_warmup.fds <= report.settings.tolerance.fds, 'descriptors flat')
  t.ok(report.resources.samples.length > 10, 'RSS and descriptors sampled through the run')
})
