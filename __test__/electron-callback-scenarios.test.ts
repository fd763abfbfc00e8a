// The app's composed-feature scenarios around three callbacks of
// member-work-sync/electron (`configFileAccess`, `runtimeTurnSettledTargetResolver`,
// `proofMissingRecoveryGuard`), told in our own words on real temp Claude
// roots, plus each callback slow, throwing and never settling. Where the
// app's test spies on its private classes (gate, journal, router, queue,
// scheduler), these assert what those calls change that anyone can see:
// the fence (`MWS_TEAM_QUIESCED`), the queue's diagnostics, the spool's
// folders, the outbox, the inbox, the journal and the logger.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { createMemberWorkSyncFeature, type MemberWorkSyncFeatureDeps } from 'member-work-sync/electron'
import { readJson, tempDir, until, writeJson } from './helpers'

interface Deferred {
  promise: Promise<void>
  resolve(): void
  reject(error: unknown): void
}

function deferred(): Deferred {
  let resolve!: () => void
  let reject!: (error: unknown) => void
  const promise = new Promise<void>((ok, fail) => {
    resolve = ok
    reject = fail
  })
  return { promise, resolve, reject }
}

/** A Claude root with team `teamName`: bob (on `provider`) owns one pending task. */
function teamRoot(teamName: string, provider?: string): string {
  const root = tempDir('mws-electron-cb-')
  writeTeam(root, teamName, provider)
  return root
}

function writeTeam(root: string, teamName: string, provider?: string) {
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
}

/** Twenty calm hourly samples of bob long ago: phase 2 readiness is `shadow_ready`. */
function seedShadowReady(root: string, teamName: string) {
  writeJson(path.join(root, 'teams', teamName, '.member-work-sync/indexes/metrics.json'), {
    schemaVersion: 2,
    members: { bob: { memberName: 'bob', state: 'caught_up', agendaFingerprint: 'agenda:v1:seed', actionableCount: 0, evaluatedAt: '2026-01-01T00:00:00.000Z' } },
    recentEvents: Array.from({ length: 20 }, (_, hour) => ({
      id: `calm-${hour}`,
      teamName,
      memberName: 'bob',
      kind: 'status_evaluated',
      state: 'caught_up',
      agendaFingerprint: `agenda:v1:seed-${hour}`,
      recordedAt: new Date(Date.UTC(2026, 0, 1, hour)).toISOString(),
      actionableCount: 0,
    })),
  })
}

/** What the entry handed the app's logger: `[level, message, metadata]`. */
function recordingLogger() {
  const entries: [string, string, any][] = []
  const logger = {
    debug: (message: string, metadata?: unknown) => void entries.push(['debug', message, metadata]),
    warn: (message: string, metadata?: unknown) => void entries.push(['warn', message, metadata]),
    error: (message: string, metadata?: unknown) => void entries.push(['error', message, metadata]),
  }
  const coded = (code: string, callback: string) => entries.filter(([, , m]) => m?.code === code && m?.callback === callback)
  return { logger, entries, coded }
}

function open(root: string, deps: Partial<MemberWorkSyncFeatureDeps>) {
  return createMemberWorkSyncFeature({ teamsBasePath: path.join(root, 'teams'), autoStart: false, ...deps })
}

const storeDir = (root: string, team: string, member = 'bob') => path.join(root, 'teams', team, 'members', member, '.member-work-sync')
const outboxItems = (root: string, team: string): any[] => {
  const file = path.join(storeDir(root, team), 'outbox.json')
  return fs.existsSync(file) ? Object.values(readJson(file).items) : []
}
const journal = (root: string, team: string): any[] => {
  const file = path.join(storeDir(root, team), 'journal.jsonl')
  return fs.existsSync(file)
    ? fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line))
    : []
}
const inboxNudges = (root: string, team: string): any[] => {
  const file = path.join(root, 'teams', team, 'inboxes', 'bob.json')
  return fs.existsSync(file) ? readJson(file).filter((row: any) => row.messageKind === 'member_work_sync_nudge') : []
}
const startupScans = (f: ReturnType<typeof open>, team: string) =>
  f.getQueueDiagnostics().queuedItems.filter((item) => item.teamName === team && item.triggerReasons.includes('startup_scan'))
/** A turn passes through the queue's intake on another thread: give it time to be routed. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 100))

describe('configFileAccess: the deleted team’s config probe', () => {
  it('creates a deleted tombstone when durable recovery completes without local preparation', async () => {
    const team = 'recovered-team'
    const root = teamRoot(team)
    const access = deferred()
    const asked: string[] = []
    const f = open(root, {
      configFileAccess: (configPath) => {
        asked.push(configPath)
        return access.promise
      },
    })
    try {
      // A deletion completed elsewhere (no prepareTeamDeletion here) leaves a tombstone.
      f.completeTeamDeletion(team)
      f.noteTeamChange({ type: 'config', teamName: team, detail: 'config.json' })
      f.noteTeamChange({ type: 'config', teamName: team, detail: 'config.json' })
      await until(() => (asked.length > 0 ? true : undefined))
      await settle()
      // One probe for both events, on the app's path; nothing routed, the fence stands.
      expect(asked).toEqual([path.join(root, 'teams', team, 'config.json')])
      expect(f.getQueueDiagnostics()).toMatchObject({ queued: 0, enqueued: 0, coalesced: 0 })
      await expect(f.refreshStatus({ teamName: team, memberName: 'bob' })).rejects.toMatchObject({ code: 'MWS_TEAM_QUIESCED' })

      access.resolve()
      // Resumed once: fence lifted and one startup scan of the roster.
      await until(() => (startupScans(f, team).some((item) => item.memberName === 'bob') ? true : undefined))
      const scanned = f.getQueueDiagnostics().queuedItems
      expect(scanned.every((item) => item.teamName === team && item.triggerReasons.join() === 'startup_scan')).toBe(true)
      expect(scanned.filter((item) => item.memberName === 'bob')).toHaveLength(1)
      await expect(f.refreshStatus({ teamName: team, memberName: 'bob' })).resolves.toMatchObject({ state: 'needs_sync' })
      const afterResume = f.getQueueDiagnostics()

      // The app's explicit resume after that scans no more.
      f.resumeTeam(team)
      await settle()
      expect(f.getQueueDiagnostics()).toMatchObject({ enqueued: afterResume.enqueued, coalesced: afterResume.coalesced })

      // Later config events are routed as usual (into the queued item) and probe nothing.
      f.noteTeamChange({ type: 'config', teamName: team, detail: 'config.json' })
      await until(() => (f.getQueueDiagnostics().coalesced >= afterResume.coalesced + scanned.length ? true : undefined))
      expect(asked).toHaveLength(1)
      expect(f.getQueueDiagnostics()).toMatchObject({ enqueued: afterResume.enqueued, coalesced: afterResume.coalesced + scanned.length })
    } finally {
      access.resolve()
      await f.dispose()
    }
  })

  it('ignores stale config access from an older deleted generation', async () => {
    const root = teamRoot('TEAM-A')
    const stale = deferred()
    const asked: string[] = []
    const f = open(root, {
      configFileAccess: (configPath) => {
        asked.push(configPath)
        return stale.promise
      },
    })
    try {
      await f.prepareTeamDeletion(' Team-A ')
      f.completeTeamDeletion('team-a')
      f.noteTeamChange({ type: 'config', teamName: 'TEAM-A', detail: 'config.json' })
      await until(() => (asked.length > 0 ? true : undefined))
      expect(asked).toEqual([path.join(root, 'teams', 'TEAM-A', 'config.json')])

      // A second deletion of the same team (another spelling) before the probe answers.
      await f.prepareTeamDeletion(' TEAM-A ')
      f.completeTeamDeletion('Team-A')
      stale.resolve()
      await settle()

      // The older generation's answer resumed nothing: no scan, still fenced.
      expect(startupScans(f, 'TEAM-A')).toEqual([])
      await expect(f.scheduleProofMissingRecovery({ teamName: 'team-a', memberName: '', originalMessageId: '' })).rejects.toMatchObject({
        code: 'MWS_TEAM_QUIESCED',
      })
      f.resumeTeam(' Team-A ')
      await expect(f.scheduleProofMissingRecovery({ teamName: 'TEAM-A', memberName: '', originalMessageId: '' })).resolves.toEqual({
        scheduled: false,
        reason: 'invalid',
      })
      expect(asked).toHaveLength(1)
    } finally {
      stale.resolve()
      await f.dispose()
    }
  })

  it('a throwing probe keeps the team deleted (logged); the next config event probes again and resumes it', async () => {
    const team = 'team-a'
    const root = teamRoot(team)
    const { logger, coded } = recordingLogger()
    let calls = 0
    const f = open(root, {
      logger,
      configFileAccess: async () => {
        calls++
        if (calls === 1) throw new Error('ENOENT: no config yet')
      },
    })
    try {
      f.completeTeamDeletion(team)
      f.noteTeamChange({ type: 'config', teamName: team, detail: 'config.json' })
      await until(() => (coded('MWS_LOG_HOST_CALLBACK_FAILED', 'configFileAccess').length > 0 ? true : undefined))
      await settle()
      expect(startupScans(f, team)).toEqual([])
      await expect(f.refreshStatus({ teamName: team, memberName: 'bob' })).rejects.toMatchObject({ code: 'MWS_TEAM_QUIESCED' })
      f.noteTeamChange({ type: 'config', teamName: team, detail: 'config.json' })
      await until(() => (startupScans(f, team).length > 0 ? true : undefined))
      expect(calls).toBe(2)
    } finally {
      await f.dispose()
    }
  })

  it('a probe that never settles is given up after hostTimeoutMs (logged), keeps the team deleted, and dispose does not wait for it', async () => {
    const team = 'team-a'
    const root = teamRoot(team)
    const { logger, coded } = recordingLogger()
    const f = open(root, { logger, hostTimeoutMs: 50, configFileAccess: () => new Promise<void>(() => {}) })
    try {
      f.completeTeamDeletion(team)
      f.noteTeamChange({ type: 'config', teamName: team, detail: 'config.json' })
      const [timedOut] = await until(() => {
        const found = coded('MWS_LOG_HOST_CALLBACK_TIMED_OUT', 'configFileAccess')
        return found.length > 0 ? found : undefined
      })
      expect(timedOut[2]).toMatchObject({ callback: 'configFileAccess', waitedMs: expect.any(Number) })
      expect(startupScans(f, team)).toEqual([])
      await expect(f.refreshStatus({ teamName: team, memberName: 'bob' })).rejects.toMatchObject({ code: 'MWS_TEAM_QUIESCED' })
    } finally {
      await f.dispose()
    }
  })

  it('dispose ends a probe that is still waiting (hostTimeoutMs at its maximum)', async () => {
    const team = 'team-a'
    const root = teamRoot(team)
    const asked: string[] = []
    const f = open(root, {
      hostTimeoutMs: 120_000,
      configFileAccess: (configPath) => {
        asked.push(configPath)
        return new Promise<void>(() => {})
      },
    })
    f.completeTeamDeletion(team)
    f.noteTeamChange({ type: 'config', teamName: team, detail: 'config.json' })
    await until(() => (asked.length > 0 ? true : undefined))
    // Would hang past the test's timeout if dispose waited for the answer.
    await f.dispose()
  })
})

/** `<stamp>-<pid>-<suffix>.<provider>.json` at the real clock's now (retention keeps a day). */
function spoolName(suffix: string, provider: string): string {
  const stamp = new Date().toISOString().replace(/[-:.]/g, '')
  return `${stamp}-4242-${suffix}.${provider}.json`
}

function opencodeTurn(teamName: string, root: string, promptId: string) {
  return {
    schemaVersion: 1,
    provider: 'opencode',
    source: 'agent-teams-orchestrator-opencode',
    eventName: 'runtime_turn_settled',
    hookEventName: 'Stop',
    sessionId: 'ses-opencode-dispose',
    runtimePromptMessageId: promptId,
    laneId: 'secondary:opencode:bob',
    memberName: 'bob',
    teamName,
    cwd: root,
    outcome: 'success',
    recordedAt: new Date().toISOString(),
  }
}

/** Writes `payload` into the spool's `incoming/` folder; the spool root. */
async function spool(f: ReturnType<typeof open>, name: string, payload: unknown): Promise<string> {
  const env = await f.buildRuntimeTurnSettledEnvironment({ provider: 'opencode' })
  const spoolRoot = env!.AGENT_TEAMS_RUNTIME_TURN_SETTLED_SPOOL_ROOT
  fs.writeFileSync(path.join(spoolRoot, 'incoming', name), `${JSON.stringify(payload)}\n`)
  return spoolRoot
}

describe('runtimeTurnSettledTargetResolver', () => {
  it('rejects a late turn-settled enqueue after disposal: dispose does not wait for the resolver, its late answer queues nothing', async () => {
    const team = 'team-a'
    const root = teamRoot(team, 'opencode')
    const started = deferred()
    const release = deferred()
    const f = open(root, {
      hostTimeoutMs: 120_000,
      runtimeTurnSettledTargetResolver: {
        resolve: async () => {
          started.resolve()
          await release.promise
          return { ok: true as const, teamName: team, memberName: 'bob' }
        },
      },
    })
    const name = spoolName('dispose-race', 'opencode')
    const spoolRoot = await spool(f, name, opencodeTurn(team, root, 'msg_dispose'))
    const drain = f.drainRuntimeTurnSettledEvents()
    try {
      await started.promise
      // Would hang past the test's timeout if dispose waited for the answer.
      await f.dispose()
      release.resolve()
      await expect(drain).resolves.toMatchObject({ claimed: 1, enqueued: 0, failed: 1 })
      // Not processed: no outcome on disk, the payload waits for a later
      // drain (back in incoming/, where the app's leaves it in processing/
      // for its stale-claim recovery), and no journal line says resolved.
      expect(fs.existsSync(path.join(spoolRoot, 'processed', `${name}.meta.json`))).toBe(false)
      expect(fs.existsSync(path.join(spoolRoot, 'incoming', name))).toBe(true)
      expect(journal(root, team).map((line) => line.event)).not.toContain('turn_settled_resolved')
    } finally {
      release.resolve()
      await f.dispose()
    }
  })

  it('decides the target in place of the addon’s attribution: a turn the addon cannot place is queued for the member it names', async () => {
    const team = 'team-a'
    const root = teamRoot(team)
    const seen: any[] = []
    const f = open(root, {
      runtimeTurnSettledTargetResolver: {
        resolve: async (event) => {
          seen.push(event)
          return event.sessionId === 'lead-session' ? { ok: true, teamName: team, memberName: 'bob' } : { ok: false, reason: 'no_matching_member_session' }
        },
      },
    })
    try {
      const name = spoolName('lead', 'claude')
      const spoolRoot = await spool(f, name, { session_id: 'lead-session', hook_event_name: 'Stop', transcript_path: '/nowhere/lead.jsonl', cwd: root })
      expect(await f.drainRuntimeTurnSettledEvents()).toMatchObject({ claimed: 1, enqueued: 1, unresolved: 0, failed: 0 })
      expect(seen).toMatchObject([{ schemaVersion: 1, provider: 'claude', hookEventName: 'Stop', sessionId: 'lead-session', sourceId: expect.stringMatching(/^runtime-turn-settled:claude:lead-session:/) }])
      expect(readJson(path.join(spoolRoot, 'processed', `${name}.meta.json`))).toMatchObject({ outcome: 'enqueued', teamName: team, memberName: 'bob' })
      // Without a running queue the drain reconciles the member at once.
      const events = journal(root, team).map((line) => line.event)
      expect(events.slice(0, 2)).toEqual(['turn_settled_claimed', 'turn_settled_resolved'])
      expect(readJson(path.join(storeDir(root, team), 'status.json')).status).toMatchObject({ shadow: { triggerReasons: ['turn_settled'] } })

      const other = spoolName('other', 'claude')
      await spool(f, other, { session_id: 'someone-else', hook_event_name: 'Stop', cwd: root })
      expect(await f.drainRuntimeTurnSettledEvents()).toMatchObject({ claimed: 1, enqueued: 0, unresolved: 1 })
      expect(readJson(path.join(spoolRoot, 'processed', `${other}.meta.json`))).toMatchObject({ outcome: 'unresolved', reason: 'no_matching_member_session' })
    } finally {
      await f.dispose()
    }
  })

  it('a resolver naming a team or member unsafe as a folder name leaves the turn unresolved (resolver_target_unknown)', async () => {
    const team = 'team-a'
    const root = teamRoot(team)
    const answers = [
      { ok: true as const, teamName: '../team-a', memberName: 'bob' },
      { ok: true as const, teamName: team, memberName: 'a/b' },
    ]
    let asked = 0
    const f = open(root, { runtimeTurnSettledTargetResolver: { resolve: async () => answers[asked++] } })
    try {
      for (const [i, answer] of answers.entries()) {
        const name = spoolName(`unsafe-${i}`, 'claude')
        const spoolRoot = await spool(f, name, { session_id: `unsafe-${i}`, hook_event_name: 'Stop', cwd: root })
        expect(await f.drainRuntimeTurnSettledEvents(), JSON.stringify(answer)).toMatchObject({ claimed: 1, enqueued: 0, unresolved: 1, failed: 0 })
        expect(readJson(path.join(spoolRoot, 'processed', `${name}.meta.json`)), JSON.stringify(answer)).toMatchObject({ outcome: 'unresolved', reason: 'resolver_target_unknown' })
      }
      expect(asked).toBe(answers.length)
      expect(journal(root, team).map((line) => line.event)).not.toContain('turn_settled_resolved')
    } finally {
      await f.dispose()
    }
  })

  it('a throwing resolver leaves the batch for a later drain, asked once per drain (logged)', async () => {
    const team = 'team-a'
    const root = teamRoot(team, 'opencode')
    const { logger, coded } = recordingLogger()
    let calls = 0
    const f = open(root, {
      logger,
      runtimeTurnSettledTargetResolver: {
        resolve: async () => {
          calls++
          throw new Error('resolver down')
        },
      },
    })
    try {
      const first = spoolName('first', 'opencode')
      const spoolRoot = await spool(f, first, opencodeTurn(team, root, 'msg_1'))
      const second = spoolName('second', 'opencode')
      await spool(f, second, opencodeTurn(team, root, 'msg_2'))
      expect(await f.drainRuntimeTurnSettledEvents()).toMatchObject({ claimed: 2, enqueued: 0, failed: 2 })
      expect(calls).toBe(1)
      // Log entries reach the JS thread on their own schedule.
      await until(() => (coded('MWS_LOG_HOST_CALLBACK_FAILED', 'runtimeTurnSettledTargetResolver.resolve').length > 0 ? true : undefined))
      expect(coded('MWS_LOG_HOST_CALLBACK_FAILED', 'runtimeTurnSettledTargetResolver.resolve')).toHaveLength(1)
      expect(fs.readdirSync(path.join(spoolRoot, 'incoming')).sort()).toEqual([first, second].sort())
      expect(f.getQueueDiagnostics().queued).toBe(0)
    } finally {
      await f.dispose()
    }
  })

  it('a resolver that never settles is given up after hostTimeoutMs (logged) and the file waits', async () => {
    const team = 'team-a'
    const root = teamRoot(team, 'opencode')
    const { logger, coded } = recordingLogger()
    const f = open(root, { logger, hostTimeoutMs: 50, runtimeTurnSettledTargetResolver: { resolve: () => new Promise(() => {}) } })
    try {
      const name = spoolName('stuck', 'opencode')
      const spoolRoot = await spool(f, name, opencodeTurn(team, root, 'msg_1'))
      expect(await f.drainRuntimeTurnSettledEvents()).toMatchObject({ claimed: 1, enqueued: 0, failed: 1 })
      await until(() => (coded('MWS_LOG_HOST_CALLBACK_TIMED_OUT', 'runtimeTurnSettledTargetResolver.resolve').length > 0 ? true : undefined))
      expect(fs.readdirSync(path.join(spoolRoot, 'incoming'))).toEqual([name])
    } finally {
      await f.dispose()
    }
  })
})

/** Puts a pending proof-missing recovery for message-1 into bob's outbox, as the app's JSON store writes it. */
function plantRecovery(root: string, team: string, agendaFingerprint: string) {
  const file = path.join(storeDir(root, team), 'outbox.json')
  const stored = fs.existsSync(file) ? readJson(file) : { schemaVersion: 2, items: {} }
  const id = `member-work-sync:${team}:bob:proof-missing:message-1`
  const at = new Date().toISOString()
  stored.items[id] = {
    id,
    teamName: team,
    memberName: 'bob',
    agendaFingerprint,
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
      taskRefs: [{ taskId: 'task-1', displayId: '11111111', teamName: team }],
    },
    status: 'pending',
    attemptGeneration: 0,
    createdAt: at,
    updatedAt: at,
  }
  writeJson(file, stored)
  // The team's outbox index is rebuilt from the member outboxes.
  fs.rmSync(path.join(root, 'teams', team, '.member-work-sync/indexes/outbox-index.json'), { force: true })
  return id
}

type Verdict = { ok: true } | { ok: false; reason: string; retryable: boolean; nextAttemptAt?: string }

async function recoveryScenario(shouldDispatch: (input: any) => Promise<Verdict>, extra: Partial<MemberWorkSyncFeatureDeps> = {}) {
  const team = 'team-a'
  const root = teamRoot(team)
  seedShadowReady(root, team)
  const asked: any[] = []
  const f = open(root, {
    proofMissingRecoveryGuard: {
      shouldDispatch: (input) => {
        asked.push(input)
        return shouldDispatch(input)
      },
    },
    ...extra,
  })
  const status = await f.refreshStatus({ teamName: team, memberName: 'bob' })
  expect(status.state).toBe('needs_sync')
  const recoveryId = plantRecovery(root, team, status.agenda.fingerprint)
  const summary = await f.dispatchDueNudges([team])
  const recovery = outboxItems(root, team).find((item) => item.id === recoveryId)
  const lines = journal(root, team).filter((line) => line.metadata?.outboxId === recoveryId || line.outboxId === recoveryId)
  return { f, root, team, asked, summary, recovery, lines }
}

describe('proofMissingRecoveryGuard', () => {
  it('suppresses a queued proof-missing recovery when the original delivery is no longer proof-missing', async () => {
    const { f, root, team, asked, summary, recovery } = await recoveryScenario(async () => ({
      ok: false,
      reason: 'proof_missing_recovery_suppressed',
      retryable: false,
    }))
    try {
      expect(summary).toMatchObject({ claimed: 2, delivered: 1, superseded: 1, retryable: 0, terminal: 0 })
      expect(asked).toEqual([
        { teamName: team, memberName: 'bob', intentKey: 'proof-missing:message-1', originalMessageId: 'message-1', taskIds: ['task-1'], nowIso: expect.any(String) },
      ])
      const nudges = inboxNudges(root, team)
      expect(nudges).toHaveLength(1)
      expect(nudges[0].text).toContain('11111111')
      expect(nudges[0].text).not.toContain('Recover proof')
      expect(recovery).toMatchObject({ status: 'superseded' })
      expect(journal(root, team)).toEqual(
        expect.arrayContaining([expect.objectContaining({ event: 'nudge_superseded', reason: 'proof_missing_recovery_suppressed' })]),
      )
    } finally {
      await f.dispose()
    }
  })

  it('a retryable hold keeps the recovery for the guard’s time (journaled nudge_skipped)', async () => {
    const later = new Date(Date.now() + 10 * 60_000).toISOString()
    const { f, root, team, summary, recovery } = await recoveryScenario(async () => ({
      ok: false,
      reason: 'proof_missing_recovery_still_in_grace',
      retryable: true,
      nextAttemptAt: later,
    }))
    try {
      expect(summary).toMatchObject({ claimed: 2, delivered: 1, retryable: 1 })
      expect(recovery).toMatchObject({ status: 'failed_retryable', nextAttemptAt: later, lastError: 'proof_missing_recovery_still_in_grace' })
      expect(journal(root, team)).toEqual(
        expect.arrayContaining([expect.objectContaining({ event: 'nudge_skipped', reason: 'proof_missing_recovery_still_in_grace' })]),
      )
    } finally {
      await f.dispose()
    }
  })

  it('a guard that says go lets the recovery out', async () => {
    const { f, root, team, summary, recovery } = await recoveryScenario(async () => ({ ok: true }))
    try {
      expect(summary).toMatchObject({ claimed: 2, delivered: 2 })
      expect(recovery).toMatchObject({ status: 'delivered' })
      expect(inboxNudges(root, team).map((row) => row.text)).toContain('Recover proof')
    } finally {
      await f.dispose()
    }
  })

  it('a throwing guard retries the recovery later (nudge_retryable, logged); the other nudge goes out', async () => {
    const { logger, coded } = recordingLogger()
    const { f, root, team, summary, recovery } = await recoveryScenario(
      async () => {
        throw new Error('delivery status unavailable')
      },
      { logger },
    )
    try {
      expect(summary).toMatchObject({ claimed: 2, delivered: 1, retryable: 1 })
      expect(recovery).toMatchObject({ status: 'failed_retryable', lastError: expect.stringContaining('proof_missing_recovery_guard_failed:') })
      expect(journal(root, team)).toEqual(
        expect.arrayContaining([expect.objectContaining({ event: 'nudge_retryable', reason: expect.stringContaining('delivery status unavailable') })]),
      )
      await until(() => (coded('MWS_LOG_HOST_CALLBACK_FAILED', 'proofMissingRecoveryGuard.shouldDispatch').length > 0 ? true : undefined))
    } finally {
      await f.dispose()
    }
  })

  it('a guard that never settles is given up after hostTimeoutMs (logged) and the recovery retried later', async () => {
    const { logger, coded } = recordingLogger()
    const { f, summary, recovery } = await recoveryScenario(() => new Promise(() => {}), { logger, hostTimeoutMs: 50 })
    try {
      expect(summary).toMatchObject({ claimed: 2, delivered: 1, retryable: 1 })
      expect(recovery).toMatchObject({ status: 'failed_retryable', lastError: 'proof_missing_recovery_guard_failed:timed out' })
      await until(() => (coded('MWS_LOG_HOST_CALLBACK_TIMED_OUT', 'proofMissingRecoveryGuard.shouldDispatch').length > 0 ? true : undefined))
    } finally {
      await f.dispose()
    }
  })

  it('is not asked about a nudge that is not a proof-missing recovery', async () => {
    const team = 'team-a'
    const root = teamRoot(team)
    seedShadowReady(root, team)
    const asked: unknown[] = []
    const f = open(root, { proofMissingRecoveryGuard: { shouldDispatch: async (input) => (asked.push(input), { ok: true }) } })
    try {
      await f.refreshStatus({ teamName: team, memberName: 'bob' })
      expect(await f.dispatchDueNudges([team])).toMatchObject({ claimed: 1, delivered: 1 })
      expect(asked).toEqual([])
    } finally {
      await f.dispose()
    }
  })
})
