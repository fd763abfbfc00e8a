// The app feature's scenarios where a runtime's settled turn (a spool file
// written by its Stop hook or the OpenCode bridge) drives a reconcile and a
// nudge, told against the addon. See CLASSIFICATION.md.
import { describe, expect, it } from 'vitest'

import { Clock, makeTeam, open, pendingTask, seedShadowReady } from './fixture'
import type { Team } from './fixture'

const CONTROL_URL = 'http://127.0.0.1:43123'

function opencodeTurn(team: Team, outcome: string, extra: Record<string, unknown>) {
  return {
    schemaVersion: 1,
    provider: 'opencode',
    source: 'agent-teams-orchestrator-opencode',
    eventName: 'runtime_turn_settled',
    hookEventName: 'Stop',
    sessionId: 'ses-opencode-1',
    laneId: 'secondary:opencode:bob',
    memberName: 'bob',
    teamName: team.name,
    cwd: team.root,
    outcome,
    ...extra,
  }
}

// Spool file names: the app's drain files any `<name>.<provider>.json`; the
// addon accepts only the names the app's emitters write
// (`<stamp>-<pid>-<suffix>.<provider>.json`, the OpenCode emitter's
// `<stamp>-.turn-settled.<pid>-<uuid>.opencode.json`), so these payloads
// carry a pid in their names where the app's scenarios use free names. The
// stamps sit at the fixed clock: processed events older than a day are pruned.

/** A team whose one member bob (on `provider`) owns one pending task, with calm shadow history. */
function readyTeam(name: string, provider: 'codex' | 'opencode', subject: string) {
  const team = makeTeam(name, [{ name: 'bob', providerId: provider }], [pendingTask('bob', subject)])
  seedShadowReady(team, 'bob')
  const sync = open(team, { autoStart: true, controlUrl: CONTROL_URL })
  return { team, sync, clock: new Clock(sync) }
}

describe('app scenarios: settled turns', () => {
  it('a drained OpenCode turn is reconciled through the queue and its nudge delivered', async () => {
    const { team, sync, clock } = readyTeam('team-a', 'opencode', 'Ship sync after settled turn')
    try {
      await sync.buildRuntimeTurnSettledEnvironment({ provider: 'opencode' })
      const file = '20261122T095900000Z-4242-test.opencode.json'
      team.spoolEvent(file, opencodeTurn(team, 'success', { runtimePromptMessageId: 'msg_123', recordedAt: '2026-11-22T09:59:00.000Z' }))
      expect(await sync.drainRuntimeTurnSettledEvents()).toMatchObject({ invalid: 0, unresolved: 0 })
      await clock.runQueue()

      expect(sync.getQueueDiagnostics().reconciled).toBe(1)
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(1)
      expect(nudges[0].text).toContain('11111111')
      expect(await sync.getStatus({ teamName: team.name, memberName: 'bob' })).toMatchObject({
        state: 'needs_sync',
        providerId: 'opencode',
        shadow: { wouldNudge: true, triggerReasons: ['turn_settled'] },
      })
      expect(team.processedMeta(file)).toMatchObject({ outcome: 'enqueued', teamName: team.name, memberName: 'bob' })
    } finally {
      await sync.dispose()
    }
  })

  it('a Codex turn that only read its status after a delivered nudge gets a status-only recovery nudge', async () => {
    const { team, sync, clock } = readyTeam('team-codex-status-only-recovery', 'codex', 'Ship sync after status-only turn')
    try {
      sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-1' })
      await clock.runQueue()
      let nudges = team.nudges('bob')
      expect(nudges).toHaveLength(1)
      expect(nudges[0].text).toContain('11111111')
      expect(nudges[0].text).toContain(`controlUrl "${CONTROL_URL}"`)
      const delivered = team.outboxItems('bob')
      expect(delivered.map((item) => item.status)).toEqual(['delivered'])
      expect(delivered[0].payload.workSyncIntentKey).toBeUndefined()

      const at = new Date(clock.now).toISOString()
      sync.noteTeamChange({
        type: 'tool-activity',
        teamName: team.name,
        detail: JSON.stringify({ action: 'start', activity: { memberName: 'bob', toolUseId: 'status-tool-1', toolName: 'member_work_sync_status', startedAt: at } }),
      })
      sync.noteTeamChange({
        type: 'tool-activity',
        teamName: team.name,
        detail: JSON.stringify({ action: 'finish', memberName: 'bob', toolUseId: 'status-tool-1', finishedAt: at }),
      })
      await sync.buildRuntimeTurnSettledEnvironment({ provider: 'codex' })
      team.spoolEvent('20261122T095901000Z-4242-status-only.codex.json', {
        schemaVersion: 1,
        provider: 'codex',
        source: 'agent-teams-orchestrator-codex-native',
        eventName: 'runtime_turn_settled',
        hookEventName: 'Stop',
        sessionId: 'ses-codex-1',
        memberName: 'bob',
        teamName: team.name,
        cwd: team.root,
        outcome: 'success',
        recordedAt: '2026-11-22T09:59:01.000Z',
      })
      expect(await sync.drainRuntimeTurnSettledEvents()).toMatchObject({ invalid: 0, unresolved: 0 })
      await clock.runQueue()

      nudges = team.nudges('bob')
      expect(nudges).toHaveLength(2)
      expect(nudges[1].messageId).toContain('status-only')
      // The app words the status-only nudge its own way; the fact is its intent (status-only).
        expect(nudges[1].text).not.toBe(nudges[0].text)
      expect(team.outboxItems('bob')).toEqual(
        expect.arrayContaining([expect.objectContaining({ status: 'delivered', payload: expect.objectContaining({ workSyncIntentKey: expect.stringContaining('status-only:') }) })]),
      )
    } finally {
      await sync.dispose()
    }
  })

  for (const outcome of ['idle_without_assistant_activity', 'timeout']) {
    it(`an OpenCode turn settled with a prompt-owned ${outcome} after a delivered nudge gets a recovery nudge`, async () => {
      const { team, sync, clock } = readyTeam(`team-opencode-${outcome.replace(/_/g, '-')}-recovery`, 'opencode', `Ship sync after OpenCode ${outcome}`)
      try {
        sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-1' })
        await clock.runQueue()
        expect(team.nudges('bob')).toHaveLength(1)
        expect(team.nudges('bob')[0].text).toContain('11111111')
        expect(team.outboxItems('bob')).toEqual([expect.objectContaining({ status: 'delivered', payload: expect.objectContaining({ workSyncIntent: 'agenda_sync' }) })])

        await sync.buildRuntimeTurnSettledEnvironment({ provider: 'opencode' })
        const file = `20261122T095901000Z-4242-${outcome}.opencode.json`
        team.spoolEvent(file, opencodeTurn(team, outcome, { runtimePromptMessageId: 'msg_123', recordedAt: '2026-11-22T09:59:01.000Z' }))
        expect(await sync.drainRuntimeTurnSettledEvents()).toMatchObject({ invalid: 0, unresolved: 0, ignored: 0 })
        await clock.runQueue()

        const nudges = team.nudges('bob')
        expect(nudges).toHaveLength(2)
        expect(nudges[1].messageId).toContain('status-only')
        // The app words the status-only nudge its own way; the fact is its intent (status-only).
        expect(nudges[1].text).not.toBe(nudges[0].text)
        const status = await sync.getStatus({ teamName: team.name, memberName: 'bob' })
        expect(status.diagnostics).toContain('runtime_stall:same_agenda_still_needs_sync')
        expect(team.processedMeta(file)).toMatchObject({ outcome: 'enqueued', event: { outcome } })
      } finally {
        await sync.dispose()
      }
    })
  }

  for (const [outcome, reason] of [
    ['idle_without_assistant_activity', 'opencode_non_terminal_outcome:idle_without_assistant_activity'],
    ['success', 'opencode_missing_prompt_identity'],
  ]) {
    it(`an OpenCode ${outcome} turn known only by a turn id is ignored and brings no recovery nudge`, async () => {
      const { team, sync, clock } = readyTeam('team-opencode-turnid-only-ignored', 'opencode', 'Ignore launch-like OpenCode idle events')
      try {
        sync.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-1' })
        await clock.runQueue()
        expect(team.nudges('bob')).toHaveLength(1)

        await sync.buildRuntimeTurnSettledEnvironment({ provider: 'opencode' })
        const file = '20261122T095902000Z-4242-turnid-only.opencode.json'
        team.spoolEvent(file, opencodeTurn(team, outcome, { turnId: 'msg_launch_or_bootstrap', recordedAt: '2026-11-22T09:59:02.000Z' }))
        expect(await sync.drainRuntimeTurnSettledEvents()).toMatchObject({ invalid: 0, unresolved: 0 })
        await clock.runQueue(false)

        expect(team.nudges('bob')).toHaveLength(1)
        expect(team.outboxItems('bob').some((item) => String(item.payload?.workSyncIntentKey ?? '').startsWith('status-only:'))).toBe(false)
        const meta = team.processedMeta(file)
        expect(meta).toMatchObject({ outcome: 'ignored', reason, event: { turnId: 'msg_launch_or_bootstrap' } })
        expect(meta.event).not.toHaveProperty('threadId')
      } finally {
        await sync.dispose()
      }
    })
  }
})
