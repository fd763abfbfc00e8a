// Scenarios of the app's composed feature (its createMemberWorkSyncFeature
// suite) that need no app callback, told again against the addon's public API
// on a copy of the example team: nudge activation, refreshStatus, and the
// dispatch pass with its background refresh. The rest of that suite, and the
// classification of every scenario, is in reference-scenarios/ (CLASSIFICATION.md).
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { MemberWorkSync } from '../index.js'
import { createMemberWorkSyncFeature } from 'member-work-sync/electron'
import { copyExampleRoot, readJson, writeJson } from './helpers'

const NOW = Date.parse('2026-11-22T10:00:00.000Z')

const storeDir = (root: string, member: string) => path.join(root, `teams/forge/members/${member}/.member-work-sync`)
const journal = (root: string, member: string): any[] =>
  fs
    .readFileSync(path.join(storeDir(root, member), 'journal.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
const outboxItems = (root: string, member: string): any[] => {
  const file = path.join(storeDir(root, member), 'outbox.json')
  return fs.existsSync(file) ? Object.values(readJson(file).items) : []
}
const inboxRows = (root: string, member: string): any[] => {
  const file = path.join(root, `teams/forge/inboxes/${member}.json`)
  return fs.existsSync(file) ? readJson(file) : []
}

/** Two hours of would-nudge samples from five members: far above the would-nudge bound. */
function writeNoisyHistory(root: string): void {
  const members: Record<string, unknown> = {}
  for (let i = 0; i < 5; i++) {
    members[`m${i}`] = { memberName: `m${i}`, state: 'needs_sync', agendaFingerprint: `agenda:v1:m${i}`, actionableCount: 1, evaluatedAt: '2026-11-22T09:58:00.000Z' }
  }
  const recentEvents = Array.from({ length: 60 }, (_, i) => ({
    id: `n${i}`,
    teamName: 'forge',
    memberName: `m${i % 5}`,
    kind: i % 2 === 0 ? 'status_evaluated' : 'would_nudge',
    state: 'needs_sync',
    agendaFingerprint: `agenda:v1:m${i % 5}`,
    recordedAt: new Date(NOW - 2 * 3_600_000 + i * 120_000).toISOString(),
    actionableCount: 1,
  }))
  writeJson(path.join(root, 'teams/forge/.member-work-sync/indexes/metrics.json'), { schemaVersion: 2, members, recentEvents })
}

describe('the app feature scenarios, on the addon', () => {
  it('delivers a Codex inbox-watch nudge while shadow data is still collecting', async () => {
    const root = copyExampleRoot()
    // Through the Electron entry, for the app's delivery wake.
    const wakes: unknown[] = []
    const sync = createMemberWorkSyncFeature({
      teamsBasePath: path.join(root, 'teams'),
      clock: { nowMs: NOW },
      autoStart: false,
      nudgeDeliveryWake: { schedule: (input) => void wakes.push(input) },
    })
    try {
      expect((await sync.getMetrics({ teamName: 'forge' })).phase2Readiness.state).toBe('collecting_shadow_data')
      const status = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
      expect(status).toMatchObject({ state: 'needs_sync', providerId: 'codex' })
      const planner = journal(root, 'jack').filter((line) => line.source === 'nudge_planner')
      expect(planner.map((line) => [line.event, line.reason])).toEqual([['nudge_planned', 'created']])
      expect(outboxItems(root, 'jack').map((item) => item.status)).toEqual(['pending'])

      await sync.dispatchDueNudges(['forge'])
      const rows = inboxRows(root, 'jack')
      expect(rows.map((row) => row.messageKind)).toEqual(['member_work_sync_nudge'])
      expect(rows[0].text).toContain('mcp__agent-teams__member_work_sync_report')
      expect(outboxItems(root, 'jack')).toEqual([expect.objectContaining({ status: 'delivered', deliveredMessageId: rows[0].messageId })])
      expect(journal(root, 'jack').map((line) => line.event)).toContain('nudge_delivered')
      expect(journal(root, 'jack').some((line) => line.reason === 'phase2_not_ready')).toBe(false)
      expect(wakes.filter((wake: any) => wake.memberName === 'jack')).toEqual([
        { teamName: 'forge', memberName: 'jack', messageId: rows[0].messageId, providerId: 'codex', reason: 'member_work_sync_nudge_inserted', delayMs: 500 },
      ])
    } finally {
      await sync.dispose()
    }
  })

  it('delivers native inbox-watch nudges even when the team-wide would-nudge rate is noisy', async () => {
    const root = copyExampleRoot()
    writeNoisyHistory(root)
    const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW }, autoStart: false })
    try {
      const readiness = (await sync.getMetrics({ teamName: 'forge' })).phase2Readiness
      expect(readiness.state).toBe('blocked')
      expect(readiness.reasons).toContain('would_nudge_rate_high')
      expect(readiness.reasons).not.toContain('report_rejection_rate_high')
      for (const member of ['jack', 'jill']) {
        const status = await sync.refreshStatus({ teamName: 'forge', memberName: member })
        expect(status.state).toBe('needs_sync')
        const planner = journal(root, member).filter((line) => line.source === 'nudge_planner')
        expect(planner.map((line) => line.event)).toEqual(['nudge_planned'])
      }
      await sync.dispatchDueNudges(['forge'])
      expect(inboxRows(root, 'jack')).toHaveLength(1)
      expect(inboxRows(root, 'jill')).toHaveLength(1)
    } finally {
      await sync.dispose()
    }
  })

  it('refreshStatus reconciles by request and records no trigger reasons', async () => {
    const root = copyExampleRoot()
    const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW }, autoStart: false })
    try {
      const status = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
      expect(status.shadow?.reconciledBy).toBe('request')
      expect(status.shadow?.triggerReasons).toBeUndefined()
      const started = journal(root, 'jack').find((line) => line.event === 'reconcile_started')
      expect(started).toBeDefined()
      expect(started.triggerReasons).toBeUndefined()
    } finally {
      await sync.dispose()
    }
  })

  it('materializes a missing active-member status during nudge dispatch, and refreshes a stale one', async () => {
    const root = copyExampleRoot()
    const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW }, autoStart: false })
    try {
      expect(fs.existsSync(path.join(storeDir(root, 'kim'), 'status.json'))).toBe(false)
      await sync.dispatchDueNudges(['forge'])
      const kim = readJson(path.join(storeDir(root, 'kim'), 'status.json')).status
      expect(kim.shadow).toMatchObject({ reconciledBy: 'queue', triggerReasons: ['startup_scan'] })
      expect(kim.evaluatedAt).toBe('2026-11-22T10:00:00.000Z')
      expect(kim.state).toBe('needs_sync')

      // Three minutes later a needs_sync status is stale: the next pass refreshes it.
      sync.setClockForTesting(NOW + 3 * 60_000)
      await sync.dispatchDueNudges(['forge'])
      const refreshed = readJson(path.join(storeDir(root, 'kim'), 'status.json')).status
      expect(refreshed.shadow).toMatchObject({ reconciledBy: 'queue', triggerReasons: ['manual_refresh'] })
      expect(refreshed.evaluatedAt).toBe('2026-11-22T10:03:00.000Z')
    } finally {
      await sync.dispose()
    }
  })
})
