import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { MemberWorkSync } from '../index.js'
import { copyExampleRoot, readJson, until, writeShadowHistory } from './helpers'

const NOW = Date.parse('2026-11-22T10:00:00.000Z')

describe('phase 2 nudges', () => {
  it('a queued reconcile plans one nudge and dispatches it at once, later dispatches add nothing, a report stops further nudges', async () => {
    const root = copyExampleRoot()
    writeShadowHistory(root, NOW)
    const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW } })
    const inbox = path.join(root, 'teams/forge/inboxes/jack.json')
    const outbox = path.join(root, 'teams/forge/members/jack/.member-work-sync/outbox.json')
    try {
      expect((await sync.getMetrics({ teamName: 'forge' })).phase2Readiness.state).toBe('shadow_ready')
      sync.noteTeamChange({ type: 'member-spawn', teamName: 'forge', detail: 'jack' })
      await until(() => (sync.getQueueDiagnostics().queued === 1 ? true : undefined))
      sync.setClockForTesting(NOW + 30_000)
      // As in the app, the queued run dispatches the team right after planning.
      const delivered = await until(() => {
        const items = fs.existsSync(outbox) ? (Object.values(readJson(outbox).items) as any[]) : []
        return items.length === 1 && items[0].status === 'delivered' ? items : undefined
      })
      const items = delivered
      const rows = readJson(inbox)
      expect(rows).toHaveLength(1)
      expect(rows[0]).toMatchObject({ from: 'system', to: 'jack', messageKind: 'member_work_sync_nudge', messageId: items[0].id, read: false })
      expect(rows[0].taskRefs.map((r: any) => r.taskId)).toEqual(['1', '2'])

      // A dispatch now only reaches the members without a status yet (the
      // app's background refresh); jack gets nothing more.
      await sync.dispatchDueNudges(['forge'])
      expect(readJson(inbox)).toHaveLength(1)

      const status = await sync.getStatus({ teamName: 'forge', memberName: 'jack' })
      const result = await sync.report({
        teamName: 'forge',
        memberName: 'jack',
        state: 'still_working',
        agendaFingerprint: status.agenda.fingerprint,
        reportToken: status.reportToken,
      })
      expect(result.accepted).toBe(true)
      sync.noteTeamChange({ type: 'member-spawn', teamName: 'forge', detail: 'jack' })
      await until(() => (sync.getQueueDiagnostics().queued === 1 ? true : undefined))
      sync.setClockForTesting(NOW + 90_000)
      await until(() => (sync.getQueueDiagnostics().queued === 0 && sync.getQueueDiagnostics().running === 0 ? true : undefined))
      await sync.dispatchDueNudges(['forge'])
      expect(readJson(inbox)).toHaveLength(1)
      await expect(sync.dispatchDueNudges(['../x'])).rejects.toMatchObject({ code: 'MWS_INVALID_ARGUMENT' })
    } finally {
      await sync.dispose()
    }
  })

  it('a team whose members folder cannot be listed rejects with MWS_IO naming the path, never an idle summary', async () => {
    const root = copyExampleRoot()
    writeShadowHistory(root, NOW)
    const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW } })
    const members = path.join(root, 'teams/forge/members')
    try {
      fs.mkdirSync(members, { recursive: true })
      fs.renameSync(members, `${members}.moved`)
      fs.writeFileSync(members, 'not a folder')
      const error = await sync.dispatchDueNudges(['forge']).then(
        () => undefined,
        (e: any) => e,
      )
      expect(error).toMatchObject({ code: 'MWS_IO' })
      expect(error.message).toContain(members)
    } finally {
      await sync.dispose()
    }
  })
})
