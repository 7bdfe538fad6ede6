import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { readFile } from 'node:fs/promises'
import t from 'tap'
import { killGroup } from '../../../runtimes/process/kill-group.js'
import { until } from '../../helpers/until.js'

/** A `sleep`: a group leader of its own when `detached`, else in this process's group (its pid names no group). */
async function sleeper (t: { teardown: (fn: () => void) => void }, detached = false): Promise<ChildProcess> {
  const child = spawn('sleep', ['60'], { stdio: 'ignore', detached })
  await once(child, 'spawn')
  t.teardown(() => { child.kill('SIGKILL') })
  return child
}

/** The signal `child` ended by. */
async function endedBy (child: ChildProcess): Promise<NodeJS.Signals | null> {
  if (child.exitCode === null && child.signalCode === null) await once(child, 'exit')
  return child.signalCode
}

/** Whether a process is gone (a zombie counts: it runs nothing, and only its parent's reaping is left). */
async function gone (pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null)
  return stat === null || stat.split(') ')[1]!.startsWith('Z')
}

t.test('a detached child: its whole group is signalled, its own children too', async (t) => {
  const leader = spawn('sh', ['-c', 'sleep 60 & echo $!; wait'], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] })
  t.teardown(() => { try { process.kill(-leader.pid!, 'SIGKILL') } catch {} })
  const [line] = await once(leader.stdout!, 'data') as [Buffer]
  const grandchild = Number(line.toString().trim())
  t.notOk(await gone(grandchild), 'the sleep it started runs')
  killGroup(leader, 'SIGKILL')
  t.equal(await endedBy(leader), 'SIGKILL', 'the leader ended')
  await until('the sleep it started gone too', () => gone(grandchild))
})

t.test('a child started without detached is signalled alone while it runs', async (t) => {
  const child = await sleeper(t)
  killGroup(child, 'SIGTERM')
  t.equal(await endedBy(child), 'SIGTERM')
})

for (const detached of [false, true]) {
  t.test(`a child Node saw exit is not signalled, nor its group: its pid may name another ${detached ? 'group' : 'process'} by now`, async (t) => {
    // Another process stands in for the one that took the reaped child's pid (a group leader of its own: a group that
    // took the id). The calls that must not reach it send SIGKILL; the last, which must, SIGTERM: the signal it ends
    // by says whether any SIGKILL reached it first.
    const stranger = await sleeper(t, detached)
    killGroup({ pid: stranger.pid, exitCode: 0, signalCode: null }, 'SIGKILL')
    killGroup({ pid: stranger.pid, exitCode: null, signalCode: 'SIGTERM' }, 'SIGKILL')
    killGroup({ pid: stranger.pid, exitCode: null, signalCode: null }, 'SIGTERM')
    t.equal(await endedBy(stranger), 'SIGTERM', 'only the call for a child not seen to exit reached it')
  })
}

t.test('a child that never started (no pid): nothing is signalled', async (t) => {
  t.doesNotThrow(() => killGroup({ pid: undefined, exitCode: null, signalCode: null }, 'SIGKILL'))
})
