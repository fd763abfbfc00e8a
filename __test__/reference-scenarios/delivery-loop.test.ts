// The app feature's scenarios about the delivery loop once nudges are
// planned: safety blockers, restarts, reports and agenda changes, inactive
// teams, busy members, the hourly limit, inbox failures, the watchdog
// cooldown, and legacy pending reports, told against the addon.
// See CLASSIFICATION.md.
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { writeJson } from '../helpers'
import { Clock, makeTeam, MINUTE, NOW, open, pendingTask, queueIdle, seedMatureNoisy, seedShadowReady } from './fixture'
import type { Team } from './fixture'

const iso = (ms: number) => new Date(ms).toISOString()

function codexTeam(name: string, tasks = [pendingTask('bob')]) {
  const team = makeTeam(name, [{ name: 'bob', providerId: 'codex' }], tasks)
  const sync = open(team, { autoStart: true })
  return { team, sync, clock: new Clock(sync) }
}

function toolActivity(team: Team, detail: Record<string, unknown>) {
  return { type: 'tool-activity' as const, teamName: team.name, detail: JSON.stringify(detail) }
}

function writeWatchdogAlert(team: Team, alertedAtMs: number): void {
  writeJson(path.join(team.teamDir, 'stall-monitor-journal.json'), [{ taskId: 'task-1', state: 'alerted', alertedAt: iso(alertedAtMs) }])
}

const idle = { claimed: 0, delivered: 0, superseded: 0, retryable: 0, terminal: 0 }

describe('app scenarios: the delivery loop', () => {
  it('a nudge held back by a report-rejection blocker stays retryable, and goes out after the metrics clear and the instance restarts', async () => {
    const team = makeTeam('team-safety-restart', [{ name: 'bob', providerId: 'codex' }], [pendingTask('bob', 'Keep unsafe report recovery queued')])
    // The app holds this team's dispatch with a readiness callback while its
    // queued reconcile plans; the addon's refreshStatus plans without dispatching.
    let sync = open(team)
    try {
      await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'pending' })])
      seedMatureNoisy(team, 'bob', ['would_nudge', 'fingerprint_changed', 'report_rejected'])
      expect(await sync.dispatchDueNudges([team.name])).toMatchObject({ claimed: 1, delivered: 0, superseded: 0, retryable: 1, terminal: 0 })
      const readiness = (await sync.getMetrics({ teamName: team.name })).phase2Readiness
      expect(readiness.state).toBe('blocked')
      expect(readiness.reasons).toEqual(expect.arrayContaining(['would_nudge_rate_high', 'fingerprint_churn_high', 'report_rejection_rate_high']))
      expect(team.inbox('bob')).toEqual([])
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'failed_retryable', lastError: 'blocking_metrics' })])
      const held = team.journal('bob').find((line) => line.source === 'nudge_dispatcher' && line.reason === 'blocking_metrics')
      expect(held).toMatchObject({
        event: 'nudge_skipped',
        diagnostics: expect.arrayContaining(['phase2_readiness:would_nudge_rate_high', 'phase2_readiness:fingerprint_churn_high', 'phase2_readiness:report_rejection_rate_high']),
        metadata: expect.objectContaining({ phase2ReadinessReasons: expect.stringContaining('report_rejection_rate_high'), reportRejectionRate: 1, maxReportRejectionRate: 0.2 }),
      })
      expect(team.events('bob')).not.toContain('nudge_delivered')
      await sync.dispose()

      seedShadowReady(team, 'bob')
      team.makeRetriesDue('bob', iso(NOW - 1000))
      sync = open(team)
      expect(await sync.dispatchDueNudges([team.name])).toMatchObject({ claimed: 1, delivered: 1, superseded: 0, retryable: 0, terminal: 0 })
      expect((await sync.getMetrics({ teamName: team.name })).phase2Readiness).toMatchObject({ state: 'shadow_ready', reasons: [] })
      expect(team.nudges('bob')).toHaveLength(1)
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'delivered' })])
      expect(team.events('bob')).toContain('nudge_delivered')
    } finally {
      await sync.dispose()
    }
  })

  it('a planned native nudge is delivered although a peer makes team metrics noisy before the dispatch', async () => {
    const team = makeTeam('team-cross-member-noise', [
      { name: 'alice', providerId: 'codex' },
      { name: 'bob', providerId: 'codex' },
    ], [pendingTask('bob', 'Recover despite noisy peer telemetry')])
    // As above, planning without a dispatch stands in for the app's dispatch gate.
    const sync = open(team)
    try {
      await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'pending' })])
      seedMatureNoisy(team, 'alice', ['would_nudge', 'fingerprint_changed'], ['alice', 'bob'])
      const metrics = await sync.getMetrics({ teamName: team.name })
      expect(metrics.phase2Readiness.state).toBe('blocked')
      expect(metrics.phase2Readiness.reasons).toEqual(expect.arrayContaining(['would_nudge_rate_high', 'fingerprint_churn_high']))
      expect(metrics.recentEvents).toEqual(
        expect.arrayContaining([expect.objectContaining({ memberName: 'alice', kind: 'would_nudge' }), expect.objectContaining({ memberName: 'alice', kind: 'fingerprint_changed' })]),
      )
      await sync.refreshTeam({ teamName: team.name })
      expect(team.outbox('alice')).toEqual({})
      expect(team.inbox('alice')).toEqual([])

      expect(await sync.dispatchDueNudges([team.name])).toMatchObject({ claimed: 1, delivered: 1, superseded: 0, retryable: 0, terminal: 0 })
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(1)
      expect(nudges[0].text).toContain('11111111')
      expect(team.inbox('alice')).toEqual([])
      expect(team.events('bob')).toContain('nudge_delivered')
      expect(team.journal('bob').some((line) => line.reason === 'blocking_metrics')).toBe(false)
    } finally {
      await sync.dispose()
    }
  })

  it('a safety blocker of one team does not hold back a nudge of another team with a member of the same name', async () => {
    const safety = makeTeam('team-safety-blocked', [{ name: 'bob', providerId: 'codex' }], [{ id: 'task-safety', displayId: '11111111', subject: 'Wait for safety metrics', status: 'pending', owner: 'bob' }])
    const noisy = makeTeam('team-diagnostic-noisy', [{ name: 'bob', providerId: 'codex' }], [{ id: 'task-diagnostic', displayId: '22222222', subject: 'Recover through diagnostic noise', status: 'pending', owner: 'bob' }], safety.root)
    const sync = open(safety, { autoStart: true })
    const clock = new Clock(sync)
    try {
      seedMatureNoisy(safety, 'bob', ['would_nudge', 'fingerprint_changed', 'report_rejected'])
      seedMatureNoisy(noisy, 'bob', ['would_nudge', 'fingerprint_changed'])
      sync.noteTeamChange({ type: 'task', teamName: safety.name, taskId: 'task-safety' })
      sync.noteTeamChange({ type: 'task', teamName: noisy.name, taskId: 'task-diagnostic' })
      await clock.runQueue()
      expect(sync.getQueueDiagnostics().reconciled).toBeGreaterThanOrEqual(2)
      const safetyReadiness = (await sync.getMetrics({ teamName: safety.name })).phase2Readiness
      expect(safetyReadiness.state).toBe('blocked')
      expect(safetyReadiness.reasons).toEqual(expect.arrayContaining(['would_nudge_rate_high', 'fingerprint_churn_high', 'report_rejection_rate_high']))
      const noisyReadiness = (await sync.getMetrics({ teamName: noisy.name })).phase2Readiness
      expect(noisyReadiness.state).toBe('blocked')
      expect(noisyReadiness.reasons).toEqual(expect.arrayContaining(['would_nudge_rate_high', 'fingerprint_churn_high']))
      expect(safety.inbox('bob')).toEqual([])
      expect(safety.outbox('bob')).toEqual({})
      const nudges = noisy.nudges('bob')
      expect(nudges).toHaveLength(1)
      expect(nudges[0].text).toContain('22222222')
      expect(noisy.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'delivered' })])
    } finally {
      await sync.dispose()
    }
  })

  it('a nudge delivered under noisy metrics is not delivered again after a restart', async () => {
    let { team, sync, clock } = codexTeam('team-noisy-restart', [pendingTask('bob', 'Do not redeliver after restart')])
    try {
      seedMatureNoisy(team, 'bob', ['would_nudge', 'fingerprint_changed'])
      expect((await sync.getMetrics({ teamName: team.name })).phase2Readiness.state).toBe('blocked')
      sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-1' })
      await clock.runQueue()
      expect(team.nudges('bob')).toHaveLength(1)
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'delivered' })])
      await sync.dispose()

      sync = open(team, { autoStart: true, clock: { nowMs: clock.now } })
      clock = new Clock(sync)
      clock.set(clock.now)
      sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-1' })
      await clock.runQueue()
      expect(sync.getQueueDiagnostics().reconciled).toBeGreaterThanOrEqual(1)
      expect(await sync.dispatchDueNudges([team.name])).toMatchObject({ delivered: 0 })
      expect(team.nudges('bob')).toHaveLength(1)
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'delivered' })])
      expect(team.events('bob').filter((event) => event === 'nudge_delivered')).toHaveLength(1)
    } finally {
      await sync.dispose()
    }
  })

  it('a bounded loop of reports and agenda changes delivers one nudge per agenda, never twice', async () => {
    const { team, sync, clock } = codexTeam('team-bounded-loop')
    try {
      seedShadowReady(team, 'bob')
      sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-1' })
      await clock.runQueue()
      expect(team.nudges('bob')).toHaveLength(1)
      const first = await sync.getStatus({ teamName: team.name, memberName: 'bob' })
      expect(first).toMatchObject({ state: 'needs_sync', providerId: 'codex', shadow: { wouldNudge: true } })
      expect(first.reportToken).toBeTruthy()
      const working = await sync.report({ teamName: team.name, memberName: 'bob', state: 'still_working', agendaFingerprint: first.agenda.fingerprint, reportToken: first.reportToken, taskIds: ['task-1'], source: 'test' })
      expect(working).toMatchObject({ accepted: true, status: { state: 'still_working', report: { accepted: true, state: 'still_working' } } })

      seedMatureNoisy(team, 'bob', ['would_nudge', 'fingerprint_changed'], ['bob'], clock.now)
      expect((await sync.getMetrics({ teamName: team.name })).phase2Readiness.state).toBe('blocked')
      const reconciled = sync.getQueueDiagnostics().reconciled
      sync.noteTeamChange({ type: 'config', teamName: team.name })
      await clock.runQueue()
      expect(sync.getQueueDiagnostics().reconciled).toBeGreaterThanOrEqual(reconciled + 1)
      expect(await sync.getStatus({ teamName: team.name, memberName: 'bob' })).toMatchObject({ state: 'still_working', report: { accepted: true, state: 'still_working' } })
      expect(team.nudges('bob')).toHaveLength(1)
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'delivered' })])
      expect(await sync.dispatchDueNudges([team.name])).toMatchObject(idle)
      expect(team.nudges('bob')).toHaveLength(1)

      team.writeTasks([pendingTask('bob'), pendingTask('bob', 'Ship follow-up sync', 'task-2', '22222222')])
      sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-2' })
      await clock.runQueue()
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(2)
      expect(new Set(nudges.map((row) => row.messageId)).size).toBe(2)
      expect(nudges[1].text).toContain('22222222')
      const second = await sync.getStatus({ teamName: team.name, memberName: 'bob' })
      expect(second.state).toBe('needs_sync')
      expect(second.agenda.fingerprint).not.toBe(first.agenda.fingerprint)
      expect(second.shadow).toMatchObject({ wouldNudge: true, fingerprintChanged: true, previousFingerprint: first.agenda.fingerprint })
      expect((await sync.getMetrics({ teamName: team.name })).phase2Readiness.state).toBe('blocked')

      const taskIds = second.agenda.items.map((item) => item.taskId)
      const again = await sync.report({ teamName: team.name, memberName: 'bob', state: 'still_working', agendaFingerprint: second.agenda.fingerprint, reportToken: second.reportToken, taskIds, source: 'test' })
      expect(again).toMatchObject({ accepted: true, status: { state: 'still_working', report: { accepted: true, taskIds } } })
      expect(await sync.dispatchDueNudges([team.name])).toMatchObject({ claimed: 0, delivered: 0 })

      team.writeTasks([
        { ...pendingTask('bob'), status: 'completed' },
        { ...pendingTask('bob', 'Ship follow-up sync', 'task-2', '22222222'), status: 'completed' },
      ])
      const cleared = await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
      expect(cleared).toMatchObject({ state: 'caught_up', agenda: { items: [] }, shadow: { wouldNudge: false } })
      const done = await sync.report({ teamName: team.name, memberName: 'bob', state: 'caught_up', agendaFingerprint: cleared.agenda.fingerprint, reportToken: cleared.reportToken, source: 'test' })
      expect(done).toMatchObject({ accepted: true, status: { state: 'caught_up', report: { accepted: true, state: 'caught_up' } } })
      expect(await sync.dispatchDueNudges([team.name])).toMatchObject({ claimed: 0, delivered: 0 })
      expect(team.nudges('bob')).toHaveLength(2)
      const events = team.events('bob')
      expect(events.filter((event) => event === 'nudge_delivered')).toHaveLength(2)
      expect(events.filter((event) => event === 'report_accepted')).toHaveLength(3)
    } finally {
      await sync.dispose()
    }
  })

  it('a pending nudge whose agenda cleared is superseded, a report on the old agenda is rejected, one on the new agenda accepted', async () => {
    const team = makeTeam('team-stale-file-nudge', [{ name: 'bob', providerId: 'codex' }], [pendingTask('bob')])
    const sync = open(team)
    try {
      seedShadowReady(team, 'bob')
      const stale = await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
      expect(stale).toMatchObject({ state: 'needs_sync', shadow: { wouldNudge: true } })
      const id = `member-work-sync:${team.name}:bob:${stale.agenda.fingerprint}`
      expect(team.outbox('bob')[id]).toMatchObject({ status: 'pending' })

      team.writeTasks([{ ...pendingTask('bob'), status: 'completed' }])
      expect(await sync.dispatchDueNudges([team.name])).toMatchObject({ claimed: 1, delivered: 0, superseded: 1, retryable: 0, terminal: 0 })
      expect(team.inbox('bob')).toEqual([])
      expect(team.outbox('bob')[id]).toMatchObject({ status: 'superseded', lastError: 'status_no_longer_matches_outbox' })

      const rejected = await sync.report({ teamName: team.name, memberName: 'bob', state: 'still_working', agendaFingerprint: stale.agenda.fingerprint, reportToken: stale.reportToken, taskIds: ['task-1'], source: 'test' })
      expect(rejected).toMatchObject({ accepted: false, code: 'stale_fingerprint', status: { state: 'caught_up', report: { accepted: false, rejectionCode: 'stale_fingerprint' } } })
      const current = await sync.getStatus({ teamName: team.name, memberName: 'bob' })
      const accepted = await sync.report({ teamName: team.name, memberName: 'bob', state: 'caught_up', agendaFingerprint: current.agenda.fingerprint, reportToken: current.reportToken, source: 'test' })
      expect(accepted).toMatchObject({ accepted: true, status: { state: 'caught_up', report: { accepted: true, state: 'caught_up' } } })
      expect(await sync.dispatchDueNudges([team.name])).toMatchObject(idle)
      expect(team.events('bob')).toEqual(expect.arrayContaining(['nudge_superseded', 'report_rejected', 'report_accepted']))
    } finally {
      await sync.dispose()
    }
  })

  it('a pending nudge is superseded without delivery once the team is no longer running', async () => {
    const team = makeTeam('team-goes-inactive', [{ name: 'bob', providerId: 'codex' }], [pendingTask('bob', 'Ship sync before shutdown')])
    const sync = open(team)
    try {
      seedShadowReady(team, 'bob')
      const status = await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
      expect(status).toMatchObject({ state: 'needs_sync', shadow: { wouldNudge: true } })
      const id = `member-work-sync:${team.name}:bob:${status.agenda.fingerprint}`
      expect(team.outbox('bob')[id]).toMatchObject({ status: 'pending' })
      seedMatureNoisy(team, 'bob', ['would_nudge', 'fingerprint_changed'])
      expect((await sync.getMetrics({ teamName: team.name })).phase2Readiness.state).toBe('blocked')

      sync.setTeamRuntimeState(team.name, { active: false })
      expect(await sync.dispatchDueNudges([team.name])).toMatchObject({ claimed: 1, delivered: 0, superseded: 1, retryable: 0, terminal: 0 })
      expect(team.inbox('bob')).toEqual([])
      expect(team.outbox('bob')[id]).toMatchObject({ status: 'superseded', lastError: 'team_inactive' })
      expect(team.events('bob')).toContain('nudge_superseded')
      expect(team.journal('bob').some((line) => line.reason === 'team_inactive')).toBe(true)
      expect(team.events('bob')).not.toContain('nudge_delivered')
    } finally {
      await sync.dispose()
    }
  })

  it("a report the controller left in the team's legacy pending-reports.json is replayed and accepted", async () => {
    const team = makeTeam('team-legacy-replay', [{ name: 'bob', providerId: 'codex' }], [pendingTask('bob', 'Ship sync after offline report')])
    const sync = open(team)
    try {
      const status = await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
      expect(status.state).toBe('needs_sync')
      expect(status.agenda.items).toEqual([expect.objectContaining({ taskId: 'task-1' })])
      expect(status.reportToken).toBeTruthy()
      const intentId = 'legacy-intent-1'
      writeJson(path.join(team.teamDir, '.member-work-sync/pending-reports.json'), {
        schemaVersion: 1,
        intents: {
          [intentId]: {
            id: intentId,
            teamName: team.name,
            memberName: 'bob',
            status: 'pending',
            reason: 'control_api_unavailable',
            recordedAt: iso(NOW - MINUTE),
            request: { teamName: team.name, memberName: 'bob', state: 'still_working', agendaFingerprint: status.agenda.fingerprint, reportToken: status.reportToken, taskIds: ['task-1'], source: 'mcp' },
          },
        },
      })
      expect(await sync.replayPendingReports([team.name])).toEqual({ processed: 1, accepted: 1, rejected: 0, superseded: 0 })
      expect(await sync.getStatus({ teamName: team.name, memberName: 'bob' })).toMatchObject({
        state: 'still_working',
        report: { accepted: true, state: 'still_working', taskIds: ['task-1'], source: 'mcp' },
      })
      const reports = JSON.parse(fs.readFileSync(path.join(team.storeDir('bob'), 'reports.json'), 'utf8'))
      expect(reports.intents[intentId]).toMatchObject({ status: 'accepted', resultCode: 'accepted' })
      expect(team.events('bob')).toEqual(expect.arrayContaining(['legacy_fallback_used', 'report_accepted']))
    } finally {
      await sync.dispose()
    }
  })

  it('a busy member keeps its nudge retryable and is nudged on the next agenda change once the tool is gone', async () => {
    const { team, sync, clock } = codexTeam('team-busy-next-agenda', [pendingTask('bob', 'Ship sync while busy')])
    try {
      seedMatureNoisy(team, 'bob', ['would_nudge', 'fingerprint_changed'])
      expect((await sync.getMetrics({ teamName: team.name })).phase2Readiness.state).toBe('blocked')
      sync.noteTeamChange(toolActivity(team, { action: 'start', activity: { memberName: 'bob', toolUseId: 'tool-1', toolName: 'bash', startedAt: iso(clock.now) } }))
      sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-1' })
      await clock.runQueue()
      expect(sync.getQueueDiagnostics().reconciled).toBe(1)
      expect(team.inbox('bob')).toEqual([])
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'failed_retryable', lastError: 'member_busy:active_tool_activity' })])

      sync.noteTeamChange(toolActivity(team, { action: 'reset', memberName: 'bob', toolUseIds: ['tool-1'] }))
      team.writeTasks([pendingTask('bob', 'Ship sync while busy'), pendingTask('bob', 'Ship sync after busy clears', 'task-2', '22222222')])
      sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-2' })
      await clock.runQueue()
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(1)
      expect(nudges[0].text).toContain('22222222')
      expect(team.outboxItems('bob')).toEqual(
        expect.arrayContaining([expect.objectContaining({ status: 'failed_retryable', lastError: 'member_busy:active_tool_activity' }), expect.objectContaining({ status: 'delivered' })]),
      )
      expect(team.events('bob')).toEqual(expect.arrayContaining(['member_busy', 'nudge_delivered']))
    } finally {
      await sync.dispose()
    }
  })

  it('a finished tool lifts the retry delay of a busy member without an agenda change', async () => {
    const { team, sync, clock } = codexTeam('team-busy-finish')
    try {
      seedShadowReady(team, 'bob')
      sync.noteTeamChange(toolActivity(team, { action: 'start', activity: { memberName: 'bob', toolUseId: 'tool-1', toolName: 'bash', startedAt: iso(clock.now) } }))
      sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-1' })
      await clock.runQueue()
      expect(team.inbox('bob')).toEqual([])
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'failed_retryable', lastError: 'member_busy:active_tool_activity', nextAttemptAt: expect.any(String) })])

      sync.noteTeamChange(toolActivity(team, { action: 'finish', memberName: 'bob', toolUseId: 'tool-1', finishedAt: iso(clock.now - 2 * MINUTE) }))
      await clock.runQueue()
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(1)
      expect(nudges[0].text).toContain('11111111')
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'delivered' })])
    } finally {
      await sync.dispose()
    }
  })

  it('under noisy metrics a member gets at most two nudges an hour; the third agenda waits as rate limited', async () => {
    const { team, sync, clock } = codexTeam('team-rate-limit', [pendingTask('bob')])
    try {
      seedMatureNoisy(team, 'bob', ['would_nudge', 'fingerprint_changed'])
      expect((await sync.getMetrics({ teamName: team.name })).phase2Readiness.state).toBe('blocked')
      const tasks = [pendingTask('bob')]
      sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-1' })
      await clock.runQueue()
      expect(team.nudges('bob')).toHaveLength(1)
      expect(team.nudges('bob')[0].text).toContain('11111111')

      tasks.push(pendingTask('bob', 'Ship sync second', 'task-2', '22222222'))
      team.writeTasks(tasks)
      sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-2' })
      await clock.runQueue()
      expect(team.nudges('bob')).toHaveLength(2)
      expect(team.nudges('bob')[1].text).toContain('22222222')
      expect(team.outboxItems('bob').filter((item) => item.status === 'delivered')).toHaveLength(2)

      tasks.push(pendingTask('bob', 'Ship sync third', 'task-3', '33333333'))
      team.writeTasks(tasks)
      sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-3' })
      await clock.runQueue()
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(2)
      expect(nudges.some((row) => row.text.includes('33333333'))).toBe(false)
      const items = team.outboxItems('bob')
      expect(items.filter((item) => item.status === 'delivered')).toHaveLength(2)
      expect(items).toEqual(expect.arrayContaining([expect.objectContaining({ status: 'failed_retryable', lastError: 'member_nudge_rate_limited' })]))
      const journal = team.journal('bob')
      expect(journal.filter((line) => line.event === 'nudge_delivered')).toHaveLength(2)
      expect(journal).toEqual(expect.arrayContaining([expect.objectContaining({ event: 'nudge_skipped', reason: 'member_nudge_rate_limited' })]))
    } finally {
      await sync.dispose()
    }
  })

  it('an inbox that cannot be written keeps the nudge retryable, and it is delivered once when the inbox is back', async () => {
    const { team, sync, clock } = codexTeam('team-inbox-retry', [pendingTask('bob', 'Ship sync after inbox retry')])
    try {
      seedShadowReady(team, 'bob')
      const inbox = path.join(team.teamDir, 'inboxes/bob.json')
      fs.mkdirSync(inbox, { recursive: true })
      sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-1' })
      await clock.runQueue()
      await queueIdle(sync)
      expect(team.outboxItems('bob')).toEqual(expect.arrayContaining([expect.objectContaining({ status: 'failed_retryable', lastError: expect.any(String) })]))

      fs.rmSync(inbox, { recursive: true, force: true })
      team.makeRetriesDue('bob', iso(clock.now - 1000))
      expect(await sync.dispatchDueNudges([team.name])).toMatchObject({ claimed: 1, delivered: 1, superseded: 0, retryable: 0, terminal: 0 })
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(1)
      expect(nudges[0].text).toContain('11111111')
      expect(team.outboxItems('bob')).toEqual(expect.arrayContaining([expect.objectContaining({ status: 'delivered', deliveredMessageId: expect.any(String) })]))
      expect(team.events('bob')).toEqual(expect.arrayContaining(['nudge_retryable', 'nudge_delivered']))
    } finally {
      await sync.dispose()
    }
  })

  it("the app watchdog's recent alert holds the nudge back, which goes out once the alert is old enough", async () => {
    const { team, sync, clock } = codexTeam('team-watchdog-cooldown', [pendingTask('bob', 'Ship sync after watchdog cooldown')])
    try {
      seedShadowReady(team, 'bob')
      writeWatchdogAlert(team, clock.now)
      sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-1' })
      await clock.runQueue()
      expect(team.nudges('bob')).toHaveLength(0)
      expect(team.outboxItems('bob')).toEqual(expect.arrayContaining([expect.objectContaining({ status: 'failed_retryable', lastError: 'watchdog_cooldown_active' })]))

      writeWatchdogAlert(team, clock.now - 11 * MINUTE)
      team.makeRetriesDue('bob', iso(clock.now - 1000))
      expect(await sync.dispatchDueNudges([team.name])).toMatchObject({ claimed: 1, delivered: 1, superseded: 0, retryable: 0, terminal: 0 })
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(1)
      expect(nudges[0].text).toContain('11111111')
      expect(team.events('bob')).toEqual(expect.arrayContaining(['watchdog_cooldown_active', 'nudge_delivered']))
      expect(team.journal('bob').some((line) => line.reason === 'watchdog_cooldown_active')).toBe(true)
    } finally {
      await sync.dispose()
    }
  })

  it('a report accepted while a nudge waits for its retry supersedes that nudge', async () => {
    const { team, sync, clock } = codexTeam('team-report-before-retry', [pendingTask('bob', 'Ship sync without stale retry')])
    try {
      seedShadowReady(team, 'bob')
      writeWatchdogAlert(team, clock.now)
      sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-1' })
      await clock.runQueue()
      const status = await sync.getStatus({ teamName: team.name, memberName: 'bob' })
      expect(status).toMatchObject({ state: 'needs_sync', shadow: { wouldNudge: true } })
      expect(status.reportToken).toBeTruthy()
      expect(team.inbox('bob')).toHaveLength(0)
      expect(team.outboxItems('bob')).toEqual(expect.arrayContaining([expect.objectContaining({ status: 'failed_retryable', lastError: 'watchdog_cooldown_active' })]))

      const report = await sync.report({ teamName: team.name, memberName: 'bob', state: 'still_working', agendaFingerprint: status.agenda.fingerprint, reportToken: status.reportToken, taskIds: ['task-1'], source: 'test' })
      expect(report).toMatchObject({ accepted: true, status: { state: 'still_working', report: { accepted: true } } })
      team.makeRetriesDue('bob', iso(clock.now - 1000))
      expect(await sync.dispatchDueNudges([team.name])).toMatchObject({ claimed: 1, delivered: 0, superseded: 1, retryable: 0, terminal: 0 })
      expect(team.inbox('bob')).toHaveLength(0)
      expect(team.outboxItems('bob')).toEqual(expect.arrayContaining([expect.objectContaining({ status: 'superseded', lastError: 'status_no_longer_matches_outbox' })]))
      const events = team.events('bob')
      expect(events).toEqual(expect.arrayContaining(['watchdog_cooldown_active', 'report_accepted', 'nudge_superseded']))
      expect(events).not.toContain('nudge_delivered')
    } finally {
      await sync.dispose()
    }
  })
})
