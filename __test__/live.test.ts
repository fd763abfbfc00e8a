import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { MemberWorkSync } from '../index.js'
import type { TeamChangeEvent } from '../index.js'
import { copyExampleRoot, readJson, until, writeJson } from './helpers'

const NOW = Date.parse('2026-11-22T10:00:00.000Z')
const ADDON = path.join(__dirname, '..', 'index.js')


describe('live wiring (autoStart)', () => {
  it('publishes the queue to activity.json for watch, and removes it on dispose', async () => {
    const root = copyExampleRoot()
    const file = path.join(root, 'teams/.member-work-sync/activity.json')
    const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW } })
    try {
      sync.noteTeamChange({ type: 'task', teamName: 'forge', taskId: '1' })
      const published = await until(() => {
        const activity = fs.existsSync(file) ? readJson(file) : undefined
        return activity?.queue.queued > 0 ? activity : undefined
      })
      expect(published).toMatchObject({ schemaVersion: 1, pid: process.pid, startedAt: '2026-11-22T10:00:00.000Z' })
      expect(published.queue).toEqual(sync.getQueueDiagnostics())
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)
    } finally {
      await sync.dispose()
    }
    expect(fs.existsSync(file)).toBe(false)
  })

  it('a task change reaches the owner through the queue after the task_changed delay', async () => {
    const root = copyExampleRoot()
    const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW } })
    try {
      const before = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
      const task = path.join(root, 'tasks/forge/1.json')
      writeJson(task, { ...readJson(task), status: 'completed' })
      sync.noteTeamChange({ type: 'task', teamName: 'forge', taskId: '1' })

      const queued = await until(() => {
        const d = sync.getQueueDiagnostics()
        return d.queued > 0 ? d : undefined
      })
      expect(queued.queuedItems[0]).toMatchObject({ teamName: 'forge', memberName: 'jack', triggerReasons: ['task_changed'] })
      expect(queued.nextRunAt).toBe('2026-11-22T10:00:15.000Z')

      // Move the test clock past the documented 15 s delay; the worker wakes and reconciles.
      sync.setClockForTesting(NOW + 15_000)
      const statusFile = path.join(root, 'teams/forge/members/jack/.member-work-sync/status.json')
      const stored = await until(() => {
        const s = readJson(statusFile).status
        return s.shadow.reconciledBy === 'queue' ? s : undefined
      })
      expect(stored.evaluatedAt).toBe('2026-11-22T10:00:15.000Z')
      expect(stored.shadow.triggerReasons).toEqual(['task_changed'])
      expect(stored.agenda.fingerprint).not.toBe(before.agenda.fingerprint)
      expect(stored.agenda.items.map((i: any) => i.taskId)).toEqual(['2'])
      // The run is counted once it has finished (after the status write and planning).
      const done = await until(() => {
        const d = sync.getQueueDiagnostics()
        return d.reconciled === 1 ? d : undefined
      })
      expect(done).toMatchObject({ queued: 0, running: 0, reconciled: 1 })
    } finally {
      await sync.dispose()
    }
  })

  it('identical events waiting for the intake merge, and a full intake drops and counts', async () => {
    const sync = new MemberWorkSync({ claudeRoot: copyExampleRoot(), autoStart: false })
    try {
      // 100,000 identical events: each is either routed (queued once, then
      // coalesced) or merged into an identical one still waiting.
      const N = 100_000
      const inbox = { type: 'inbox', teamName: 'forge', detail: '/x/teams/forge/inboxes/jack.json' }
      for (let i = 0; i < N; i++) sync.noteTeamChange(inbox)
      const merged = await until(() => {
        const d = sync.getQueueDiagnostics()
        return d.enqueued + d.coalesced + d.mergedEvents === N ? d : undefined
      }, 20_000)
      expect(merged).toMatchObject({ queued: 1, enqueued: 1, droppedEvents: 0 })
      expect(merged.mergedEvents).toBeGreaterThan(0)

      // 30,000 distinct events (run ids differ), each re-checking the
      // team's five members (a config read per event), arrive faster than
      // the intake routes them: past 16,384 waiting, they are dropped and
      // counted. Every event is accounted for: routed, merged or dropped.
      const M = 30_000
      for (let i = 0; i < M; i++) sync.noteTeamChange({ type: 'config', teamName: 'forge', runId: `r${i}` })
      const before = merged.enqueued + merged.coalesced
      const counted = await until(() => {
        const d = sync.getQueueDiagnostics()
        const routed = (d.enqueued + d.coalesced - before) / 5
        return routed + d.droppedEvents + d.mergedEvents - merged.mergedEvents === M ? d : undefined
      }, 60_000)
      expect(counted.droppedEvents).toBeGreaterThan(0)
      expect(counted.droppedEvents).toBeLessThan(M)
    } finally {
      await sync.dispose()
    }
  })

  it('tool and lead activity are never merged: a start between two resets stays between them', async () => {
    const sync = new MemberWorkSync({ claudeRoot: copyExampleRoot(), clock: { nowMs: NOW }, autoStart: false })
    try {
      const reset = { type: 'tool-activity', teamName: 'forge', detail: JSON.stringify({ action: 'reset', memberName: 'jack' }) } as const
      const start = JSON.stringify({
        action: 'start',
        activity: { memberName: 'jack', toolUseId: 't9', toolName: 'Bash', startedAt: new Date(NOW).toISOString() },
      })
      sync.noteTeamChange(reset)
      sync.noteTeamChange({ type: 'tool-activity', teamName: 'forge', detail: start })
      sync.noteTeamChange(reset)
      // Events are routed in order: once this one is queued, the three are applied.
      sync.noteTeamChange({ type: 'member-spawn', teamName: 'forge', detail: 'kim' })
      const d = await until(() => {
        const d = sync.getQueueDiagnostics()
        return d.queuedItems.some((i) => i.memberName === 'kim') ? d : undefined
      })
      expect(d.mergedEvents).toBe(0)
      const jack = await sync.previewStatus({ teamName: 'forge', memberName: 'jack' })
      expect(jack.diagnostics.filter((x) => x.startsWith('member_busy'))).toEqual([])
    } finally {
      await sync.dispose()
    }
  })

  it('noteTeamChange reads each string field whole, and past a throwing getter', async () => {
    // (event, the member it queues). The long detail is read past the
    // addon's one-call buffer, with two-byte characters across its end.
    const finish = (pad: string) => JSON.stringify({ action: 'finish', memberName: 'jack', toolUseId: 't1', pad })
    const cases: [string, object, string][] = [
      ['long detail', { type: 'tool-activity', teamName: 'forge', detail: finish('é'.repeat(600)) }, 'jack'],
      ['detail ending near 512 bytes', { type: 'tool-activity', teamName: 'forge', detail: finish('x'.repeat(386) + 'é'.repeat(30)) }, 'jack'],
      ['throwing runId', { type: 'member-spawn', teamName: 'forge', get runId(): string { throw new Error('boom') }, detail: 'kim' }, 'kim'],
    ]
    for (const [label, event, member] of cases) {
      const sync = new MemberWorkSync({ claudeRoot: copyExampleRoot(), clock: { nowMs: NOW }, autoStart: false })
      try {
        sync.noteTeamChange(event as TeamChangeEvent)
        const d = await until(() => {
          const d = sync.getQueueDiagnostics()
          return d.queuedItems.length > 0 ? d : undefined
        })
        expect(d.queuedItems.map((i) => i.memberName), label).toEqual([member])
      } finally {
        await sync.dispose()
      }
    }
  })

  it('noteTeamChange never throws, whatever the input', () => {
    const sync = new MemberWorkSync({ claudeRoot: copyExampleRoot(), autoStart: false })
    const cyclic: any = { type: 'task', teamName: 'forge' }
    cyclic.self = cyclic
    const throwing = new Proxy({}, { get() { throw new Error('boom') } })
    for (const input of [undefined, null, 1, 'x', [], {}, { type: 5 }, { type: 'task' }, cyclic, throwing, { type: 'inbox', teamName: '../x', detail: 'inboxes/../../a.json' }, () => 1, Symbol('s'), 10n]) {
      expect(() => sync.noteTeamChange(input as any)).not.toThrow()
    }
  })

  it('dispose resolves, is idempotent, and later calls reject with MWS_DISPOSED', async () => {
    const sync = new MemberWorkSync({ claudeRoot: copyExampleRoot() })
    sync.noteTeamChange({ type: 'config', teamName: 'forge' })
    await sync.dispose()
    await sync.dispose()
    await expect(sync.getStatus({ teamName: 'forge', memberName: 'jack' })).rejects.toMatchObject({ code: 'MWS_DISPOSED' })
    expect(() => sync.getQueueDiagnostics()).toThrow(expect.objectContaining({ code: 'MWS_DISPOSED' }))
    expect(() => sync.noteTeamChange({ type: 'config', teamName: 'forge' })).not.toThrow()
  })

  it('prepareTeamDeletion fences the team until resumeTeam', async () => {
    const sync = new MemberWorkSync({ claudeRoot: copyExampleRoot(), autoStart: false })
    try {
      sync.noteTeamChange({ type: 'config', teamName: 'forge' })
      await until(() => (sync.getQueueDiagnostics().queued === 5 ? true : undefined))
      await sync.prepareTeamDeletion('forge')
      expect(sync.getQueueDiagnostics().queued).toBe(0)
      await expect(sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })).rejects.toMatchObject({ code: 'MWS_TEAM_QUIESCED' })
      await expect(sync.report({ teamName: 'forge', memberName: 'jack', state: 'caught_up', agendaFingerprint: 'x' })).rejects.toMatchObject({
        code: 'MWS_TEAM_QUIESCED',
      })
      expect(await sync.dispatchDueNudges(['forge'])).toMatchObject({ claimed: 0 })
      await sync.enqueueStartupScan(['forge'])
      expect(sync.getQueueDiagnostics().queued).toBe(0)
      sync.resumeTeam('forge') // lifts the fence now; the re-scan reads the roster off the JS thread
      await until(() => (sync.getQueueDiagnostics().queued === 5 ? true : undefined))
      expect((await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })).state).toBe('needs_sync')
      expect(sync.getQueueDiagnostics().queuedItems[0].triggerReasons).toEqual(['startup_scan'])
      sync.completeTeamDeletion('forge')
      expect(sync.getQueueDiagnostics().queued).toBe(0)
      await expect(sync.prepareTeamDeletion('..')).rejects.toMatchObject({ code: 'MWS_INVALID_ARGUMENT' })
    } finally {
      await sync.dispose()
    }
  })

  it('a script that creates an instance and does nothing exits by itself', () => {
    const root = copyExampleRoot()
    const script = `
      const { MemberWorkSync } = require(${JSON.stringify(ADDON)})
      const sync = new MemberWorkSync({ claudeRoot: ${JSON.stringify(root)}, onTeamChange: () => {} })
      sync.noteTeamChange({ type: 'config', teamName: 'forge' })
      sync.enqueueStartupScan(['forge']).then(() => console.log('scanned'))
    `
    const result = spawnSync(process.execPath, ['-e', script], { timeout: 15000, encoding: 'utf8' })
    expect(result.error).toBeUndefined()
    expect(result.status).toBe(0)
    expect(result.stdout.trim()).toBe('scanned')
  })
})

describe('turn-settled with autoStart: watcher → drain → queue → reconcile', () => {
  it('a Stop payload dropped by the real hook reaches the member without a manual drain', async () => {
    const root = copyExampleRoot()
    const project = '/home/u/proj'
    const configFile = path.join(root, 'teams/forge/config.json')
    writeJson(configFile, { ...readJson(configFile), projectPath: project })
    const projectDir = path.join(root, 'projects/-home-u-proj')
    fs.mkdirSync(projectDir, { recursive: true })
    fs.writeFileSync(
      path.join(projectDir, 'B1.jsonl'),
      JSON.stringify({ type: 'user', sessionId: 'B1', teamName: 'forge', agentName: 'bob', cwd: project }) + '\n',
    )
    const events: TeamChangeEvent[] = []
    const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW }, onTeamChange: (e) => events.push(e) })
    try {
      const settings: any = await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
      const command: string = settings.hooks.Stop[0].hooks[0].command
      const payload = JSON.stringify({ hook_event_name: 'Stop', session_id: 'B1', cwd: project })
      const out = spawnSync('sh', ['-c', command], { input: payload })
      expect(out.status).toBe(0)

      // No drain call: the watcher (or the 100 ms start-up drain) picks the file up.
      const event = await until(() => events.find((e) => e.type === 'member-turn-settled'))
      expect(event.teamName).toBe('forge')
      expect(JSON.parse(event.detail!)).toMatchObject({ memberName: 'bob', provider: 'claude' })
      const queued = await until(() => {
        const d = sync.getQueueDiagnostics()
        return d.queuedItems.find((i) => i.memberName === 'bob')
      })
      expect(queued.triggerReasons).toEqual(['turn_settled'])
      expect(queued.runAt).toBe('2026-11-22T10:00:05.000Z')

      sync.setClockForTesting(NOW + 5_000)
      const statusFile = path.join(root, 'teams/forge/members/bob/.member-work-sync/status.json')
      const stored = await until(() => {
        if (!fs.existsSync(statusFile)) return undefined
        const s = readJson(statusFile).status
        return s.shadow.reconciledBy === 'queue' ? s : undefined
      })
      expect(stored.shadow.triggerReasons).toEqual(['turn_settled'])
    } finally {
      await sync.dispose()
    }
  })
})
