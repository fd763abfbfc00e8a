import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { MemberWorkSync } from '../index.js'
import { copyExampleRoot, until } from './helpers'

const NOW = Date.parse('2026-11-22T10:00:00.000Z')

describe('facade surface', () => {
  it('Promise<void> methods resolve undefined, not null', async () => {
    const sync = new MemberWorkSync({ claudeRoot: copyExampleRoot(), autoStart: false })
    const calls: [string, () => Promise<void>][] = [
      ['enqueueStartupScan', () => sync.enqueueStartupScan(['forge'])],
      ['prepareTeamDeletion', () => sync.prepareTeamDeletion('forge')],
      ['prepareTeamDeletion with an id', () => sync.prepareTeamDeletion('forge', 'deletion-1')],
      ['dispose', () => sync.dispose()],
      ['dispose again', () => sync.dispose()],
    ]
    for (const [name, call] of calls) {
      const resolved = await call()
      expect(resolved, name).toBeUndefined()
    }
  })

  it('prepareTeamDeletion refuses a deletionIdentityId that is not a string', async () => {
    const sync = new MemberWorkSync({ claudeRoot: copyExampleRoot(), autoStart: false })
    try {
      await expect(sync.prepareTeamDeletion('forge', 42 as unknown as string)).rejects.toMatchObject({
        code: 'MWS_INVALID_ARGUMENT',
      })
      await expect(sync.prepareTeamDeletion('forge', null)).resolves.toBeUndefined()
    } finally {
      await sync.dispose()
    }
  })

  it('controlUrl must be a plain string', () => {
    for (const controlUrl of [42, 'http://x/"y', 'http://x/\ny', 'x'.repeat(2049)]) {
      expect(
        () => new MemberWorkSync({ claudeRoot: copyExampleRoot(), autoStart: false, controlUrl: controlUrl as string }),
        String(controlUrl).slice(0, 20),
      ).toThrow(expect.objectContaining({ code: 'MWS_INVALID_ARGUMENT' }))
    }
  })

  it('readiness reasons use the reference names', async () => {
    const sync = new MemberWorkSync({ claudeRoot: copyExampleRoot(), autoStart: false })
    try {
      const metrics = await sync.getMetrics({ teamName: 'forge' })
      expect(metrics.phase2Readiness.reasons).toEqual([
        'insufficient_members',
        'insufficient_status_events',
        'insufficient_observation_window',
      ])
    } finally {
      await sync.dispose()
    }
  })
})

describe('scheduleProofMissingRecovery', () => {
  it('schedules a proof_missing_recovery reconcile, and refuses unusable requests', async () => {
    const root = copyExampleRoot()
    const sync = new MemberWorkSync({ claudeRoot: root, autoStart: false, clock: { nowMs: NOW } })
    try {
      const scheduled = await sync.scheduleProofMissingRecovery({
        teamName: 'forge',
        memberName: 'jack',
        originalMessageId: 'msg-1',
        taskRefs: [{ taskId: ' 2 ' }, { taskId: '1', displayId: '#1' }, { taskId: '2' }],
      })
      expect(scheduled).toEqual({ scheduled: true, reason: 'scheduled', intentKey: 'proof-missing:msg-1' })
      const queued = await until(() => {
        const d = sync.getQueueDiagnostics()
        return d.queued > 0 ? d : undefined
      })
      expect(queued.queuedItems[0]).toMatchObject({ memberName: 'jack', triggerReasons: ['proof_missing_recovery'] })
      expect(queued.nextRunAt).toBe('2026-11-22T10:00:05.000Z')
      const journal = fs.readFileSync(path.join(root, 'teams/forge/members/jack/.member-work-sync/journal.jsonl'), 'utf8')
      const audit = journal
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
        .find((event) => event.event === 'proof_missing_recovery_scheduled')
      expect(audit.taskRefs).toEqual([{ taskId: '1', displayId: '#1' }, { taskId: '2' }])

      const invalid = [
        { teamName: 'forge', memberName: ' ', originalMessageId: 'msg-1', taskRefs: [{ taskId: '1' }] },
        { teamName: 'forge', memberName: 'jack', originalMessageId: '', taskRefs: [{ taskId: '1' }] },
        { teamName: 'forge', memberName: 'jack', originalMessageId: 'msg-2' },
        { teamName: 'forge', memberName: 'jack', originalMessageId: 'msg-2', taskRefs: [{ taskId: '  ' }] },
      ]
      for (const request of invalid) {
        expect(await sync.scheduleProofMissingRecovery(request), JSON.stringify(request)).toEqual({
          scheduled: false,
          reason: 'invalid',
        })
      }
      for (const bad of [
        { teamName: 'forge', memberName: 'jack' },
        { teamName: 'forge', memberName: 'jack', originalMessageId: 'm', taskRefs: 'x' },
        { teamName: 'forge', memberName: 'jack', originalMessageId: 'm', taskRefs: [{ taskId: 1 }] },
        { teamName: 'a/b', memberName: 'jack', originalMessageId: 'm', taskRefs: [{ taskId: '1' }] },
      ]) {
        await expect(sync.scheduleProofMissingRecovery(bad as never), JSON.stringify(bad)).rejects.toMatchObject({
          code: 'MWS_INVALID_ARGUMENT',
        })
      }
    } finally {
      await sync.dispose()
    }
  })
})
