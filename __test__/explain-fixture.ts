import { expect } from 'vitest'

import { MemberWorkSync } from '../index.js'
import { copyExampleRoot, until, writeShadowHistory } from './helpers'

/** The fixed clock of the explain fixture. */
export const NOW = Date.parse('2026-11-22T10:00:00.000Z')

/**
 * A copy of the example team where jack got a queued reconcile that planned a
 * nudge and (as a queued run does) dispatched it, then a rejected and an
 * accepted report.
 */
export async function exampleWithHistory(): Promise<string> {
  const root = copyExampleRoot()
  writeShadowHistory(root, NOW)
  const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW } })
  try {
    sync.noteTeamChange({ type: 'member-spawn', teamName: 'forge', detail: 'jack' })
    await until(() => (sync.getQueueDiagnostics().queued === 1 ? true : undefined))
    sync.setClockForTesting(NOW + 30_000)
    await until(() => (sync.getQueueDiagnostics().queued === 0 && sync.getQueueDiagnostics().running === 0 ? true : undefined))
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

