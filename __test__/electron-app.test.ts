// The scratch Electron app (electron-app/main.ts) run in Node: every
// decision-time callback the app passes answered normally, slowly, by
// throwing and never, with the fallback and the logged code asserted.
import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'

import * as app from './electron-app/main'
import { copyExampleRoot, readJson, until } from './helpers'

const NOW = Date.parse('2026-11-22T10:00:00.000Z')
/** The host wait bound these tests run with (a configuration, not an assertion). */
const TIMEOUT_MS = 300

type Logged = { level: string; message: string; meta?: Record<string, unknown> }
type Behaviour = 'answer' | 'slow' | 'throw' | 'never'

/** A callback that answers `value` now, after a short delay, throws, or never settles. */
function callback<T>(behaviour: Behaviour, value: T, calls?: unknown[]): (...args: unknown[]) => Promise<T> {
  return (...args: unknown[]) => {
    calls?.push(args[0])
    if (behaviour === 'throw') return Promise.reject(new Error('host down'))
    if (behaviour === 'never') return new Promise<T>(() => {})
    if (behaviour === 'slow') return new Promise<T>((resolve) => setTimeout(() => resolve(value), TIMEOUT_MS / 6))
    return Promise.resolve(value)
  }
}

class FakeIpcMain {
  handlers = new Map<string, (event: unknown, ...args: unknown[]) => unknown>()
  handle(channel: string, listener: (event: unknown, ...args: unknown[]) => unknown) {
    if (this.handlers.has(channel)) throw new Error(`second handler for ${channel}`)
    this.handlers.set(channel, listener)
  }
  removeHandler(channel: string) {
    this.handlers.delete(channel)
  }
  invoke(channel: string, request: unknown) {
    const handler = this.handlers.get(channel)
    if (!handler) throw new Error(`no handler for ${channel}`)
    return handler({}, request)
  }
}

const liveSnapshot = {
  members: Object.fromEntries(
    ['bob', 'jack', 'jill', 'kim'].map((name) => [name, { memberName: name, alive: true, backendType: 'process' as const }]),
  ),
}

interface Harness {
  root: string
  ipc: FakeIpcMain
  logged: Logged[]
  feature: ReturnType<typeof app.startMemberWorkSync>
  wakes: unknown[]
  codes(): unknown[]
}

let current: Harness | null = null
afterEach(async () => {
  if (current) await app.shutdown(current.ipc as never)
  current = null
})

function start(overrides: Partial<app.ScratchServices> = {}): Harness {
  const root = copyExampleRoot()
  const logged: Logged[] = []
  const wakes: unknown[] = []
  const record = (level: string) => (message: string, meta?: Record<string, unknown>) => logged.push({ level, message, meta })
  const ipc = new FakeIpcMain()
  const services: app.ScratchServices = {
    teamsBasePath: path.join(root, 'teams'),
    runtimeSnapshot: async () => liveSnapshot,
    canDispatch: () => true,
    lifecycleActiveTeamNames: async () => ['forge'],
    controlUrl: () => 'http://127.0.0.1:4545/control',
    wakeOpenCode: (input) => {
      wakes.push(input)
    },
    relayLead: () => {},
    promptDeliveryBusy: { isBusy: async () => ({ busy: false }) },
    toolApprovalBusy: { isBusy: async () => ({ busy: false }) },
    deliveryStatus: async () => null,
    sessionOwner: async () => null,
    configFileAccess: (configPath) => fs.promises.access(configPath),
    logger: { debug: record('debug'), warn: record('warn'), error: record('error') },
    hostTimeoutMs: TIMEOUT_MS,
    autoStart: false,
    clock: { nowMs: NOW },
    ...overrides,
  }
  const feature = app.startMemberWorkSync(ipc as never, services)
  current = {
    root,
    ipc,
    logged,
    feature,
    wakes,
    codes: () => logged.map((entry) => entry.meta?.code),
  }
  return current
}

const inboxOf = (root: string, member: string) => {
  const file = path.join(root, 'teams/forge/inboxes', `${member}.json`)
  return fs.existsSync(file) ? (readJson(file) as any[]) : []
}
const journalOf = (root: string, member: string) => {
  const file = path.join(root, 'teams/forge/members', member, '.member-work-sync/journal.jsonl')
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n').map((line) => JSON.parse(line)) : []
}
const loggedWith = (h: Harness, code: string, callbackName: string) =>
  h.logged.find((entry) => entry.meta?.code === code && entry.meta?.callback === callbackName)

describe('the scratch Electron app over member-work-sync/electron', () => {
  it('isTeamActive / isMemberActive are asked at decision time; a slow answer is used; throwing or never settling falls back to active, logged', async () => {
    let snapshot: typeof liveSnapshot | { members: {} } = { members: {} }
    const h = start({ runtimeSnapshot: async () => snapshot })
    expect((await app.routes.refresh('forge', 'jack', {}))!.diagnostics).toContain('team_runtime_inactive')
    snapshot = liveSnapshot
    // Asked again at the next decision: no state was pushed in between.
    expect((await app.routes.refresh('forge', 'jack', {}))!.state).toBe('needs_sync')
    snapshot = { members: { bob: liveSnapshot.members.bob } }
    expect((await app.routes.refresh('forge', 'jack', {}))!.diagnostics).toContain('member_runtime_inactive')
    await app.shutdown(h.ipc as never)

    for (const behaviour of ['slow', 'throw', 'never'] as const) {
      const h2 = start({ runtimeSnapshot: callback(behaviour, { members: {} }) })
      const status = await app.routes.refresh('forge', 'jack', {})
      if (behaviour === 'slow') {
        expect(status!.diagnostics).toContain('team_runtime_inactive')
        expect(h2.codes()).not.toContain('MWS_LOG_HOST_CALLBACK_TIMED_OUT')
      } else {
        // The addon's own view (no state pushed: active) decides.
        expect(status!.state).toBe('needs_sync')
        const code = behaviour === 'throw' ? 'MWS_LOG_HOST_CALLBACK_FAILED' : 'MWS_LOG_HOST_CALLBACK_TIMED_OUT'
        expect(loggedWith(h2, code, 'isTeamActive')).toBeDefined()
      }
      await app.shutdown(h2.ipc as never)
    }
  })

  it('canDispatchNudges gates each team dispatch: false, throwing or never settling dispatches nothing (the last two logged); true delivers', async () => {
    for (const [behaviour, ready] of [['answer', false], ['throw', true], ['never', true]] as const) {
      const h = start({ canDispatch: callback(behaviour, ready) })
      const summary = await h.feature.dispatchDueNudges(['forge'])
      expect(summary.claimed).toBe(0)
      expect(inboxOf(h.root, 'jack')).toHaveLength(0)
      if (behaviour !== 'answer') {
        const code = behaviour === 'throw' ? 'MWS_LOG_HOST_CALLBACK_FAILED' : 'MWS_LOG_HOST_CALLBACK_TIMED_OUT'
        // The log entry reaches the logger through its own JS-thread call.
        await until(() => loggedWith(h, code, 'canDispatchNudges'))
      }
      await app.shutdown(h.ipc as never)
    }
    const h = start({ canDispatch: callback('slow', true) })
    expect((await h.feature.dispatchDueNudges(['forge'])).delivered).toBeGreaterThan(0)
    expect(inboxOf(h.root, 'jack')).toHaveLength(1)
  })

  it('resolveControlUrl is asked per delivery: its URL ends the text; throwing, blank or never settling holds the delivery for a retry, logged', async () => {
    const h = start({ controlUrl: callback('slow', 'http://127.0.0.1:4545/control') })
    await h.feature.dispatchDueNudges(['forge'])
    expect(inboxOf(h.root, 'jack')[0].text).toContain('controlUrl "http://127.0.0.1:4545/control"')
    await app.shutdown(h.ipc as never)

    for (const behaviour of ['throw', 'never', 'blank'] as const) {
      const h2 = start({
        controlUrl: () => {
          if (behaviour === 'blank') return '  '
          return callback(behaviour, null)()
        },
      })
      const held = await h2.feature.dispatchDueNudges(['forge'])
      expect(held.delivered).toBe(0)
      expect(held.retryable).toBeGreaterThan(0)
      expect(inboxOf(h2.root, 'jack')).toHaveLength(0)
      const retry = journalOf(h2.root, 'jack').find((line) => line.event === 'nudge_retryable')
      expect(retry.reason).toContain('control URL unavailable')
      if (behaviour !== 'blank') {
        const code = behaviour === 'throw' ? 'MWS_LOG_HOST_CALLBACK_FAILED' : 'MWS_LOG_HOST_CALLBACK_TIMED_OUT'
        expect(loggedWith(h2, code, 'resolveControlUrl')).toBeDefined()
      }
      await app.shutdown(h2.ipc as never)
    }
  })

  it('busy signals: a busy priority signal holds the delivery with its reason and retry time; a throwing or never-settling one counts as not busy, logged', async () => {
    const retryAfterIso = new Date(NOW + 120_000).toISOString()
    const seen: any[] = []
    const h = start({
      promptDeliveryBusy: {
        isBusy: async (input) => {
          seen.push(input)
          return input.memberName === 'jack' ? { busy: true, reason: 'opencode_prompt_delivery_busy', retryAfterIso } : { busy: false }
        },
      },
    })
    await h.feature.dispatchDueNudges(['forge'])
    expect(inboxOf(h.root, 'jack')).toHaveLength(0)
    const busy = journalOf(h.root, 'jack').find((line) => line.event === 'member_busy')
    expect(busy.reason).toBe('member_busy:opencode_prompt_delivery_busy')
    expect(busy.metadata.nextAttemptAt).toBe(retryAfterIso)
    expect(seen.find((input) => input.memberName === 'jack')).toMatchObject({ teamName: 'forge', nowIso: new Date(NOW).toISOString(), workSyncIntent: 'agenda_sync' })
    await app.shutdown(h.ipc as never)

    for (const behaviour of ['throw', 'never'] as const) {
      const h2 = start({ toolApprovalBusy: { isBusy: callback(behaviour, { busy: true, reason: 'pending_tool_approval' }) } })
      await h2.feature.dispatchDueNudges(['forge'])
      expect(inboxOf(h2.root, 'jack')).toHaveLength(1)
      if (behaviour === 'throw') {
        expect(h2.logged.find((e) => e.meta?.callback === 'extraBusySignals' && e.meta?.error)).toBeDefined()
      } else {
        expect(loggedWith(h2, 'MWS_LOG_HOST_CALLBACK_TIMED_OUT', 'extraBusySignals')).toBeDefined()
      }
      await app.shutdown(h2.ipc as never)
    }
  })

  it('nudgeDeliveryWake fires after each inserted nudge with the provider; a throwing or never-settling wake is journaled nudge_wake_failed, the delivery stands', async () => {
    const h = start()
    await h.feature.dispatchDueNudges(['forge'])
    const jill = inboxOf(h.root, 'jill')
    expect(jill).toHaveLength(1)
    // jill runs on OpenCode: the app wakes her; other providers are not.
    expect(h.wakes).toEqual([{ teamName: 'forge', memberName: 'jill', messageId: jill[0].messageId, delayMs: 500 }])
    await app.shutdown(h.ipc as never)

    for (const behaviour of ['throw', 'never'] as const) {
      const h2 = start({ wakeOpenCode: callback(behaviour, undefined) as never })
      const summary = await h2.feature.dispatchDueNudges(['forge'])
      expect(inboxOf(h2.root, 'jill')).toHaveLength(1)
      expect(summary.delivered).toBeGreaterThan(0)
      const failed = journalOf(h2.root, 'jill').find((line) => line.event === 'nudge_wake_failed')
      expect(failed.reason).toMatch(/^nudge_wake_failed:/)
      const code = behaviour === 'throw' ? 'MWS_LOG_HOST_CALLBACK_FAILED' : 'MWS_LOG_HOST_CALLBACK_TIMED_OUT'
      expect(loggedWith(h2, code, 'nudgeDeliveryWake')).toBeDefined()
      await app.shutdown(h2.ipc as never)
    }
  })

  it('listLifecycleActiveTeamNames names the teams of each scheduled pass; throwing or never settling makes a pass do nothing, logged', async () => {
    const calls: unknown[] = []
    const h = start({ autoStart: true, tuning: { dispatchIntervalMs: 100 }, lifecycleActiveTeamNames: callback('slow', ['forge'], calls) })
    await until(() => (inboxOf(h.root, 'jack').length === 1 ? true : undefined), 15_000)
    await app.shutdown(h.ipc as never)

    for (const behaviour of ['throw', 'never'] as const) {
      const asked: unknown[] = []
      const h2 = start({ autoStart: true, tuning: { dispatchIntervalMs: 100 }, lifecycleActiveTeamNames: callback(behaviour, ['forge'], asked) })
      const code = behaviour === 'throw' ? 'MWS_LOG_HOST_CALLBACK_FAILED' : 'MWS_LOG_HOST_CALLBACK_TIMED_OUT'
      await until(() => (h2.logged.filter((e) => e.meta?.code === code && e.meta?.callback === 'listLifecycleActiveTeamNames').length >= 2 ? true : undefined), 15_000)
      expect(asked.length).toBeGreaterThanOrEqual(2)
      expect(inboxOf(h2.root, 'jack')).toHaveLength(0)
      await app.shutdown(h2.ipc as never)
    }
  })

  it('configFileAccess probes a deleted team’s config on a config event: answering resumes it; slow is waited for; throwing or never settling keeps it deleted, logged', async () => {
    for (const behaviour of ['answer', 'slow', 'throw', 'never'] as const) {
      const asked: unknown[] = []
      const h = start({ configFileAccess: callback(behaviour, undefined, asked) as (configPath: string) => Promise<void> })
      await app.deleteTeam('forge')
      app.notifyTeamChange({ type: 'config', teamName: 'forge', detail: 'config.json' })
      await until(() => (asked.length > 0 ? true : undefined))
      expect(asked).toEqual([path.join(h.root, 'teams', 'forge', 'config.json')])
      if (behaviour === 'answer' || behaviour === 'slow') {
        await until(() => (h.feature.getQueueDiagnostics().queuedItems.some((item) => item.triggerReasons.includes('startup_scan')) ? true : undefined))
      } else {
        const code = behaviour === 'throw' ? 'MWS_LOG_HOST_CALLBACK_FAILED' : 'MWS_LOG_HOST_CALLBACK_TIMED_OUT'
        await until(() => (h.codes().includes(code) ? true : undefined))
        expect(h.feature.getQueueDiagnostics().queued).toBe(0)
        await expect(app.routes.status('forge', 'bob')).rejects.toMatchObject({ code: 'MWS_TEAM_QUIESCED' })
      }
      await app.shutdown(h.ipc as never)
      current = null
    }
  }, 60_000)

  it('runtimeTurnSettledTargetResolver places a Claude turn by the app’s session owner; throwing or never settling leaves the file for a later drain, logged', async () => {
    for (const behaviour of ['answer', 'throw', 'never'] as const) {
      const owner = { teamName: 'forge', memberName: 'bob' }
      const h = start({ sessionOwner: callback(behaviour, owner) as app.ScratchServices['sessionOwner'] })
      const env = await app.runtimeEnvironmentFor(path.join(h.root, 'teams'), 'claude')
      const spoolRoot = env?.AGENT_TEAMS_RUNTIME_TURN_SETTLED_SPOOL_ROOT ?? path.join(h.root, 'teams/.member-work-sync/runtime-hooks')
      fs.mkdirSync(path.join(spoolRoot, 'incoming'), { recursive: true })
      const name = '20261122T095900000Z-4242-lead.claude.json'
      fs.writeFileSync(path.join(spoolRoot, 'incoming', name), JSON.stringify({ session_id: 'lead-session', hook_event_name: 'Stop', cwd: h.root }))
      const summary = await h.feature.drainRuntimeTurnSettledEvents()
      if (behaviour === 'answer') {
        expect(summary).toMatchObject({ claimed: 1, enqueued: 1, failed: 0 })
        expect(readJson(path.join(spoolRoot, 'processed', `${name}.meta.json`))).toMatchObject({ outcome: 'enqueued', teamName: 'forge', memberName: 'bob' })
      } else {
        expect(summary).toMatchObject({ claimed: 1, enqueued: 0, failed: 1 })
        expect(fs.readdirSync(path.join(spoolRoot, 'incoming'))).toEqual([name])
        const code = behaviour === 'throw' ? 'MWS_LOG_HOST_CALLBACK_FAILED' : 'MWS_LOG_HOST_CALLBACK_TIMED_OUT'
        await until(() => (h.codes().includes(code) ? true : undefined))
      }
      await app.shutdown(h.ipc as never)
      current = null
    }
  }, 60_000)

  it('a never-settling callback holds neither the queue nor dispose', async () => {
    const h = start({ autoStart: true, clock: undefined, runtimeSnapshot: () => new Promise(() => {}), canDispatch: () => new Promise(() => {}) })
    // Kinds the app emits and the addon does not route are accepted.
    app.notifyTeamChange({ type: 'lead-context', teamName: 'forge', detail: 'ignored' })
    app.notifyTeamChange({ type: 'member-advisory', teamName: 'forge', detail: 'ignored' })
    app.notifyTeamChange({ type: 'task', teamName: 'forge', taskId: '1', taskSignalKind: 'change' })
    // The lead going offline re-checks every member at once: the queue
    // runs each reconcile past the unanswered isTeamActive and canDispatchNudges.
    app.notifyTeamChange({ type: 'lead-activity', teamName: 'forge', detail: 'offline' })
    await until(() => (h.feature.getQueueDiagnostics().reconciled >= 4 ? true : undefined), 15_000)
    // The diagnostics route serves the queue as the app's does.
    // Two distinct events (an identical one still waiting would be merged
    // before routing): jack owns tasks 1 and 2.
    app.notifyTeamChange({ type: 'task', teamName: 'forge', taskId: '1' })
    app.notifyTeamChange({ type: 'task', teamName: 'forge', taskId: '2' })
    const diagnostics = await until(() => {
      const queue = app.routes.diagnostics().queue!
      const jack = queue.queuedItems.find((item) => item.memberName === 'jack')
      return jack?.triggerReasonCounts.task_changed === 2 ? queue : undefined
    }, 15_000)
    expect(diagnostics.runningItems).toEqual(expect.any(Array))
    expect(diagnostics.oldestQueuedAgeMs).toEqual(expect.any(Number))
    const item = diagnostics.queuedItems.find((i) => i.memberName === 'jack')!
    expect(Date.parse(item.firstQueuedAt)).toBeLessThanOrEqual(Date.parse(item.lastQueuedAt))
    expect(Date.parse(item.runAt)).toBeLessThanOrEqual(Date.parse(item.maxRunAt))
    expect(loggedWith(h, 'MWS_LOG_HOST_CALLBACK_TIMED_OUT', 'isTeamActive')).toBeDefined()
    expect(loggedWith(h, 'MWS_LOG_HOST_CALLBACK_TIMED_OUT', 'canDispatchNudges')).toBeDefined()
    // A dispatch waiting on canDispatchNudges: dispose ends its wait.
    const dispatching = h.feature.dispatchDueNudges(['forge'])
    await app.shutdown(h.ipc as never)
    current = null
    expect((await dispatching).claimed).toBe(0)
  })

  it('deps and requests with unknown keys are refused with MWS_INVALID_ARGUMENT naming the key; forceNudge refreshes', async () => {
    const { createMemberWorkSyncFeature } = await import('member-work-sync/electron')
    expect(() => createMemberWorkSyncFeature({ teamsBasePath: '/tmp/x', isTeamActiv: () => true } as never)).toThrow(
      expect.objectContaining({ code: 'MWS_INVALID_ARGUMENT', message: expect.stringContaining('isTeamActiv') }),
    )
    const h = start()
    await expect(h.feature.refreshStatus({ teamName: 'forge', memberName: 'jack', force: true } as never)).rejects.toMatchObject({
      code: 'MWS_INVALID_ARGUMENT',
      message: expect.stringContaining('request.force'),
    })
    const forced = await app.routes.refresh('forge', 'jack', { forceNudge: true })
    expect(forced!.state).toBe('needs_sync')
    expect(forced!.reportToken).toBeDefined()
  })

  it('IPC: the four channels answer through the feature, refuse bad requests, and are removed on shutdown', async () => {
    const h = start()
    expect([...h.ipc.handlers.keys()].sort()).toEqual([
      'member-work-sync:getMetrics',
      'member-work-sync:getStatus',
      'member-work-sync:refreshStatus',
      'member-work-sync:report',
    ])
    const status: any = await h.ipc.invoke('member-work-sync:refreshStatus', { teamName: 'forge', memberName: 'jack' })
    expect(status.state).toBe('needs_sync')
    const metrics: any = await h.ipc.invoke('member-work-sync:getMetrics', { teamName: 'forge' })
    expect(metrics.teamName).toBe('forge')
    const report: any = await h.ipc.invoke('member-work-sync:report', {
      teamName: 'forge',
      memberName: 'jack',
      state: 'still_working',
      agendaFingerprint: status.agenda.fingerprint,
      reportToken: status.reportToken,
    })
    expect(report.accepted).toBe(true)
    await expect(h.ipc.invoke('member-work-sync:getStatus', null)).rejects.toMatchObject({ code: 'MWS_INVALID_ARGUMENT' })
    expect(h.logged.find((e) => e.level === 'error' && e.message.includes('get member work sync status'))).toBeDefined()
    await app.shutdown(h.ipc as never)
    current = null
    expect(h.ipc.handlers.size).toBe(0)
  })

  it('the environment builder works before any feature exists; runtime-activity helpers read the snapshot as the app does', async () => {
    const root = copyExampleRoot()
    const env = await app.runtimeEnvironmentFor(path.join(root, 'teams'), 'codex')
    expect(Object.keys(env!)).toEqual(['AGENT_TEAMS_RUNTIME_TURN_SETTLED_SPOOL_ROOT'])
    expect(await app.runtimeEnvironmentFor(path.join(root, 'teams'), 'claude')).toBeNull()
    const electron = await import('member-work-sync/electron')
    const lead = { memberName: 'team-lead', alive: true, backendType: 'lead' as const, pidSource: 'lead_process' as const }
    expect(electron.hasWorkSyncActiveRuntime({ members: { lead } })).toBe(false)
    expect(electron.hasWorkSyncReachableRuntime({ members: { lead } })).toBe(true)
    expect(electron.isRuntimeMemberActiveForWorkSync({ members: { lead } }, 'team-lead')).toBe(true)
    const bootstrap = { memberName: 'jack', alive: true, livenessKind: 'confirmed_bootstrap' as const, pidSource: 'runtime_bootstrap' as const }
    expect(electron.isRuntimeEntryActiveForWorkSync(bootstrap)).toBe(false)
    const uncertain = { memberName: 'jack', alive: false, runtimeDiagnostic: 'ps failed; process table unavailable' }
    expect(electron.hasUncertainWorkSyncRuntimeActivity({ members: { jack: uncertain } })).toBe(true)
    expect(electron.isRuntimeMemberActivityUncertainForWorkSync({ members: { jack: uncertain } }, 'Jack')).toBe(true)
  })
})
