// The app feature's scenarios about when targeted recovery nudges go out
// although team-wide shadow metrics are still collecting or noisy (OpenCode
// members, leads, native providers, a stale agenda, a still-stuck agenda),
// told against the addon. The app's delivery wake callback is not part of
// these versions (issue 25). See CLASSIFICATION.md.
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { writeJson } from '../helpers'
import { Clock, makeTeam, MINUTE, open, pendingTask, seedMatureNoisy, seedShadowReady, seedYoungNoisy } from './fixture'
import type { MemberSpec, Team, TaskSpec } from './fixture'

/** Eighteen calm samples six hours apart: collecting (too few events), nothing blocking. */
function seedCalmCollecting(team: Team, member: string): void {
  team.writeMetrics(
    { [member]: { memberName: member, state: 'caught_up', agendaFingerprint: 'agenda:v1:seed', actionableCount: 0, evaluatedAt: '2026-01-01T00:00:00.000Z' } },
    Array.from({ length: 18 }, (_, i) => ({
      id: `calm-${i}`,
      teamName: team.name,
      memberName: member,
      kind: 'status_evaluated',
      state: 'caught_up',
      agendaFingerprint: `agenda:v1:seed-${i}`,
      recordedAt: new Date(Date.UTC(2026, 0, 1, i * 6)).toISOString(),
      actionableCount: 0,
    })),
  )
}

/**
 * The member's agenda was already needs_sync a little over six minutes ago,
 * and twelve would-nudges of it came in the last five minutes.
 */
function seedStaleAgenda(team: Team, member: string, fingerprint: string, nowMs: number): void {
  const sample = (id: string, kind: string, at: number) => ({
    id,
    teamName: team.name,
    memberName: member,
    kind,
    state: 'needs_sync',
    agendaFingerprint: fingerprint,
    recordedAt: new Date(at).toISOString(),
    actionableCount: 1,
    providerId: 'codex',
  })
  const staleAt = nowMs - 6 * MINUTE - 1000
  team.writeMetrics(
    { [member]: { memberName: member, state: 'needs_sync', agendaFingerprint: fingerprint, actionableCount: 1, evaluatedAt: new Date(staleAt).toISOString(), providerId: 'codex' } },
    [sample('stale-status', 'status_evaluated', staleAt), ...Array.from({ length: 12 }, (_, i) => sample(`stale-would-${i}`, 'would_nudge', nowMs - 5 * MINUTE + i * 5000))],
  )
}

function setup(name: string, members: MemberSpec[], tasks: TaskSpec[]) {
  const team = makeTeam(name, members, tasks)
  const sync = open(team, { autoStart: true })
  return { team, sync, clock: new Clock(sync) }
}

function taskChanged(sync: ReturnType<typeof open>, team: Team): void {
  sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-1' })
}

describe('app scenarios: targeted recovery nudges', () => {
  it('an OpenCode member is nudged while shadow data is still collecting', async () => {
    const { team, sync, clock } = setup('team-opencode-targeted', [{ name: 'bob', providerId: 'opencode' }], [pendingTask('bob', 'Ship OpenCode targeted nudge')])
    try {
      seedCalmCollecting(team, 'bob')
      taskChanged(sync, team)
      await clock.runQueue()
      expect(sync.getQueueDiagnostics().reconciled).toBe(1)
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(1)
      expect(nudges[0].text).toContain('11111111')
      expect((await sync.getMetrics({ teamName: team.name })).phase2Readiness.state).toBe('collecting_shadow_data')
      expect(await sync.getStatus({ teamName: team.name, memberName: 'bob' })).toMatchObject({ state: 'needs_sync', providerId: 'opencode', shadow: { wouldNudge: true } })
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'delivered', deliveredMessageId: nudges[0].messageId })])
      expect(team.events('bob')).toContain('nudge_delivered')
      expect(team.journal('bob').some((line) => line.reason === 'phase2_not_ready')).toBe(false)
    } finally {
      await sync.dispose()
    }
  })

  it('a Codex worker whose turn settled without closing its in-progress task gets a task-protocol repair nudge', async () => {
    const { team, sync, clock } = setup('team-codex-task-protocol-repair', [{ name: 'bob', providerId: 'codex' }], [
      { id: 'task-1', displayId: '11111111', subject: 'Close Codex task protocol', status: 'in_progress', owner: 'bob' },
    ])
    try {
      seedYoungNoisy(team, 'bob', ['report_rejected'])
      taskChanged(sync, team)
      await clock.runQueue()
      const status = await sync.getStatus({ teamName: team.name, memberName: 'bob' })
      expect(status).toMatchObject({ state: 'needs_sync', providerId: 'codex', shadow: { wouldNudge: true } })
      expect(status.diagnostics).toContain('no_current_report')
      expect(team.inbox('bob')).toEqual([])

      sync.noteTeamChange({ type: 'member-turn-settled', teamName: team.name, detail: JSON.stringify({ memberName: 'bob', provider: 'codex', sourceId: 'test-turn' }) })
      await clock.runQueue()
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(1)
      for (const tool of ['task_add_comment', 'task_complete', 'mcp__agent-teams__member_work_sync_report']) expect(nudges[0].text).toContain(tool)
      expect(team.outboxItems('bob')).toEqual([
        expect.objectContaining({ status: 'delivered', deliveredMessageId: nudges[0].messageId, payload: expect.objectContaining({ workSyncIntentKey: expect.stringContaining('task-protocol-repair:') }) }),
      ])
      const events = team.events('bob')
      expect(events).toEqual(expect.arrayContaining(['runtime_stall_observed', 'nudge_planned', 'nudge_delivered']))
      expect(team.journal('bob').some((line) => line.event === 'nudge_planned' && line.reason === 'created')).toBe(true)
    } finally {
      await sync.dispose()
    }
  })

  for (const [title, taskStatus, reason, member, members, meta] of [
    ['an in-progress task', 'in_progress', 'owned_in_progress_task', 'bob', [{ name: 'bob', providerId: 'codex' }], undefined],
    ['a pending task', 'pending', 'owned_pending_task', 'bob', [{ name: 'bob', providerId: 'codex' }], undefined],
    [
      'an in-progress task, the provider known from config only (members.meta.json names none)',
      'in_progress',
      'owned_in_progress_task',
      'nickname',
      [{ name: 'NickName', providerId: 'codex', model: 'gpt-5.5' }],
      [{ name: 'NickName', role: 'developer', agentType: 'general-purpose', color: 'blue' }],
    ],
  ] as const) {
    it(`a native member stuck on ${title} gets one recovery nudge, which stays one after its agenda goes stale under a noisy would-nudge rate`, async () => {
      const owner = (members as readonly MemberSpec[])[0].name
      const { team, sync, clock } = setup('team-native-stale', [...(members as readonly MemberSpec[])], [
        { id: 'task-1', displayId: '11111111', subject: 'Review landing', status: taskStatus, owner },
      ])
      if (meta) writeJson(path.join(team.teamDir, 'members.meta.json'), { version: 1, members: meta })
      try {
        taskChanged(sync, team)
        await clock.runQueue()
        const status = await sync.getStatus({ teamName: team.name, memberName: member })
        expect(status).toMatchObject({ state: 'needs_sync', providerId: 'codex' })
        expect(status.diagnostics).toContain('no_current_report')
        expect(status.agenda.items).toEqual([expect.objectContaining({ reason, evidence: expect.objectContaining({ status: taskStatus }) })])
        // The app's version checks the inbox is still empty here, right after
        // the status appears and before its queued dispatch has finished; run
        // to completion (its reconciler and dispatcher on the same files, via
        // ../shared/conformance/behavior/upstream-driver.mjs), the app delivers
        // this nudge now, as the addon does. What both keep: one nudge in all.

        seedStaleAgenda(team, member, status.agenda.fingerprint, clock.now)
        taskChanged(sync, team)
        await clock.runQueue()
        const nudges = team.nudges(member)
        expect(nudges).toHaveLength(1)
        expect(nudges[0].text).toContain('11111111')
        expect((await sync.getMetrics({ teamName: team.name })).phase2Readiness.reasons).toContain('would_nudge_rate_high')
        expect(team.outboxItems(member)).toEqual([expect.objectContaining({ status: 'delivered', deliveredMessageId: nudges[0].messageId })])
        expect(team.events(member)).toContain('nudge_delivered')
        expect(team.journal(member).some((line) => line.reason === 'blocking_metrics')).toBe(false)
      } finally {
        await sync.dispose()
      }
    })
  }

  it('a delivered agenda nudge that gets no report is followed by a still-stuck recovery nudge', async () => {
    const { team, sync, clock } = setup('team-still-stuck', [{ name: 'bob', providerId: 'codex' }], [pendingTask('bob', 'Recover ignored delivered sync')])
    try {
      seedShadowReady(team, 'bob')
      taskChanged(sync, team)
      await clock.runQueue()
      const fingerprint = (await sync.getStatus({ teamName: team.name, memberName: 'bob' })).agenda.fingerprint
      expect(team.nudges('bob')).toHaveLength(1)
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'delivered', deliveredMessageId: team.nudges('bob')[0].messageId })])

      // Ten minutes pass without a report.
      clock.advance(10 * MINUTE)
      seedStaleAgenda(team, 'bob', fingerprint, clock.now)
      taskChanged(sync, team)
      await clock.runQueue()
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(2)
      expect(nudges[1].messageId).toContain('agenda-sync-still-stuck')
      expect(nudges[1].text).toContain('member_work_sync_report')
      expect(team.outboxItems('bob')).toEqual(expect.arrayContaining([expect.objectContaining({ status: 'delivered', deliveredMessageId: nudges[1].messageId })]))
    } finally {
      await sync.dispose()
    }
  })

  for (const [who, member] of [
    ['an OpenCode member', { name: 'bob', providerId: 'opencode' }],
    ['a lead', { name: 'team-lead', providerId: 'codex', agentType: 'team-lead' }],
  ] as const) {
    it(`${who} is nudged even when mature team metrics are noisy`, async () => {
      const name = member.name
      const { team, sync, clock } = setup('team-noisy-targeted', [member], [pendingTask(name, 'Nudge despite noisy global metrics')])
      try {
        seedMatureNoisy(team, name, ['would_nudge', 'fingerprint_changed'], [name], clock.now)
        taskChanged(sync, team)
        await clock.runQueue()
        expect(sync.getQueueDiagnostics().reconciled).toBe(1)
        const nudges = team.nudges(name)
        expect(nudges).toHaveLength(1)
        expect(nudges[0].text).toContain('11111111')
        const readiness = (await sync.getMetrics({ teamName: team.name })).phase2Readiness
        expect(readiness.state).toBe('blocked')
        expect(readiness.reasons).toEqual(expect.arrayContaining(['would_nudge_rate_high', 'fingerprint_churn_high']))
        expect(team.events(name)).toContain('nudge_delivered')
        expect(team.journal(name).some((line) => line.reason === 'blocking_metrics')).toBe(false)
      } finally {
        await sync.dispose()
      }
    })
  }

  it('an OpenCode nudge delivered under noisy metrics is not sent again once metrics are ready', async () => {
    const { team, sync, clock } = setup('team-opencode-idempotent', [{ name: 'bob', providerId: 'opencode' }], [pendingTask('bob', 'Keep OpenCode nudge idempotent after metrics ready')])
    try {
      seedMatureNoisy(team, 'bob', ['would_nudge', 'fingerprint_changed'], ['bob'], clock.now)
      taskChanged(sync, team)
      await clock.runQueue()
      expect(team.nudges('bob')).toHaveLength(1)
      expect((await sync.getMetrics({ teamName: team.name })).phase2Readiness.state).toBe('blocked')

      seedShadowReady(team, 'bob')
      taskChanged(sync, team)
      await clock.runQueue()
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(1)
      expect(nudges[0].text).toContain('11111111')
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'delivered', deliveredMessageId: nudges[0].messageId })])
    } finally {
      await sync.dispose()
    }
  })

  it('a native member is nudged once although its own agenda telemetry keeps readiness noisy, and a storm of reconciles adds nothing', async () => {
    const { team, sync, clock } = setup('team-native-self-noisy', [{ name: 'bob', providerId: 'codex' }], [pendingTask('bob', 'Ship sync despite self-noisy readiness')])
    try {
      seedMatureNoisy(team, 'bob', ['would_nudge', 'fingerprint_changed'], ['bob'], clock.now)
      const blocked = (await sync.getMetrics({ teamName: team.name })).phase2Readiness
      expect(blocked.state).toBe('blocked')
      expect(blocked.reasons).toEqual(expect.arrayContaining(['would_nudge_rate_high', 'fingerprint_churn_high']))
      taskChanged(sync, team)
      await clock.runQueue()
      expect(sync.getQueueDiagnostics().reconciled).toBe(1)
      expect(team.nudges('bob')).toHaveLength(1)
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'delivered' })])

      const before = (await sync.getMetrics({ teamName: team.name })).wouldNudgeCount
      for (let i = 0; i < 12; i++) {
        const reconciled = sync.getQueueDiagnostics().reconciled
        taskChanged(sync, team)
        await clock.runQueue()
        expect(sync.getQueueDiagnostics().reconciled).toBeGreaterThanOrEqual(reconciled + 1)
      }
      const storm = await sync.getMetrics({ teamName: team.name })
      expect(storm.wouldNudgeCount).toBeGreaterThan(before)
      expect(storm.phase2Readiness.state).toBe('blocked')
      expect(storm.phase2Readiness.reasons).toEqual(expect.arrayContaining(['would_nudge_rate_high', 'fingerprint_churn_high']))
      expect(team.nudges('bob')).toHaveLength(1)
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'delivered' })])
      expect(team.events('bob')).toContain('nudge_delivered')
      expect(team.journal('bob').some((line) => line.reason === 'blocking_metrics')).toBe(false)
    } finally {
      await sync.dispose()
    }
  })

  it('a peer with a high report-rejection rate keeps the planner silent, and the nudge goes out once metrics clear', async () => {
    const { team, sync, clock } = setup('team-report-rejection-planner', [
      { name: 'alice', providerId: 'codex' },
      { name: 'bob', providerId: 'codex' },
    ], [pendingTask('bob', 'Wait until safety metrics recover')])
    try {
      seedMatureNoisy(team, 'alice', ['would_nudge', 'fingerprint_changed', 'report_rejected'], ['alice', 'bob'], clock.now)
      taskChanged(sync, team)
      await clock.runQueue()
      expect(sync.getQueueDiagnostics().reconciled).toBe(1)
      const metrics = await sync.getMetrics({ teamName: team.name })
      expect(metrics.phase2Readiness.state).toBe('blocked')
      expect(metrics.phase2Readiness.reasons).toEqual(expect.arrayContaining(['would_nudge_rate_high', 'fingerprint_churn_high', 'report_rejection_rate_high']))
      expect(metrics.recentEvents).toEqual(expect.arrayContaining([expect.objectContaining({ memberName: 'alice', kind: 'report_rejected' })]))
      expect(team.inbox('bob')).toEqual([])
      expect(team.outbox('bob')).toEqual({})
      const skipped = team.journal('bob').find((line) => line.source === 'nudge_planner' && line.reason === 'blocking_metrics')
      expect(skipped).toMatchObject({
        event: 'nudge_skipped',
        diagnostics: expect.arrayContaining(['phase2_readiness:would_nudge_rate_high', 'phase2_readiness:fingerprint_churn_high', 'phase2_readiness:report_rejection_rate_high']),
        metadata: expect.objectContaining({
          phase2ReadinessState: 'blocked',
          phase2ReadinessReasons: expect.stringContaining('report_rejection_rate_high'),
          reportRejectionRate: 1,
          maxReportRejectionRate: 0.2,
        }),
      })

      seedShadowReady(team, 'bob')
      taskChanged(sync, team)
      await clock.runQueue()
      expect(sync.getQueueDiagnostics().reconciled).toBeGreaterThanOrEqual(2)
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(1)
      expect(nudges[0].text).toContain('11111111')
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'delivered' })])
    } finally {
      await sync.dispose()
    }
  })
})

