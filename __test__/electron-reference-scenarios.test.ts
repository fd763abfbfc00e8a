// Versions of our own of the app's createMemberWorkSyncFeature.test.ts and
// registerMemberWorkSyncIpc.test.ts scenarios that exercise the callbacks
// member-work-sync/electron honours, asserting the same observable facts
// (summaries, inbox rows, outbox states, journal events, channels).
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import {
  buildMemberWorkSyncRuntimeTurnSettledEnvironment,
  createMemberWorkSyncFeature,
  registerMemberWorkSyncIpc,
  removeMemberWorkSyncIpc,
  type MemberWorkSyncFeatureDeps,
  type MemberWorkSyncFeatureFacade,
} from 'member-work-sync/electron'
import { readJson, tempDir, until, writeJson, writeShadowHistory } from './helpers'
import { makeTeam, pendingTask, seedYoungNoisy, type TaskSpec } from './reference-scenarios/fixture'

/** A Claude root with one team of one member (`bob`) owning one pending task. */
function oneMemberTeam(teamName: string, provider?: string): string {
  const root = tempDir('mws-electron-ref-')
  writeJson(path.join(root, 'teams', teamName, 'config.json'), {
    name: teamName,
    members: [{ name: 'team-lead', agentType: 'team-lead' }, { name: 'bob', ...(provider ? { providerId: provider } : {}) }],
  })
  writeJson(path.join(root, 'tasks', teamName, 'task-1.json'), {
    id: 'task-1',
    displayId: '11111111',
    subject: 'Ship sync',
    status: 'pending',
    owner: 'bob',
    blocks: [],
    blockedBy: [],
  })
  return root
}

function feature(root: string, deps: Partial<MemberWorkSyncFeatureDeps>): MemberWorkSyncFeatureFacade {
  return createMemberWorkSyncFeature({ teamsBasePath: path.join(root, 'teams'), autoStart: false, ...deps })
}

const inbox = (root: string, team: string, member = 'bob'): any[] => {
  const file = path.join(root, 'teams', team, 'inboxes', `${member}.json`)
  return fs.existsSync(file) ? readJson(file) : []
}
const outboxFile = (root: string, team: string, member = 'bob') =>
  path.join(root, 'teams', team, 'members', member, '.member-work-sync', 'outbox.json')
const outbox = (root: string, team: string, member = 'bob'): any[] =>
  fs.existsSync(outboxFile(root, team, member)) ? Object.values(readJson(outboxFile(root, team, member)).items) : []
const journal = (root: string, team: string, member = 'bob'): string => {
  const file = path.join(root, 'teams', team, 'members', member, '.member-work-sync', 'journal.jsonl')
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : ''
}
/** Makes every retryable outbox item of a member due now, as the app's test forces it. */
function forceRetryableDue(root: string, team: string, member = 'bob') {
  const file = outboxFile(root, team, member)
  const stored = readJson(file)
  for (const item of Object.values(stored.items) as any[]) {
    if (item.status === 'failed_retryable') item.nextAttemptAt = new Date(Date.now() - 1_000).toISOString()
  }
  writeJson(file, stored)
}

const NONE = { claimed: 0, delivered: 0, superseded: 0, retryable: 0, terminal: 0 }

describe('createMemberWorkSyncFeature scenarios (the app’s, our versions)', () => {
  it('does not deliver pending nudges until the team is ready for nudge dispatch', async () => {
    const root = oneMemberTeam('team-a')
    writeShadowHistoryFor(root, 'team-a')
    let ready = false
    const asked: string[] = []
    const f = feature(root, {
      autoStart: true,
      canDispatchNudges: async (teamName) => {
        asked.push(teamName)
        return ready
      },
    })
    try {
      // The lead going offline re-checks every member at once: the queued
      // reconcile plans bob's nudge and asks whether the team may dispatch.
      f.noteTeamChange({ type: 'lead-activity', teamName: 'team-a', detail: 'offline' })
      await until(() => (outbox(root, 'team-a').length === 1 && asked.length > 0 ? true : undefined))
      // Every member was queued at once; each queued reconcile asks the gate
      // before dispatching, so wait for the lead's too, or one still running
      // after \`ready\` flips would deliver bob's nudge before the call below.
      await until(() => {
        const queue = f.getQueueDiagnostics()
        return queue.queued === 0 && queue.running === 0 ? true : undefined
      })
      expect(outbox(root, 'team-a')[0].status).toBe('pending')
      expect(await f.dispatchDueNudges(['team-a'])).toMatchObject(NONE)
      expect(inbox(root, 'team-a')).toEqual([])
      expect(outbox(root, 'team-a')[0].status).toBe('pending')
      ready = true
      expect(await f.dispatchDueNudges(['team-a'])).toMatchObject({ claimed: 1, delivered: 1, superseded: 0, retryable: 0, terminal: 0 })
      expect(inbox(root, 'team-a')).toMatchObject([{ messageId: outbox(root, 'team-a')[0].id }])
    } finally {
      await f.dispose()
    }
  })

  it('checks nudge dispatch readiness sequentially', async () => {
    const root = tempDir('mws-electron-ref-')
    const asked: { team: string; firstReleased: boolean }[] = []
    let released = false
    let releaseFirst!: () => void
    const f = feature(root, {
      canDispatchNudges: async (teamName) => {
        asked.push({ team: teamName, firstReleased: released })
        if (teamName === 'team-a') {
          await new Promise<void>((resolve) => {
            releaseFirst = () => {
              released = true
              resolve()
            }
          })
        }
        return false
      },
    })
    try {
      const dispatch = f.dispatchDueNudges(['team-a', 'team-b'])
      await until(() => (asked.length === 1 ? true : undefined))
      releaseFirst()
      expect(await dispatch).toMatchObject(NONE)
      // team-b was asked only after team-a's answer came.
      expect(asked).toEqual([
        { team: 'team-a', firstReleased: false },
        { team: 'team-b', firstReleased: true },
      ])
    } finally {
      await f.dispose()
    }
  })

  it('keeps nudges retryable while the configured controlUrl is unavailable and delivers after recovery', async () => {
    const root = oneMemberTeam('team-control-url-retry', 'codex')
    let controlUrl: string | null = null
    const f = feature(root, { isTeamActive: async () => true, resolveControlUrl: async () => controlUrl })
    const team = 'team-control-url-retry'
    try {
      writeShadowHistoryFor(root, team)
      await f.dispatchDueNudges([team])
      expect(inbox(root, team)).toHaveLength(0)
      expect(outbox(root, team)).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ status: 'failed_retryable', lastError: expect.stringContaining('member work sync control URL unavailable') }),
        ]),
      )
      controlUrl = 'http://127.0.0.1:43123'
      forceRetryableDue(root, team)
      expect(await f.dispatchDueNudges([team])).toMatchObject({ claimed: 1, delivered: 1, superseded: 0, retryable: 0, terminal: 0 })
      const nudges = inbox(root, team).filter((m) => m.messageKind === 'member_work_sync_nudge')
      expect(nudges).toHaveLength(1)
      expect(nudges[0].text).toContain('11111111')
      expect(nudges[0].text).toContain('controlUrl "http://127.0.0.1:43123"')
      expect(outbox(root, team)).toEqual(expect.arrayContaining([expect.objectContaining({ status: 'delivered' })]))
    } finally {
      await f.dispose()
    }
  })

  it('keeps targeted OpenCode nudges retryable when prompt delivery is busy, and delivers with a wake once it is not', async () => {
    const team = 'team-opencode-busy'
    const root = oneMemberTeam(team, 'opencode')
    writeShadowHistoryFor(root, team)
    let busy = true
    const wakes: unknown[] = []
    const f = feature(root, {
      priorityBusySignals: [
        { isBusy: async () => (busy ? { busy: true, reason: 'opencode_prompt_delivery_busy', retryAfterIso: new Date(Date.now() + 60_000).toISOString() } : { busy: false }) },
      ],
      nudgeDeliveryWake: { schedule: (input) => void wakes.push(input) },
    })
    try {
      const held = await f.dispatchDueNudges([team])
      expect(held.delivered).toBe(0)
      expect(held.retryable).toBeGreaterThan(0)
      expect(inbox(root, team)).toEqual([])
      expect(journal(root, team)).toContain('"reason":"member_busy:opencode_prompt_delivery_busy"')
      busy = false
      forceRetryableDue(root, team)
      expect((await f.dispatchDueNudges([team])).delivered).toBe(1)
      const [row] = inbox(root, team)
      expect(wakes).toEqual([
        { teamName: team, memberName: 'bob', messageId: row.messageId, providerId: 'opencode', reason: 'member_work_sync_nudge_inserted', delayMs: 500 },
      ])
    } finally {
      await f.dispose()
    }
  })

  it('refreshes stale needs_sync into inactive after the whole team stops', async () => {
    const team = 'team-stopped'
    const root = oneMemberTeam(team, 'codex')
    let teamActive = true
    const f = feature(root, { isTeamActive: async () => teamActive, canDispatchNudges: async () => teamActive })
    try {
      expect((await f.refreshStatus({ teamName: team, memberName: 'bob' })).state).toBe('needs_sync')
      const statusFile = path.join(root, 'teams', team, 'members', 'bob', '.member-work-sync', 'status.json')
      const stored = readJson(statusFile)
      stored.status.evaluatedAt = new Date(Date.now() - 3 * 60_000).toISOString()
      writeJson(statusFile, stored)
      teamActive = false
      expect(await f.getStatus({ teamName: team, memberName: 'bob' })).toMatchObject({
        state: 'inactive',
        diagnostics: expect.arrayContaining(['team_runtime_inactive']),
        shadow: { reconciledBy: 'request', triggerReasons: ['manual_refresh'] },
      })
    } finally {
      await f.dispose()
    }
  })

  it('builds the OpenCode bridge environment before the feature exists', async () => {
    const root = tempDir('mws-electron-ref-')
    const env = await buildMemberWorkSyncRuntimeTurnSettledEnvironment({ teamsBasePath: path.join(root, 'teams'), provider: 'opencode' })
    expect(env).toEqual({ AGENT_TEAMS_RUNTIME_TURN_SETTLED_SPOOL_ROOT: expect.stringContaining(root) })
  })
})

/** A promise and its resolver. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  return { promise, open }
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const events = (root: string, team: string) =>
  journal(root, team)
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line))
/** Scheduled passes every 100 ms (the app's are every minute, driven by fake timers in its tests). */
const SCHEDULED = { autoStart: true, tuning: { dispatchIntervalMs: 100 } }

describe('createMemberWorkSyncFeature scenarios with scheduled passes (the app’s, our versions)', () => {
  it('cancels and drains admitted scheduled delivery before purging the team: the deletion waits for the wake, and no wake follows', async () => {
    const team = 'team-scheduled-deletion'
    const root = oneMemberTeam(team, 'codex')
    writeShadowHistoryFor(root, team)
    const order: string[] = []
    const wakeStarted = gate()
    const releaseWake = gate()
    const wakes: unknown[] = []
    const f = feature(root, {
      ...SCHEDULED,
      hostTimeoutMs: 120_000,
      isTeamActive: async () => true,
      canDispatchNudges: async () => true,
      listLifecycleActiveTeamNames: async () => [team],
      nudgeDeliveryWake: {
        schedule: async (input) => {
          wakes.push(input)
          wakeStarted.open()
          await releaseWake.promise
          order.push('wake finished')
        },
      },
    })
    try {
      expect((await f.refreshStatus({ teamName: team, memberName: 'bob' })).state).toBe('needs_sync')
      await wakeStarted.promise
      const deletion = f.prepareTeamDeletion(team).then(() => order.push('deletion settled'))
      await sleep(50)
      expect(order).toEqual([])
      releaseWake.open()
      await deletion
      // The admitted delivery, wake included, finished before the deletion settled.
      expect(order).toEqual(['wake finished', 'deletion settled'])
      expect(outbox(root, team)).toMatchObject([{ status: 'delivered' }])
      f.completeTeamDeletion(team)
      await sleep(300)
      expect(wakes).toHaveLength(1)
      expect(inbox(root, team)).toHaveLength(1)
    } finally {
      releaseWake.open()
      await f.dispose()
    }
  })

  it('isolates a scheduled readiness failure to one team and recovers it on restart', async () => {
    const failing = 'team-readiness-failure'
    const healthy = 'team-readiness-healthy'
    const root = oneMemberTeam(failing, 'codex')
    fs.cpSync(path.join(root, 'teams', failing), path.join(root, 'teams', healthy), { recursive: true })
    writeJson(path.join(root, 'teams', healthy, 'config.json'), { ...readJson(path.join(root, 'teams', failing, 'config.json')), name: healthy })
    fs.cpSync(path.join(root, 'tasks', failing), path.join(root, 'tasks', healthy), { recursive: true })
    writeShadowHistoryFor(root, failing)
    writeShadowHistoryFor(root, healthy)
    let mode: 'hold' | 'fail-first' | 'ready' = 'hold'
    const asked: string[] = []
    let listed = 0
    const { logger, warned } = warnings()
    const open = (scheduled: boolean) =>
      feature(root, {
        ...(scheduled ? { ...SCHEDULED, listLifecycleActiveTeamNames: async () => (listed++, [failing, healthy]) } : {}),
        logger,
        isTeamActive: async () => true,
        canDispatchNudges: async (teamName) => {
          asked.push(teamName)
          if (mode === 'hold') return false
          if (mode === 'fail-first' && teamName === failing) throw new Error('readiness unavailable')
          return true
        },
      })
    let f = open(false)
    for (const team of [failing, healthy]) await f.refreshStatus({ teamName: team, memberName: 'bob' })
    await f.dispose()
    for (const team of [failing, healthy]) expect(outbox(root, team)).toMatchObject([{ status: 'pending' }])

    mode = 'fail-first'
    f = open(true)
    await until(() => (inbox(root, healthy).length === 1 ? true : undefined))
    await until(() => (warned('MWS_LOG_HOST_CALLBACK_FAILED', 'canDispatchNudges') ? true : undefined))
    await f.dispose()
    // The failing team's readiness held only its own nudge back, logged.
    expect(inbox(root, failing)).toEqual([])
    expect(outbox(root, failing)).toMatchObject([{ status: 'pending' }])
    expect(outbox(root, healthy)).toMatchObject([{ status: 'delivered' }])
    // Teams asked one after the other, the failing one first, as listed.
    expect(asked.slice(0, 2)).toEqual([failing, healthy])

    mode = 'ready'
    f = open(true)
    await until(() => (inbox(root, failing).length === 1 ? true : undefined))
    await f.dispose()
    for (const team of [failing, healthy]) {
      expect(inbox(root, team).filter((m) => m.messageKind === 'member_work_sync_nudge')).toHaveLength(1)
      expect(outbox(root, team)).toMatchObject([{ status: 'delivered' }])
      expect(events(root, team).filter((e) => e.event === 'nudge_delivered')).toHaveLength(1)
      expect(journal(root, team)).not.toContain('"reason":"blocking_metrics"')
    }
    // The lifecycle list was asked by the scheduled passes only (at least once per restart).
    expect(listed).toBeGreaterThanOrEqual(2)
  })

  it('drains an in-flight scheduled dispatch during dispose without orphaning the claim', async () => {
    const team = 'team-dispose-in-flight'
    const root = oneMemberTeam(team, 'codex')
    writeShadowHistoryFor(root, team)
    let f = feature(root, { canDispatchNudges: async () => false })
    await f.refreshStatus({ teamName: team, memberName: 'bob' })
    await f.dispose()
    expect(outbox(root, team)).toMatchObject([{ status: 'pending', attemptGeneration: 0 }])

    const busyStarted = gate()
    const release = gate()
    f = feature(root, {
      ...SCHEDULED,
      hostTimeoutMs: 120_000,
      isTeamActive: async () => true,
      canDispatchNudges: async () => true,
      listLifecycleActiveTeamNames: async () => [team],
      extraBusySignals: [
        {
          isBusy: async () => {
            busyStarted.open()
            await release.promise
            return { busy: false }
          },
        },
      ],
    })
    await busyStarted.promise
    expect(outbox(root, team)).toMatchObject([{ status: 'claimed', attemptGeneration: 1, claimedBy: expect.stringContaining(':scheduled') }])
    expect(inbox(root, team)).toEqual([])
    // Dispose does not wait for the busy signal (the app's waits for it to
    // answer): its wait ends at once with the fallback, not busy, and the
    // claimed delivery completes before dispose settles, so no claim is orphaned.
    await f.dispose()
    expect(inbox(root, team).filter((m) => m.messageKind === 'member_work_sync_nudge')).toHaveLength(1)
    expect(outbox(root, team)).toMatchObject([{ status: 'delivered', attemptGeneration: 1, deliveredMessageId: expect.any(String) }])
    release.open()

    f = feature(root, { ...SCHEDULED, canDispatchNudges: async () => true, listLifecycleActiveTeamNames: async () => [team] })
    await sleep(300)
    await f.dispose()
    expect(inbox(root, team).filter((m) => m.messageKind === 'member_work_sync_nudge')).toHaveLength(1)
    expect(outbox(root, team)).toMatchObject([{ status: 'delivered', attemptGeneration: 1 }])
    expect(events(root, team).filter((e) => e.event === 'nudge_delivered')).toHaveLength(1)
  })

  it('cancels timed-out scheduled readiness before it can late-dispatch after dispose', async () => {
    const team = 'team-readiness-timeout-cancel'
    const root = oneMemberTeam(team, 'codex')
    writeShadowHistoryFor(root, team)
    let f = feature(root, { canDispatchNudges: async () => false })
    await f.refreshStatus({ teamName: team, memberName: 'bob' })
    await f.dispose()

    const late = gate()
    const { logger, warned } = warnings()
    f = feature(root, {
      ...SCHEDULED,
      logger,
      hostTimeoutMs: 50,
      listLifecycleActiveTeamNames: async () => [team],
      canDispatchNudges: async () => {
        await late.promise
        return true
      },
    })
    await until(() => (warned('MWS_LOG_HOST_CALLBACK_TIMED_OUT', 'canDispatchNudges') ? true : undefined))
    await f.dispose()
    // The answer comes after dispose: nothing is dispatched late.
    late.open()
    await sleep(100)
    expect(outbox(root, team)).toMatchObject([{ status: 'pending', attemptGeneration: 0 }])
    expect(inbox(root, team)).toEqual([])

    f = feature(root, { canDispatchNudges: async () => true })
    try {
      expect(await f.dispatchDueNudges([team])).toMatchObject({ claimed: 1, delivered: 1, superseded: 0, retryable: 0, terminal: 0 })
      expect(outbox(root, team)).toMatchObject([{ status: 'delivered', attemptGeneration: 1, deliveredMessageId: expect.any(String) }])
      expect(events(root, team).filter((e) => e.event === 'nudge_delivered')).toHaveLength(1)
    } finally {
      await f.dispose()
    }
  })

  it('a claimed dispatch whose busy signal never settles is delivered once after the bounded wait (the app times the pass out and recovers the claim after its lease)', async () => {
    const team = 'team-claimed-timeout-cancel'
    const root = oneMemberTeam(team, 'codex')
    writeShadowHistoryFor(root, team)
    let f = feature(root, { canDispatchNudges: async () => false })
    await f.refreshStatus({ teamName: team, memberName: 'bob' })
    await f.dispose()

    const { logger, warned } = warnings()
    f = feature(root, {
      ...SCHEDULED,
      logger,
      hostTimeoutMs: 50,
      canDispatchNudges: async () => true,
      listLifecycleActiveTeamNames: async () => [team],
      extraBusySignals: [{ isBusy: () => new Promise(() => {}) }],
    })
    await until(() => (outbox(root, team)[0]?.status === 'delivered' ? true : undefined))
    await until(() => (warned('MWS_LOG_HOST_CALLBACK_TIMED_OUT', 'extraBusySignals') ? true : undefined))
    await sleep(300)
    await f.dispose()
    expect(outbox(root, team)).toMatchObject([{ status: 'delivered', attemptGeneration: 1, deliveredMessageId: expect.any(String) }])
    expect(inbox(root, team).filter((m) => m.messageKind === 'member_work_sync_nudge')).toHaveLength(1)
    expect(events(root, team).filter((e) => e.event === 'nudge_delivered')).toHaveLength(1)

    f = feature(root, { canDispatchNudges: async () => true })
    try {
      expect(await f.dispatchDueNudges([team])).toMatchObject({ claimed: 0, delivered: 0 })
    } finally {
      await f.dispose()
    }
  })
})

describe('delivery wakes of queued nudges through the entry (the app’s scenarios whose wake was left to issue 25)', () => {
  /** A team in its own root; the queue runs with a 1 ms quiet window, on the real clock. */
  function queued(name: string, provider: 'opencode' | 'codex', task: TaskSpec) {
    const team = makeTeam(name, [{ name: 'bob', providerId: provider }], [task])
    const wakes: any[] = []
    const f = feature(team.root, { autoStart: true, queueQuietWindowMs: 1, nudgeDeliveryWake: { schedule: (input) => void wakes.push(input) } })
    return { team, f, wakes }
  }

  it('delivers targeted OpenCode nudges during shadow collection and schedules a delivery wake', async () => {
    const { team, f, wakes } = queued('team-opencode-targeted', 'opencode', pendingTask('bob', 'Ship OpenCode targeted nudge'))
    try {
      // Eighteen calm samples six hours apart: collecting, nothing blocking.
      team.writeMetrics(
        { bob: { memberName: 'bob', state: 'caught_up', agendaFingerprint: 'agenda:v1:seed', actionableCount: 0, evaluatedAt: '2026-01-01T00:00:00.000Z' } },
        Array.from({ length: 18 }, (_, i) => ({
          id: `calm-${i}`,
          teamName: team.name,
          memberName: 'bob',
          kind: 'status_evaluated',
          state: 'caught_up',
          agendaFingerprint: `agenda:v1:seed-${i}`,
          recordedAt: new Date(Date.UTC(2026, 0, 1, i * 6)).toISOString(),
          actionableCount: 0,
        })),
      )
      f.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-1' })
      await until(() => (wakes.length > 0 ? true : undefined))
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(1)
      expect(nudges[0].text).toContain('11111111')
      expect(wakes).toEqual([
        { teamName: team.name, memberName: 'bob', messageId: nudges[0].messageId, providerId: 'opencode', reason: 'member_work_sync_nudge_inserted', delayMs: 500 },
      ])
      expect((await f.getMetrics({ teamName: team.name })).phase2Readiness.state).toBe('collecting_shadow_data')
    } finally {
      await f.dispose()
    }
  })

  it('delivers Codex task protocol repair after a settled worker turn despite noisy metrics, and schedules a delivery wake', async () => {
    const task = { id: 'task-1', displayId: '11111111', subject: 'Close Codex task protocol', status: 'in_progress', owner: 'bob' }
    const { team, f, wakes } = queued('team-codex-task-protocol-repair', 'codex', task)
    try {
      seedYoungNoisy(team, 'bob', ['report_rejected'], Date.now())
      f.noteTeamChange({ type: 'task', teamName: team.name, taskId: 'task-1' })
      await until(() => (f.getQueueDiagnostics().reconciled >= 1 && f.getQueueDiagnostics().queued === 0 ? true : undefined))
      const status = await f.getStatus({ teamName: team.name, memberName: 'bob' })
      expect(status).toMatchObject({ state: 'needs_sync', providerId: 'codex', shadow: { wouldNudge: true } })
      expect(team.inbox('bob')).toEqual([])
      expect(wakes).toEqual([])

      f.noteTeamChange({ type: 'member-turn-settled', teamName: team.name, detail: JSON.stringify({ memberName: 'bob', provider: 'codex', sourceId: 'test-turn' }) })
      await until(() => (wakes.length > 0 ? true : undefined))
      const nudges = team.nudges('bob')
      expect(nudges).toHaveLength(1)
      for (const tool of ['task_add_comment', 'task_complete', 'mcp__agent-teams__member_work_sync_report']) expect(nudges[0].text).toContain(tool)
      expect(team.outboxItems('bob')).toEqual([
        expect.objectContaining({ status: 'delivered', deliveredMessageId: nudges[0].messageId, payload: expect.objectContaining({ workSyncIntentKey: expect.stringContaining('task-protocol-repair:') }) }),
      ])
      expect(wakes).toEqual([
        { teamName: team.name, memberName: 'bob', messageId: nudges[0].messageId, providerId: 'codex', reason: 'member_work_sync_nudge_inserted', delayMs: 500 },
      ])
    } finally {
      await f.dispose()
    }
  })
})

/** A logger recording warnings, and whether one with `code` about `callback` came. */
function warnings() {
  const entries: any[] = []
  const logger = {
    debug: () => {},
    warn: (_message: string, metadata?: unknown) => void entries.push(metadata),
    error: (_message: string, metadata?: unknown) => void entries.push(metadata),
  }
  const warned = (code: string, callback: string) => entries.some((m) => m?.code === code && m?.callback === callback)
  return { logger, warned }
}

/** Two hours of calm shadow history for `team` (writeShadowHistory writes it for forge). */
function writeShadowHistoryFor(root: string, team: string) {
  const scratch = tempDir('mws-shadow-')
  writeShadowHistory(scratch, Date.now())
  const metrics = readJson(path.join(scratch, 'teams/forge/.member-work-sync/indexes/metrics.json'))
  for (const event of metrics.recentEvents) event.teamName = team
  writeJson(path.join(root, 'teams', team, '.member-work-sync/indexes/metrics.json'), metrics)
}

class RecordingIpcMain {
  handlers = new Map<string, (event: unknown, request: unknown) => unknown>()
  removed: string[] = []
  handle(channel: string, listener: (event: unknown, request: unknown) => unknown) {
    this.handlers.set(channel, listener)
  }
  removeHandler(channel: string) {
    this.removed.push(channel)
    this.handlers.delete(channel)
  }
}

/** A facade whose four IPC methods record their request and answer `answer`. */
function recordingFacade(answer: (method: string, request: unknown) => Promise<unknown>) {
  const calls: [string, unknown][] = []
  const method = (name: string) => (request: unknown) => {
    calls.push([name, request])
    return answer(name, request)
  }
  const facade = {
    getStatus: method('getStatus'),
    refreshStatus: method('refreshStatus'),
    getMetrics: method('getMetrics'),
    report: method('report'),
  } as unknown as MemberWorkSyncFeatureFacade
  return { facade, calls }
}

describe('registerMemberWorkSyncIpc scenarios (the app’s, our versions)', () => {
  it('registers status, metrics and report handlers that delegate requests unchanged', async () => {
    const ipc = new RecordingIpcMain()
    const { facade, calls } = recordingFacade(async (name) => ({ answeredBy: name }))
    registerMemberWorkSyncIpc(ipc, facade)
    expect([...ipc.handlers.keys()].sort()).toEqual(
      ['member-work-sync:getMetrics', 'member-work-sync:getStatus', 'member-work-sync:refreshStatus', 'member-work-sync:report'].sort(),
    )
    const status = { teamName: 'team-a', memberName: 'bob' }
    const refresh = { teamName: 'team-a', memberName: 'bob', forceNudge: true }
    const metrics = { teamName: 'team-a' }
    const report = { teamName: 'team-a', memberName: 'bob', state: 'caught_up', agendaFingerprint: 'agenda:v1:x' }
    expect(await ipc.handlers.get('member-work-sync:getStatus')!({}, status)).toEqual({ answeredBy: 'getStatus' })
    expect(await ipc.handlers.get('member-work-sync:refreshStatus')!({}, refresh)).toEqual({ answeredBy: 'refreshStatus' })
    expect(await ipc.handlers.get('member-work-sync:getMetrics')!({}, metrics)).toEqual({ answeredBy: 'getMetrics' })
    expect(await ipc.handlers.get('member-work-sync:report')!({}, report)).toEqual({ answeredBy: 'report' })
    expect(calls).toEqual([
      ['getStatus', status],
      ['refreshStatus', refresh],
      ['getMetrics', metrics],
      ['report', report],
    ])
    // The very objects, not copies.
    expect(calls.map(([, request]) => request).every((request, i) => request === [status, refresh, metrics, report][i])).toBe(true)
  })

  it('propagates feature errors so the renderer receives the real status failure', async () => {
    const ipc = new RecordingIpcMain()
    const failure = Object.assign(new Error('status store unavailable'), { code: 'MWS_IO' })
    const { facade } = recordingFacade(async (name) => {
      if (name === 'getStatus') throw failure
      return {}
    })
    registerMemberWorkSyncIpc(ipc, facade)
    await expect(ipc.handlers.get('member-work-sync:getStatus')!({}, { teamName: 'team-a', memberName: 'bob' })).rejects.toBe(failure)
  })

  it('propagates metrics and report errors without replacing them', async () => {
    const ipc = new RecordingIpcMain()
    const failures: Record<string, Error> = { getMetrics: new Error('metrics failed'), report: new Error('report failed') }
    const { facade } = recordingFacade(async (name) => {
      if (failures[name]) throw failures[name]
      return {}
    })
    registerMemberWorkSyncIpc(ipc, facade)
    await expect(ipc.handlers.get('member-work-sync:getMetrics')!({}, { teamName: 'team-a' })).rejects.toBe(failures.getMetrics)
    await expect(
      ipc.handlers.get('member-work-sync:report')!({}, { teamName: 'team-a', memberName: 'bob', state: 'blocked', agendaFingerprint: 'agenda:v1:test' }),
    ).rejects.toBe(failures.report)
  })

  it('removes exactly the member work sync handlers', () => {
    const ipc = new RecordingIpcMain()
    registerMemberWorkSyncIpc(ipc, recordingFacade(async () => ({})).facade)
    ipc.handle('unrelated:channel', () => undefined)
    removeMemberWorkSyncIpc(ipc)
    expect(ipc.removed).toEqual([
      'member-work-sync:getStatus',
      'member-work-sync:refreshStatus',
      'member-work-sync:getMetrics',
      'member-work-sync:report',
    ])
    expect([...ipc.handlers.keys()]).toEqual(['unrelated:channel'])
  })
})
