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
import { readJson, until, writeJson, writeShadowHistory } from './helpers'

/** A Claude root with one team of one member (`bob`) owning one pending task. */
function oneMemberTeam(teamName: string, provider?: string): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-electron-ref-'))
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
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-electron-ref-'))
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
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-electron-ref-'))
    const env = await buildMemberWorkSyncRuntimeTurnSettledEnvironment({ teamsBasePath: path.join(root, 'teams'), provider: 'opencode' })
    expect(env).toEqual({ AGENT_TEAMS_RUNTIME_TURN_SETTLED_SPOOL_ROOT: expect.stringContaining(root) })
  })
})

/** Two hours of calm shadow history for `team` (writeShadowHistory writes it for forge). */
function writeShadowHistoryFor(root: string, team: string) {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-shadow-'))
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

  it('propagates status, metrics and report errors so the renderer receives the real failure', async () => {
    const ipc = new RecordingIpcMain()
    const failure = Object.assign(new Error('status store unavailable'), { code: 'MWS_IO' })
    const { facade } = recordingFacade(async () => {
      throw failure
    })
    registerMemberWorkSyncIpc(ipc, facade)
    await expect(ipc.handlers.get('member-work-sync:getStatus')!({}, { teamName: 'team-a', memberName: 'bob' })).rejects.toBe(failure)
    await expect(ipc.handlers.get('member-work-sync:getMetrics')!({}, { teamName: 'team-a' })).rejects.toBe(failure)
    await expect(ipc.handlers.get('member-work-sync:report')!({}, { teamName: 'team-a', memberName: 'bob' })).rejects.toBe(failure)
  })

  it('removes exactly the member work sync handlers', () => {
    const ipc = new RecordingIpcMain()
    removeMemberWorkSyncIpc(ipc)
    expect(ipc.removed).toEqual([
      'member-work-sync:getStatus',
      'member-work-sync:refreshStatus',
      'member-work-sync:getMetrics',
      'member-work-sync:report',
    ])
  })
})
