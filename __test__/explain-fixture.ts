import path from 'node:path'
import { expect } from 'vitest'

import { MemberWorkSync } from '../index.js'
import { copyExampleRoot, until, writeJson } from './helpers'

/** The fixed clock of the explain fixture. */
export const NOW = Date.parse('2026-11-22T10:00:00.000Z')

/** Two hours of calm shadow history for five members: readiness becomes shadow_ready. */
function writeShadowHistory(root: string) {
  const members: Record<string, unknown> = {}
  for (let i = 0; i < 5; i++) {
    members[`m${i}`] = { memberName: `m${i}`, state: 'caught_up', agendaFingerprint: 'agenda:v1:x', actionableCount: 0, evaluatedAt: '2026-11-22T09:00:00.000Z' }
  }
  const recentEvents = Array.from({ length: 30 }, (_, i) => ({
    id: `h${i}`,
    teamName: 'forge',
    memberName: `m${i % 5}`,
    kind: 'status_evaluated',
    state: 'caught_up',
    agendaFingerprint: 'agenda:v1:x',
    recordedAt: new Date(NOW - 2 * 3_600_000 + i * 240_000).toISOString(),
    actionableCount: 0,
  }))
  writeJson(path.join(root, 'teams/forge/.member-work-sync/indexes/metrics.json'), { schemaVersion: 2, members, recentEvents })
}

/**
 * A copy of the example team where jack got a queued reconcile that planned a
 * nudge, the nudge was dispatched, then a rejected and an accepted report.
 */
export async function exampleWithHistory(): Promise<string> {
  const root = copyExampleRoot()
  writeShadowHistory(root)
  const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW } })
  try {
    sync.noteTeamChange({ type: 'member-spawn', teamName: 'forge', detail: 'jack' })
    await until(() => (sync.getQueueDiagnostics().queued === 1 ? true : undefined))
    sync.setClockForTesting(NOW + 30_000)
    await until(() => (sync.getQueueDiagnostics().queued === 0 && sync.getQueueDiagnostics().running === 0 ? true : undefined))
    expect(await sync.dispatchDueNudges(['forge'])).toMatchObject({ delivered: 1 })
    sync.setClockForTesting(NOW + 60_000)
    const status = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
    const rejected = await sync.report({ teamName: 'forge', memberName: 'jack', state: 'still_working', agendaFingerprint: 'agenda:v1:wrong', reportToken: status.reportToken })
    expect(rejected.accepted).toBe(false)
    const accepted = await sync.report({ teamName: 'forge', memberName: 'jack', state: 'still_working', agendaFingerprint: status.agenda.fingerprint, reportToken: status.reportToken })
    expect(accepted.accepted).toBe(true)
  } finally {
    await sync.dispose()
  }
  return root
}

