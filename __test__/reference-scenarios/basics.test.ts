// The app feature's scenarios about the instance itself, told against the
// addon: deleting and re-creating a team, proof-missing recovery requests,
// a plain due nudge, and the turn-settled hook setup. See CLASSIFICATION.md.
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { MemberWorkSync } from '../../index.js'
import { writeJson } from '../helpers'
import { makeTeam, NOW, open, pendingTask, seedShadowReady } from './fixture'

const SPOOL_ENV = 'AGENT_TEAMS_RUNTIME_TURN_SETTLED_SPOOL_ROOT'

describe('app scenarios: lifecycle and setup', () => {
  it('a deleted team stays fenced until its config.json exists again, then is scanned once', async () => {
    const team = makeTeam('recreated-team', [{ name: 'bob' }], [pendingTask('bob')])
    fs.rmSync(path.join(team.teamDir, 'config.json'))
    const sync = open(team)
    try {
      await sync.prepareTeamDeletion(team.name)
      sync.completeTeamDeletion(team.name)
      sync.noteTeamChange({ type: 'config', teamName: team.name, detail: 'config.json' })
      await new Promise((resolve) => setTimeout(resolve, 50))
      await expect(sync.refreshStatus({ teamName: team.name, memberName: 'bob' })).rejects.toMatchObject({ code: 'MWS_TEAM_QUIESCED' })
      expect(sync.getQueueDiagnostics().queued).toBe(0)

      team.writeConfig([{ name: 'bob' }])
      sync.noteTeamChange({ type: 'config', teamName: team.name, detail: 'config.json' })
      let scans: string[][] = []
      for (let i = 0; i < 100 && scans.length === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20))
        scans = sync.getQueueDiagnostics().queuedItems.filter((item) => item.teamName === team.name).map((item) => item.triggerReasons)
      }
      expect(scans).toEqual([['startup_scan']])
      await expect(sync.refreshStatus({ teamName: team.name, memberName: 'bob' })).resolves.toMatchObject({ state: 'needs_sync' })
    } finally {
      await sync.dispose()
    }
  })

  it('concurrent dispose calls settle together', async () => {
    const team = makeTeam('team-a', [], [])
    const sync = new MemberWorkSync({ claudeRoot: team.root, clock: { nowMs: NOW } })
    const first = sync.dispose()
    const second = sync.dispose()
    await expect(Promise.all([first, second])).resolves.toEqual([undefined, undefined])
  })

  it('queues a proof-missing recovery reconcile and writes nothing to the inbox yet', async () => {
    const team = makeTeam('team-a', [{ name: 'bob' }], [])
    const sync = open(team)
    try {
      const result = await sync.scheduleProofMissingRecovery({
        teamName: team.name,
        memberName: 'bob',
        originalMessageId: 'message-1',
        taskRefs: [{ taskId: 'task-1', displayId: '11111111', teamName: team.name }],
        reason: 'OpenCode proof missing',
      })
      expect(result).toMatchObject({ scheduled: true, reason: 'scheduled', intentKey: 'proof-missing:message-1' })
      const queue = sync.getQueueDiagnostics()
      expect(queue.queued).toBe(1)
      expect(queue.queuedItems).toMatchObject([{ teamName: team.name, memberName: 'bob', triggerReasons: ['proof_missing_recovery'] }])
      expect(team.inbox('bob')).toEqual([])
    } finally {
      await sync.dispose()
    }
  })

  it('joins a recovery request to a recent outbox item of the same intent instead of queueing another', async () => {
    const team = makeTeam('team-a', [{ name: 'bob' }], [])
    const id = 'member-work-sync:team-a:bob:proof-missing:message-1'
    const at = new Date(NOW).toISOString()
    // The item as the app's JSON store writes it (no payload fingerprint).
    writeJson(path.join(team.storeDir('bob'), 'outbox.json'), {
      schemaVersion: 2,
      items: {
        [id]: {
          id,
          teamName: team.name,
          memberName: 'bob',
          agendaFingerprint: 'agenda:v1:test',
          payloadHash: 'payload-hash',
          payload: {
            from: 'system',
            to: 'bob',
            messageKind: 'member_work_sync_nudge',
            source: 'member-work-sync',
            actionMode: 'do',
            workSyncIntent: 'agenda_sync',
            workSyncIntentKey: 'proof-missing:message-1',
            text: 'Recover proof',
            taskRefs: [{ taskId: 'task-1', displayId: '11111111', teamName: team.name }],
          },
          status: 'pending',
          attemptGeneration: 0,
          createdAt: at,
          updatedAt: at,
        },
      },
    })
    const sync = open(team)
    try {
      const result = await sync.scheduleProofMissingRecovery({
        teamName: team.name,
        memberName: 'bob',
        originalMessageId: 'message-1',
        taskRefs: [{ taskId: 'task-1', displayId: '11111111', teamName: team.name }],
      })
      expect(result).toMatchObject({ scheduled: false, reason: 'coalesced_recent', existingOutboxId: id })
      expect(sync.getQueueDiagnostics().queued).toBe(0)
    } finally {
      await sync.dispose()
    }
  })

  it('refuses a proof-missing recovery that names no task', async () => {
    const team = makeTeam('team-a', [{ name: 'bob' }], [])
    const sync = open(team)
    try {
      const result = await sync.scheduleProofMissingRecovery({ teamName: team.name, memberName: 'bob', originalMessageId: 'message-1' })
      expect(result).toMatchObject({ scheduled: false, reason: 'invalid' })
      expect(sync.getQueueDiagnostics().queued).toBe(0)
      expect(team.inbox('bob')).toEqual([])
    } finally {
      await sync.dispose()
    }
  })

  it('a refreshed status plans its nudge in the outbox and a dispatch puts it in the inbox', async () => {
    const team = makeTeam('team-a', [{ name: 'bob' }], [pendingTask('bob')])
    seedShadowReady(team, 'bob')
    const sync = open(team)
    try {
      const status = await sync.refreshStatus({ teamName: team.name, memberName: 'bob' })
      expect(status).toMatchObject({ state: 'needs_sync', shadow: { wouldNudge: true } })
      expect((await sync.getMetrics({ teamName: team.name })).phase2Readiness.state).toBe('shadow_ready')
      const planned = team.outboxItems('bob')
      expect(planned).toHaveLength(1)
      expect(planned[0]).toMatchObject({ status: 'pending', agendaFingerprint: status.agenda.fingerprint })
      expect(planned[0].id).toBe(`member-work-sync:team-a:bob:${status.agenda.fingerprint}`)

      expect(await sync.dispatchDueNudges([team.name])).toMatchObject({ claimed: 1, delivered: 1, superseded: 0, retryable: 0, terminal: 0 })
      expect(team.inbox('bob').map((row) => row.messageId)).toEqual([planned[0].id])
    } finally {
      await sync.dispose()
    }
  })

  it('Claude Stop hook settings carry the managed marker and install the hook script', async () => {
    const team = makeTeam('team-a', [], [])
    const sync = open(team)
    try {
      const settings: any = await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
      const hook = settings.hooks.Stop[0].hooks[0]
      expect(hook.type).toBe('command')
      expect(hook.command).toContain('agent-teams:member-work-sync-turn-settled:v1')
      expect(fs.statSync(path.join(team.spoolDir, 'bin/turn-settled-hook-v1.sh')).isFile()).toBe(true)
    } finally {
      await sync.dispose()
    }
  })

  for (const provider of ['codex', 'opencode'] as const) {
    it(`the ${provider} environment names the spool root and creates its incoming folder`, async () => {
      const team = makeTeam('team-a', [], [])
      const sync = open(team)
      try {
        expect(await sync.buildRuntimeTurnSettledEnvironment({ provider })).toEqual({ [SPOOL_ENV]: team.spoolDir })
        expect(fs.statSync(path.join(team.spoolDir, 'incoming')).isDirectory()).toBe(true)
      } finally {
        await sync.dispose()
      }
    })
  }

  it('an instance that has done nothing else builds the OpenCode environment', async () => {
    const team = makeTeam('team-a', [], [])
    const sync = new MemberWorkSync({ claudeRoot: team.root, autoStart: false })
    try {
      expect(await sync.buildRuntimeTurnSettledEnvironment({ provider: 'opencode' })).toEqual({ [SPOOL_ENV]: team.spoolDir })
      expect(fs.statSync(path.join(team.spoolDir, 'incoming')).isDirectory()).toBe(true)
    } finally {
      await sync.dispose()
    }
  })
})
