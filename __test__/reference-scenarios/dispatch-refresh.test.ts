// The app feature's scenarios about the background refresh around a nudge
// dispatch and about status reads that must come back reportable: expired
// leases, legacy stored shapes, stale caught_up, expired tokens, fallback
// reports and a team that stopped, told against the addon.
// See CLASSIFICATION.md.
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { writeJson } from '../helpers'
import { Clock, HOUR, makeTeam, MINUTE, NOW, open, pendingTask, seedShadowReady, seedYoungNoisy } from './fixture'

const iso = (ms: number) => new Date(ms).toISOString()
const idle = { claimed: 0, delivered: 0, superseded: 0, retryable: 0, terminal: 0 }

function inProgress(subject: string) {
  return { id: 'task-1', displayId: '11111111', subject, status: 'in_progress', owner: 'bob' }
}

describe('app scenarios: refreshes around dispatch and status reads', () => {
  it('a due nudge already in the outbox is delivered by the dispatch, which then refreshes the stale status', async () => {
    const team = makeTeam('team-a', [{ name: 'bob' }], [pendingTask('bob')])
    seedShadowReady(team, 'bob')
    const sync = open(team)
    try {
      const status = await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
      const id = `member-work-sync:${team.name}:bob:${status.agenda.fingerprint}`
      expect(team.outbox('bob')[id]).toMatchObject({ status: 'pending' })
      team.editStatus('bob', (stored) => ({ ...stored, evaluatedAt: iso(NOW - 3 * MINUTE) }))

      expect(await sync.dispatchDueNudges([team.name])).toMatchObject({ claimed: 1, delivered: 1 })
      expect(team.inbox('bob')).toEqual(expect.arrayContaining([expect.objectContaining({ messageId: id })]))
      expect(team.status('bob').evaluatedAt).toBe(iso(NOW))
      // A deletion after the pass can remove the team folder.
      await sync.prepareTeamDeletion(team.name)
    } finally {
      await sync.dispose()
    }
  })

  it('a queued reconcile plans the nudge and the same run dispatches it', async () => {
    const team = makeTeam('team-a', [{ name: 'bob' }], [pendingTask('bob')])
    seedShadowReady(team, 'bob')
    const sync = open(team, { autoStart: true })
    const clock = new Clock(sync)
    try {
      sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-1' })
      await clock.runQueue()
      expect(sync.getQueueDiagnostics().reconciled).toBe(1)
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(1)
      expect(nudges[0].messageId).toMatch(new RegExp(`^member-work-sync:${team.name}:bob:agenda:v1:`))
    } finally {
      await sync.dispose()
    }
  })

  it('a still_working lease that expired is refreshed by the dispatch, whose nudge then goes out', async () => {
    const team = makeTeam('team-a', [{ name: 'bob', providerId: 'codex' }], [inProgress('Wake after lease expiry')])
    seedYoungNoisy(team, 'bob')
    const sync = open(team)
    try {
      const current = await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'pending' })])
      const accepted = await sync.report({ teamName: team.name, memberName: 'bob', state: 'still_working', agendaFingerprint: current.agenda.fingerprint, reportToken: current.reportToken, taskIds: ['task-1'], source: 'test' })
      expect(accepted).toMatchObject({ accepted: true, status: { state: 'still_working', report: { accepted: true } } })
      team.editStatus('bob', (stored) => ({ ...stored, evaluatedAt: iso(NOW - 7 * MINUTE), report: { ...stored.report, reportedAt: iso(NOW - 7 * MINUTE), expiresAt: iso(NOW - 6 * MINUTE) } }))
      seedShadowReady(team, 'bob')
      expect(await sync.dispatchDueNudges([team.name])).toMatchObject({ claimed: 1, delivered: 1, superseded: 0, retryable: 0, terminal: 0 })
      expect(team.inbox('bob')).toHaveLength(1)
    } finally {
      await sync.dispose()
    }
  })

  it('a still_working report stored without a lease (an older shape) is refreshed by the dispatch, whose nudge then goes out', async () => {
    const team = makeTeam('team-a', [{ name: 'bob', providerId: 'codex' }], [inProgress('Wake after missing lease')])
    seedYoungNoisy(team, 'bob')
    const sync = open(team)
    try {
      const current = await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
      const accepted = await sync.report({ teamName: team.name, memberName: 'bob', state: 'still_working', agendaFingerprint: current.agenda.fingerprint, reportToken: current.reportToken, taskIds: ['task-1'], source: 'test' })
      expect(accepted).toMatchObject({ accepted: true, status: { state: 'still_working', report: { accepted: true } } })
      team.editStatus('bob', (stored) => {
        const { expiresAt: _dropped, ...report } = stored.report
        return { ...stored, evaluatedAt: iso(NOW - 7 * MINUTE), report }
      })
      seedShadowReady(team, 'bob')
      expect(await sync.dispatchDueNudges([team.name])).toMatchObject({ claimed: 1, delivered: 1, superseded: 0, retryable: 0, terminal: 0 })
      expect(team.inbox('bob')).toHaveLength(1)
    } finally {
      await sync.dispose()
    }
  })

  it('a stored still_working status over an empty agenda is repaired to caught_up by the dispatch', async () => {
    const team = makeTeam('team-a', [{ name: 'bob', providerId: 'codex' }], [])
    const sync = open(team)
    try {
      const current = await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
      expect(current.state).toBe('caught_up')
      team.editStatus('bob', (stored) => ({
        ...stored,
        state: 'still_working',
        report: { teamName: team.name, memberName: 'bob', state: 'still_working', agendaFingerprint: current.agenda.fingerprint, reportedAt: current.evaluatedAt, expiresAt: iso(NOW + HOUR), accepted: true },
      }))
      expect(await sync.dispatchDueNudges([team.name])).toMatchObject(idle)
      const repaired = team.status('bob')
      expect(repaired.state).toBe('caught_up')
      expect(repaired.diagnostics).toContain('agenda_empty')
      expect(repaired.report).toBeUndefined()
      expect(team.inbox('bob')).toHaveLength(0)
    } finally {
      await sync.dispose()
    }
  })

  it('a stale caught_up status is refreshed by the dispatch when work appeared without a task event, and the new nudge goes out', async () => {
    const team = makeTeam('team-a', [{ name: 'bob', providerId: 'codex' }], [])
    seedShadowReady(team, 'bob')
    const sync = open(team)
    try {
      const current = await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
      expect(current.state).toBe('caught_up')
      team.editStatus('bob', (stored) => ({ ...stored, evaluatedAt: iso(NOW - 7 * MINUTE) }))
      team.writeTasks([pendingTask('bob', 'Wake after missed task event')])
      expect(await sync.dispatchDueNudges([team.name])).toMatchObject({ claimed: 1, delivered: 1, superseded: 0, retryable: 0, terminal: 0 })
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(1)
      expect(nudges[0].text).toContain('11111111')
      expect(team.status('bob')).toMatchObject({ state: 'needs_sync', agenda: { items: [expect.objectContaining({ taskId: 'task-1' })] } })
    } finally {
      await sync.dispose()
    }
  })

  it("a pending fallback report whose token expired since is replayed and accepted, the intent keeping the member's token", async () => {
    const team = makeTeam('team-a', [{ name: 'bob', providerId: 'codex' }], [pendingTask('bob', 'Ship sync after expired fallback report')])
    // A token issued an hour ago: the instance's clock stood there when it issued it.
    let sync = open(team, { clock: { nowMs: NOW - HOUR } })
    const old = await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
    await sync.dispose()
    sync = open(team)
    try {
      const status = await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
      expect(status.reportToken).toBeTruthy()
      expect(status.agenda.fingerprint).toBe(old.agenda.fingerprint)
      const expiredToken = old.reportToken!
      const intentId = 'fallback-intent-1'
      writeJson(path.join(team.storeDir('bob'), 'reports.json'), {
        schemaVersion: 2,
        intents: {
          [intentId]: {
            id: intentId,
            teamName: team.name,
            memberName: 'bob',
            status: 'pending',
            reason: 'control_api_unavailable',
            recordedAt: iso(NOW - MINUTE),
            request: { teamName: team.name, memberName: 'bob', state: 'still_working', agendaFingerprint: status.agenda.fingerprint, reportToken: expiredToken, taskIds: ['task-1'], source: 'mcp' },
          },
        },
      })
      expect(await sync.replayPendingReports([team.name])).toEqual({ processed: 1, accepted: 1, rejected: 0, superseded: 0 })
      expect(await sync.getStatus({ teamName: team.name, memberName: 'bob' })).toMatchObject({
        state: 'still_working',
        report: { accepted: true, state: 'still_working', taskIds: ['task-1'], source: 'mcp' },
      })
      const reports = JSON.parse(require('node:fs').readFileSync(path.join(team.storeDir('bob'), 'reports.json'), 'utf8'))
      expect(Object.values(reports.intents)).toContainEqual(
        expect.objectContaining({ status: 'accepted', resultCode: 'accepted', request: expect.objectContaining({ reportToken: expiredToken }) }),
      )
    } finally {
      await sync.dispose()
    }
  })

  it('the first status read of a member without a stored status reconciles it and hands out a token that reports', async () => {
    const team = makeTeam('team-a', [{ name: 'bob', providerId: 'codex' }], [pendingTask('bob', 'Wake from first status call')])
    const sync = open(team)
    try {
      const status = await sync.getStatus({ teamName: team.name, memberName: 'bob' })
      expect(status).toMatchObject({ state: 'needs_sync', shadow: { reconciledBy: 'request' } })
      expect(status.reportToken).toBeTruthy()
      const report = await sync.report({ teamName: team.name, memberName: 'bob', state: 'still_working', agendaFingerprint: status.agenda.fingerprint, reportToken: status.reportToken, taskIds: ['task-1'], source: 'test' })
      expect(report).toMatchObject({ accepted: true, status: { state: 'still_working', report: { accepted: true } } })
    } finally {
      await sync.dispose()
    }
  })

  it('a stored status whose token expired is refreshed before it is returned, and the new token reports', async () => {
    const team = makeTeam('team-a', [{ name: 'bob', providerId: 'codex' }], [pendingTask('bob', 'Wake with expired token')])
    const sync = open(team)
    try {
      await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
      const expired = 'wrs:v1.expired-token-for-regression'
      team.editStatus('bob', (stored) => ({ ...stored, reportToken: expired, reportTokenExpiresAt: iso(NOW - MINUTE) }))
      const refreshed = await sync.getStatus({ teamName: team.name, memberName: 'bob' })
      expect(refreshed.reportToken).toBeTruthy()
      expect(refreshed.reportToken).not.toBe(expired)
      expect(Date.parse(refreshed.reportTokenExpiresAt ?? '')).toBeGreaterThan(NOW)
      const report = await sync.report({ teamName: team.name, memberName: 'bob', state: 'still_working', agendaFingerprint: refreshed.agenda.fingerprint, reportToken: refreshed.reportToken, taskIds: ['task-1'], source: 'test' })
      expect(report).toMatchObject({ accepted: true, status: { state: 'still_working', report: { accepted: true } } })
    } finally {
      await sync.dispose()
    }
  })

  it('a stale needs_sync status read after the whole team stopped comes back inactive', async () => {
    const team = makeTeam('team-a', [{ name: 'bob', providerId: 'codex' }], [pendingTask('bob', 'Finish work after sleep')])
    const sync = open(team)
    try {
      const current = await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
      expect(current.state).toBe('needs_sync')
      team.editStatus('bob', (stored) => ({ ...stored, evaluatedAt: iso(NOW - 3 * MINUTE) }))
      sync.setTeamRuntimeState(team.name, { active: false })
      const status = await sync.getStatus({ teamName: team.name, memberName: 'bob' })
      expect(status).toMatchObject({ state: 'inactive', shadow: { reconciledBy: 'request', triggerReasons: ['manual_refresh'] } })
      expect(status.diagnostics).toContain('team_runtime_inactive')
    } finally {
      await sync.dispose()
    }
  })
})
