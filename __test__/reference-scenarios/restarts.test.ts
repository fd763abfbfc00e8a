// The app feature's scenarios where a nudge planned by one process is
// finished by the next: a lost outbox index, corrupt metrics, a claim left by
// a crashed process, a row already in the inbox. The app lets its scheduler
// (gated by its dispatch-readiness and lifecycle callbacks) run the pass after
// the restart; here an explicit dispatchDueNudges is that pass, and planning
// without a dispatch (refreshStatus) stands in for the gated first run.
// See CLASSIFICATION.md.
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { createMemberWorkSyncFeature } from 'member-work-sync/electron'

import { readJson, until, writeJson } from '../helpers'
import { makeTeam, MINUTE, NOW, open, pendingTask, seedMatureNoisy, Team } from './fixture'

const iso = (ms: number) => new Date(ms).toISOString()
const indexFile = (team: Team) => path.join(team.teamDir, '.member-work-sync/indexes/outbox-index.json')

/** Plans bob's nudge with a first instance and leaves it pending. */
async function planned(team: Team): Promise<any> {
  const sync = open(team)
  try {
    await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
  } finally {
    await sync.dispose()
  }
  const items = team.outboxItems('bob')
  expect(items).toEqual([expect.objectContaining({ status: 'pending', attemptGeneration: 0 })])
  return items[0]
}

/** Marks bob's item claimed by another (crashed) process at `atMs`, as that process's store would. */
function claimAsCrashedProcess(team: Team, claimedBy: string, atMs: number): any {
  const file = path.join(team.storeDir('bob'), 'outbox.json')
  const outbox = readJson(file)
  const [id] = Object.keys(outbox.items)
  outbox.items[id] = { ...outbox.items[id], status: 'claimed', attemptGeneration: 1, claimedBy, claimedAt: iso(atMs), updatedAt: iso(atMs) }
  writeJson(file, outbox)
  fs.rmSync(indexFile(team), { force: true })
  return outbox.items[id]
}

describe('app scenarios: another process finishes the nudge', () => {
  it('a lost outbox index is rebuilt by the next pass, which holds the nudge under a safety blocker and delivers it once only diagnostic noise is left', async () => {
    const team = makeTeam('team-index-repair', [{ name: 'bob', providerId: 'codex' }], [pendingTask('bob', 'Recover through the persisted scheduled path')])
    seedMatureNoisy(team, 'bob', ['would_nudge', 'fingerprint_changed'])
    await planned(team)
    expect(team.inbox('bob')).toEqual([])
    seedMatureNoisy(team, 'bob', ['would_nudge', 'fingerprint_changed', 'report_rejected'])
    fs.rmSync(indexFile(team), { force: true })

    let sync = open(team, { clock: { nowMs: NOW + MINUTE } })
    try {
      await sync.dispatchDueNudges([team.name])
      const readiness = (await sync.getMetrics({ teamName: team.name })).phase2Readiness
      expect(readiness.state).toBe('blocked')
      expect(readiness.reasons).toEqual(expect.arrayContaining(['would_nudge_rate_high', 'fingerprint_churn_high', 'report_rejection_rate_high']))
      expect(team.inbox('bob')).toEqual([])
      const [held] = team.outboxItems('bob')
      expect(held).toMatchObject({ status: 'failed_retryable', lastError: 'blocking_metrics', nextAttemptAt: expect.any(String) })
      expect(Object.values(readJson(indexFile(team)).items)).toEqual([expect.objectContaining({ status: 'failed_retryable', nextAttemptAt: held.nextAttemptAt })])
      await sync.dispose()

      const later = Date.parse(held.nextAttemptAt) + 1000
      seedMatureNoisy(team, 'bob', ['would_nudge', 'fingerprint_changed'], ['bob'], later)
      // The scheduled pass after the restart, through the Electron entry: the
      // app's lifecycle list (a blank and a repeated name in it) names the
      // teams, each asked about once per pass.
      const passes: string[] = []
      const scheduled = createMemberWorkSyncFeature({
        teamsBasePath: path.join(team.root, 'teams'),
        clock: { nowMs: later },
        tuning: { dispatchIntervalMs: 100 },
        listLifecycleActiveTeamNames: async () => (passes.push('list'), [' ', team.name, team.name]),
        canDispatchNudges: async (teamName) => (passes.push(teamName), true),
      })
      await until(() => (team.nudges('bob').length > 0 ? true : undefined))
      await scheduled.dispose()
      expect(passes[0]).toBe('list')
      expect(passes.join(',')).toMatch(new RegExp(`^(list,${team.name},)*list(,${team.name})?$`))
      sync = open(team, { clock: { nowMs: later } })
      const noisy = (await sync.getMetrics({ teamName: team.name })).phase2Readiness
      expect(noisy.state).toBe('blocked')
      expect(noisy.reasons).toEqual(expect.arrayContaining(['would_nudge_rate_high', 'fingerprint_churn_high']))
      expect(team.nudges('bob')).toHaveLength(1)
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'delivered', deliveredMessageId: expect.any(String) })])
      expect(Object.values(readJson(indexFile(team)).items)).toEqual([expect.objectContaining({ status: 'delivered' })])
      expect(team.journal('bob').some((line) => line.reason === 'blocking_metrics')).toBe(true)
      expect(team.events('bob').filter((event) => event === 'nudge_delivered')).toHaveLength(1)
    } finally {
      await sync.dispose()
    }
  })

  it('corrupt metrics are moved aside and rebuilt, and the persisted OpenCode nudge is still delivered', async () => {
    const team = makeTeam('team-corrupt-metrics', [{ name: 'bob', providerId: 'opencode' }], [pendingTask('bob', 'Recover after telemetry corruption')])
    seedMatureNoisy(team, 'bob', ['would_nudge', 'fingerprint_changed'])
    await planned(team)
    fs.writeFileSync(team.metricsFile(), '{corrupt telemetry')

    // A minute later; three minutes make the stored status stale enough for the pass to refresh it.
    const sync = open(team, { clock: { nowMs: NOW + 3 * MINUTE } })
    try {
      await sync.dispatchDueNudges([team.name])
      expect(fs.readdirSync(path.dirname(team.metricsFile())).some((name) => name.startsWith('metrics.json.invalid.'))).toBe(true)
      const rebuilt = readJson(team.metricsFile())
      expect(rebuilt).toMatchObject({ schemaVersion: 2, members: { bob: { memberName: 'bob', providerId: 'opencode' } } })
      expect(rebuilt.recentEvents.length).toBeGreaterThan(0)
      const readiness = (await sync.getMetrics({ teamName: team.name })).phase2Readiness
      expect(readiness.state).toBe('collecting_shadow_data')
      expect(readiness.reasons).toEqual(expect.arrayContaining(['insufficient_status_events', 'insufficient_observation_window']))
      expect(team.nudges('bob')).toHaveLength(1)
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'delivered', deliveredMessageId: expect.any(String) })])
      expect(team.events('bob')).toContain('nudge_delivered')
      expect(team.journal('bob').some((line) => line.reason === 'blocking_metrics')).toBe(false)
    } finally {
      await sync.dispose()
    }
  })

  it("a claim left by a crashed process is respected while its lease runs, then taken over and delivered once", async () => {
    const team = makeTeam('team-crash-claim', [{ name: 'bob', providerId: 'codex' }], [pendingTask('bob', 'Recover a nudge claimed by a crashed process')])
    seedMatureNoisy(team, 'bob', ['would_nudge', 'fingerprint_changed'])
    await planned(team)
    const crashed = claimAsCrashedProcess(team, 'crashed-process', NOW)

    let sync = open(team, { clock: { nowMs: NOW + MINUTE } })
    try {
      await sync.dispatchDueNudges([team.name])
      expect(team.inbox('bob')).toEqual([])
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'claimed', attemptGeneration: 1, claimedBy: 'crashed-process', claimedAt: crashed.claimedAt })])
      await sync.dispose()

      sync = open(team, { clock: { nowMs: NOW + 5 * MINUTE + MINUTE } })
      await sync.dispatchDueNudges([team.name])
      const readiness = (await sync.getMetrics({ teamName: team.name })).phase2Readiness
      expect(readiness.state).toBe('blocked')
      expect(team.nudges('bob')).toHaveLength(1)
      const [recovered] = team.outboxItems('bob')
      expect(recovered).toMatchObject({ status: 'delivered', attemptGeneration: 2, deliveredMessageId: expect.any(String) })
      expect(recovered.claimedBy).not.toBe('crashed-process')
      expect(team.journal('bob').some((line) => line.reason === 'blocking_metrics')).toBe(false)
      expect(team.events('bob').filter((event) => event === 'nudge_delivered')).toHaveLength(1)
    } finally {
      await sync.dispose()
    }
  })

  it('a row a crashed process already put into the inbox is found, not written again, and its item is finished once', async () => {
    const team = makeTeam('team-crash-after-insert', [{ name: 'bob', providerId: 'opencode' }], [pendingTask('bob', 'Finalize delivery after inbox persistence')])
    seedMatureNoisy(team, 'bob', ['would_nudge', 'fingerprint_changed'])
    await planned(team)
    // The row the crashed process wrote: what a delivery of this very item
    // writes (made on a copy of the root, so the row is the sink's own).
    const copy = fs.mkdtempSync(path.join(path.dirname(team.root), 'mws-ref-copy-'))
    fs.cpSync(team.root, copy, { recursive: true })
    const writer = open(new Team(copy, team.name))
    try {
      await writer.dispatchDueNudges([team.name])
    } finally {
      await writer.dispose()
    }
    const row = readJson(path.join(copy, 'teams', team.name, 'inboxes/bob.json'))
    expect(row).toHaveLength(1)
    const crashed = claimAsCrashedProcess(team, 'crashed-after-inbox-insert', NOW)
    expect(row[0].messageId).toBe(crashed.id)
    writeJson(path.join(team.teamDir, 'inboxes/bob.json'), row)

    // The pass after the restart, through the Electron entry for the app's delivery wake.
    const wakes: unknown[] = []
    const sync = createMemberWorkSyncFeature({
      teamsBasePath: path.join(team.root, 'teams'),
      clock: { nowMs: NOW + 5 * MINUTE + MINUTE },
      autoStart: false,
      nudgeDeliveryWake: { schedule: (input) => void wakes.push(input) },
    })
    try {
      await sync.dispatchDueNudges([team.name])
      expect((await sync.getMetrics({ teamName: team.name })).phase2Readiness.state).toBe('blocked')
      expect(team.nudges('bob')).toHaveLength(1)
      expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'delivered', attemptGeneration: 2, deliveredMessageId: crashed.id })])
      expect(team.journal('bob').some((line) => line.reason === 'blocking_metrics')).toBe(false)
      expect(team.events('bob').filter((event) => event === 'nudge_delivered')).toHaveLength(1)
      // The row was already there: one wake, for an existing row.
      expect(wakes).toEqual([
        { teamName: team.name, memberName: 'bob', messageId: crashed.id, providerId: 'opencode', reason: 'member_work_sync_nudge_existing', delayMs: 500 },
      ])
    } finally {
      await sync.dispose()
    }
  })
})
