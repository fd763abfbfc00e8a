// Gateway mode (`storage: { gateway }`): the addon inside the app's Electron
// process calls the app's storage gateway and never opens app.db itself.
// The gateway here is the reference's own (its worker core and
// InProcessGateway, bundled from the mirror by scripts/sqlite-reference and
// run on better-sqlite3 12); the failure cases use a plain object.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { createMemberWorkSyncFeature } from '../electron.js'
import { MemberWorkSync } from '../index.js'
import { copyExampleRoot, readJson, tempDir } from './helpers'
// @ts-ignore: plain ES module without types
import { loadReference, referenceStore, rowsOf } from '../scripts/sqlite-reference/record.mjs'

const NOW = Date.parse('2026-11-22T10:00:00.000Z')
const MIRROR = process.env.MWS_REFERENCE_MIRROR ?? '/work/.mirror/777genius+agent-teams-ai/repo'
/**
 * A folder whose node_modules has better-sqlite3 12, drizzle-orm and esbuild (README, "The app's SQLite
 * store"). Not dev dependencies: better-sqlite3 compiles from source where no prebuilt binary can be
 * downloaded, which would make every `npm install` need a C++ toolchain.
 */
const DEPS = process.env.MWS_SQLITE_REF_DEPS ?? path.join(os.tmpdir(), 'mws-sqlite-ref')

function referenceAvailable(): string | null {
  if (!fs.existsSync(MIRROR)) return `no reference mirror at ${MIRROR} (MWS_REFERENCE_MIRROR)`
  const req = createRequire(path.join(path.resolve(DEPS), 'package.json'))
  for (const dep of ['better-sqlite3', 'drizzle-orm', 'esbuild']) {
    try {
      req.resolve(dep)
    } catch {
      return `${dep} is not installed under ${DEPS} (MWS_SQLITE_REF_DEPS)`
    }
  }
  return null
}
const missing = referenceAvailable()

/** Every member-work-sync method of the app's gateway, as its ports.ts names them. */
const METHODS = [
  'ping',
  'statusRead',
  'statusWrite',
  'statusList',
  'metricEventsList',
  'reportsAppend',
  'reportsListPending',
  'reportsMarkProcessed',
  'outboxEnsurePending',
  'outboxClaimDue',
  'outboxMarkDelivered',
  'outboxMarkSuperseded',
  'outboxMarkFailed',
  'outboxCountRecentDelivered',
  'outboxCountDeliveredForAgenda',
  'outboxFindDeliveredReviewPickupEventIds',
  'outboxFindRecentRecoveryByIntent',
  'listTeamSnapshot',
  'importTeam',
  'recordStoreImport',
  'hasStoreImport',
] as const

type Call = { method: string; args: unknown[] }

/** `target` with every gateway method recorded in `calls` before it runs. */
function recording(target: any, calls: Call[]): any {
  const gateway: any = {}
  for (const method of METHODS) {
    gateway[method] = function (this: unknown, ...args: unknown[]) {
      expect(this).toBe(gateway)
      calls.push({ method, args: structuredClone(args) })
      return target[method](...args)
    }
  }
  return gateway
}

/** A gateway answering like an empty database; `overrides` replace methods. */
function emptyGateway(calls: Call[], overrides: Record<string, (...args: any[]) => any> = {}): any {
  const empty: Record<string, (...args: any[]) => any> = {
    ping: async () => ({ driver: 'better-sqlite3', databasePath: '/nowhere/app.db', schemaVersion: 4, integrity: 'ok' }),
    statusRead: async () => null,
    statusList: async () => [],
    metricEventsList: async () => [],
    reportsListPending: async () => [],
    outboxClaimDue: async () => [],
    outboxCountRecentDelivered: async () => 0,
    outboxCountDeliveredForAgenda: async () => 0,
    outboxFindDeliveredReviewPickupEventIds: async () => [],
    outboxFindRecentRecoveryByIntent: async () => null,
    listTeamSnapshot: async () => ({ statuses: [], reportIntents: [], outboxItems: [], metricEvents: [] }),
    hasStoreImport: async () => false,
  }
  const target: any = {}
  for (const method of METHODS) target[method] = overrides[method] ?? empty[method] ?? (async () => undefined)
  return recording(target, calls)
}

/** Descriptors of this process open on `db` or its -wal / -shm (Linux). */
function descriptorsOn(db: string): string[] {
  const dir = '/proc/self/fd'
  const found: string[] = []
  for (const fd of fs.readdirSync(dir)) {
    let target: string
    try {
      target = fs.readlinkSync(path.join(dir, fd))
    } catch {
      continue
    }
    if (target === db || target.startsWith(`${db}-`)) found.push(`${fd}->${target}`)
  }
  return found.sort()
}

/** Two hours of calm shadow history for five members of team forge, as metric event rows. */
function shadowHistory() {
  return Array.from({ length: 30 }, (_, i) => {
    const event = {
      id: `h${i}`,
      teamName: 'forge',
      memberName: `m${i % 5}`,
      kind: 'status_evaluated',
      state: 'caught_up',
      agendaFingerprint: 'agenda:v1:x',
      recordedAt: new Date(NOW - 2 * 3_600_000 + i * 240_000).toISOString(),
      actionableCount: 0,
    }
    return {
      teamName: 'forge',
      id: event.id,
      memberKey: event.memberName,
      memberName: event.memberName,
      kind: event.kind,
      recordedAt: event.recordedAt,
      eventJson: JSON.stringify(event),
    }
  })
}

/** The same steps for either mode: statuses, metrics, nudges planned and delivered, a report, a later pass. */
async function script(sync: MemberWorkSync) {
  const out: unknown[] = []
  out.push((await sync.refreshTeam({ teamName: 'forge' })).map((s) => [s.memberName, s.state, s.agenda.fingerprint]))
  out.push((await sync.getMetrics({ teamName: 'forge' })).phase2Readiness.state)
  // A refresh plans its member's nudge (phase 2 is ready); the dispatch claims and delivers them.
  for (const member of ['jack', 'bob']) out.push((await sync.refreshStatus({ teamName: 'forge', memberName: member })).state)
  out.push(await sync.dispatchDueNudges(['forge']))
  // The pending intents the app's controller recorded are validated and marked processed.
  out.push(await sync.replayPendingReports(['forge']))
  const status = await sync.getStatus({ teamName: 'forge', memberName: 'jack' })
  const report = await sync.report({
    teamName: 'forge',
    memberName: 'jack',
    state: 'still_working',
    agendaFingerprint: status.agenda.fingerprint,
    reportToken: status.reportToken,
  })
  out.push([report.accepted, report.state])
  sync.setClockForTesting(NOW + 6 * 60_000)
  out.push((await sync.refreshTeam({ teamName: 'forge' })).map((s) => [s.memberName, s.state]))
  for (const member of ['jack', 'bob', 'jill']) out.push((await sync.refreshStatus({ teamName: 'forge', memberName: member })).state)
  out.push(await sync.dispatchDueNudges(['forge']))
  const metrics = await sync.getMetrics({ teamName: 'forge' })
  out.push([metrics.phase2Readiness.state, metrics.recentEvents.length])
  return out
}

function inboxes(root: string) {
  const dir = path.join(root, 'teams', 'forge', 'inboxes')
  if (!fs.existsSync(dir)) return {}
  return Object.fromEntries(fs.readdirSync(dir).sort().map((f) => [f, readJson(path.join(dir, f))]))
}

function logs() {
  const entries: any[] = []
  return { entries, onLog: (entry: any) => entries.push(entry), codes: () => entries.map((e) => e.code) }
}

describe.skipIf(missing !== null)(`gateway mode on the reference's own store${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let reference: any
  let work: string
  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-gateway-'))
    reference = await loadReference({ mirror: MIRROR, deps: DEPS, work })
  }, 120_000)
  afterAll(() => {
    if (work) fs.rmSync(work, { recursive: true, force: true })
  }, 120_000)

  /** A fresh reference database with the shadow history; its core stays open when `keep`. */
  async function seeded(name: string, keep: boolean) {
    const db = path.join(work, name, 'storage', 'app.db')
    fs.mkdirSync(path.dirname(db), { recursive: true })
    const { core, gateway } = referenceStore(reference, db)
    await gateway.ping()
    await gateway.importTeam('forge', { statuses: [], reportIntents: [], outboxItems: [], metricEvents: shadowHistory() })
    // Reports the app's controller could not deliver, recorded as pending intents.
    for (const [id, memberName, fingerprint] of [['intent-jack', 'jack', 'agenda:v1:stale'], ['intent-bob', 'Bob', 'agenda:v1:other']]) {
      await gateway.reportsAppend(
        reference.mod.reportIntentToRecord({
          id,
          teamName: 'forge',
          memberName,
          request: { teamName: 'forge', memberName, state: 'caught_up', agendaFingerprint: fingerprint },
          reason: 'control_api_unavailable',
          status: 'pending',
          recordedAt: new Date(NOW - 60_000).toISOString(),
        }),
      )
    }
    if (!keep) core.close()
    return { db, core, gateway }
  }

  function rows(db: string) {
    const d = new reference.Database(db, { readonly: true })
    try {
      return rowsOf(d)
    } finally {
      d.close()
    }
  }

  it('every store op is a call of the app gateway, the addon holds no descriptor of app.db*, and the rows equal direct mode and the reference mappers', async () => {
    const a = await seeded('gateway', true)
    const b = await seeded('direct', false)
    const calls: Call[] = []
    const gateway = recording(a.gateway, calls)
    const before = descriptorsOn(a.db)
    expect(before.length).toBeGreaterThan(0) // the gateway's own connection

    const rootA = copyExampleRoot()
    const rootB = copyExampleRoot()
    // One report-token secret for both roots, so the tokens in the statuses match.
    for (const root of [rootA, rootB]) {
      const secret = path.join(root, 'teams', 'forge', '.member-work-sync', 'report-token-secret.json')
      fs.mkdirSync(path.dirname(secret), { recursive: true })
      fs.writeFileSync(secret, JSON.stringify({ schemaVersion: 1, secret: 'gateway-test-secret-0123456789abcdef' }), { mode: 0o600 })
    }
    const log = logs()
    const viaGateway = new MemberWorkSync({ claudeRoot: rootA, autoStart: false, clock: { nowMs: NOW }, storage: { gateway }, onLog: log.onLog })
    const direct = new MemberWorkSync({ claudeRoot: rootB, autoStart: false, clock: { nowMs: NOW }, storage: { sqlitePath: b.db } })
    let answers: [unknown[], unknown[]]
    let during: string[]
    try {
      const first = await script(viaGateway)
      during = descriptorsOn(a.db)
      answers = [first, await script(direct)]
      // The census sees an addon connection where there is one (direct mode's, on the other file).
      expect(descriptorsOn(b.db).length).toBeGreaterThan(0)
    } finally {
      await viaGateway.dispose()
      await direct.dispose()
    }

    // The addon in this process opened nothing of app.db: the descriptors are the gateway's own.
    expect(during).toEqual(before)
    expect(descriptorsOn(a.db)).toEqual(before)
    // The session was decided once, by the first ping, and logged.
    expect(calls[0].method).toBe('ping')
    expect(calls.filter((c) => c.method === 'ping')).toHaveLength(1)
    expect(log.codes()).toContain('MWS_LOG_STORAGE_SQLITE_SESSION')
    // Statuses, metric events, intents and the outbox state machine all went through the gateway.
    const used = new Set(calls.map((c) => c.method))
    for (const method of ['statusRead', 'statusWrite', 'statusList', 'metricEventsList', 'reportsListPending', 'reportsMarkProcessed', 'outboxEnsurePending', 'outboxClaimDue', 'outboxMarkDelivered', 'listTeamSnapshot']) {
      expect(used, method).toContain(method)
    }
    // The steps planned and delivered nudges (else the outbox comparison below proves little).
    const outboxRows = rows(a.db).member_work_sync_outbox
    expect(outboxRows.length).toBeGreaterThan(0)
    expect(outboxRows.some((r: any) => r.status === 'delivered')).toBe(true)

    // Same answers, same inbox rows, and the same rows in all four tables and store_imports.
    expect(rows(a.db).member_work_sync_report_intents.map((r: any) => [r.id, r.status])).toEqual([
      ['intent-bob', 'rejected'],
      ['intent-jack', 'rejected'],
    ])
    expect(answers[0]).toEqual(answers[1])
    expect(inboxes(rootA)).toEqual(inboxes(rootB))
    expect(rows(a.db)).toEqual(rows(b.db))
    // Nothing of the state went to the JSON files.
    const stateFiles = (fs.readdirSync(path.join(rootA, 'teams', 'forge'), { recursive: true }) as string[]).filter((f) =>
      /(^|\/)(status|outbox|reports|metrics)\.json$/.test(f),
    )
    expect(stateFiles).toEqual([])

    // The records the addon handed over are what the reference's own store
    // maps the same domain values to: replay the calls through its store
    // (statuses and nudges from their domain JSON, the rest as recorded).
    const c = await seeded('replay', true)
    const { store } = referenceStore(reference, c.db)
    for (const { method, args } of calls) {
      const [input] = args as any[]
      switch (method) {
        case 'statusWrite':
          await store.write(JSON.parse(input.statusJson))
          break
        case 'outboxEnsurePending':
          await store.ensurePending({
            teamName: input.record.teamName,
            memberName: input.record.memberName,
            id: input.record.id,
            agendaFingerprint: input.record.agendaFingerprint,
            payloadHash: input.record.payloadHash,
            payload: JSON.parse(input.record.payloadJson),
            nowIso: input.nowIso,
          })
          break
        case 'reportsAppend':
        case 'reportsMarkProcessed':
        case 'outboxClaimDue':
        case 'outboxMarkDelivered':
        case 'outboxMarkSuperseded':
        case 'outboxMarkFailed':
          await (c.gateway as any)[method](...args)
          break
        default:
          // reads and ping change nothing
          break
      }
    }
    c.core.close()
    expect(rows(c.db)).toEqual(rows(a.db))
    a.core.close()
  })

  it("a JSON session hydrates the team's files from a clean replica exactly as the reference's JSON session does", async () => {
    // Live JSON as the addon writes it (a plain refresh), then a replica of a later SQLite session.
    const base = copyExampleRoot()
    const plain = new MemberWorkSync({ claudeRoot: base, autoStart: false, clock: { nowMs: NOW } })
    try {
      await plain.refreshTeam({ teamName: 'forge' })
    } finally {
      await plain.dispose()
    }
    const memberStatus = (m: string) => readJson(path.join(base, `teams/forge/members/${m}/.member-work-sync/status.json`)).status
    const later = (m: string, state: string) => ({ ...memberStatus(m), state, evaluatedAt: new Date(NOW + 3_600_000).toISOString() })
    const event = (id: string, memberName: string, ms: number) => ({
      id, teamName: 'FORGE', memberName, kind: 'would_nudge', state: 'needs_sync', agendaFingerprint: 'agenda:v1:x', actionableCount: 2, recordedAt: new Date(ms).toISOString(),
    })
    const envelope = {
      schemaVersion: 1,
      state: 'clean',
      updatedAt: new Date(NOW + 3_600_000).toISOString(),
      snapshot: {
        statuses: [later('jack', 'blocked'), { ...memberStatus('bob'), evaluatedAt: new Date(NOW - 3_600_000).toISOString(), state: 'inactive' }],
        reportIntents: [{
          id: 'intent-1', teamName: 'forge', memberName: 'jack', reason: 'control_api_unavailable', status: 'accepted',
          request: { teamName: 'forge', memberName: 'jack', state: 'caught_up', agendaFingerprint: 'agenda:v1:x' },
          recordedAt: new Date(NOW - 60_000).toISOString(), processedAt: new Date(NOW).toISOString(), resultCode: 'accepted',
        }],
        outboxItems: [],
        metricEvents: Array.from({ length: 230 }, (_, i) => event(`ev-${String(i).padStart(3, '0')}`, i % 2 ? 'jack' : 'bob', NOW - 230_000 + i * 1000)),
        filesToArchive: [],
      },
    }
    const withReplica = () => {
      const root = tempDir('mws-hydrate-')
      fs.cpSync(base, root, { recursive: true })
      const file = path.join(root, 'teams/forge/.member-work-sync/sqlite-fallback-replica.json')
      fs.writeFileSync(file, `${JSON.stringify(envelope, null, 2)}\n`)
      return root
    }
    const theirs = withReplica()
    const ours = withReplica()
    const { mod } = reference
    const paths = new mod.MemberWorkSyncStorePaths(path.join(theirs, 'teams'))
    const jsonStore = new mod.JsonMemberWorkSyncStore(paths)
    const selector = { select: async (_sqlite: unknown, json: unknown) => json, getBackendInfo: () => null }
    const store = new mod.BackendSelectingMemberWorkSyncStore(selector, null, jsonStore, { gateway: null, paths, fallbackRequiresReplica: false })
    await store.run('forge', false, () => { throw new Error('not a SQLite session') }, async () => null)
    const sync = new MemberWorkSync({ claudeRoot: ours, autoStart: false, clock: { nowMs: NOW }, storage: { gateway: emptyGateway([], { ping: () => Promise.reject(new Error('down')) }) } })
    try {
      await sync.getMetrics({ teamName: 'forge' })
    } finally {
      await sync.dispose()
    }
    /** The team's member-work-sync files, member.meta.json's wall-clock updatedAt blanked. */
    const files = (root: string) => {
      const out: Record<string, string> = {}
      const walk = (dir: string) => {
        for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
          const full = path.join(dir, entry.name)
          if (entry.isDirectory()) walk(full)
          else if (full.includes('.member-work-sync') || entry.name === 'member.meta.json') {
            out[path.relative(path.join(root, 'teams', 'forge'), full)] = fs.readFileSync(full, 'utf8').replace(/"updatedAt": "[^"]*"/, '"updatedAt": "-"')
          }
        }
      }
      walk(path.join(root, 'teams', 'forge'))
      return out
    }
    const expected = files(theirs)
    const got = files(ours)
    for (const root of [base, theirs, ours]) fs.rmSync(root, { recursive: true, force: true })
    expect(Object.keys(expected)).toContain('members/jack/.member-work-sync/reports.json')
    expect(JSON.parse(expected['.member-work-sync/indexes/metrics.json']).recentEvents).toHaveLength(200)
    expect(got).toEqual(expected)
  })

  it('an op that fails mid-session fails its call, naming the op, and the session stays on the gateway', async () => {
    const a = await seeded('midsession', true)
    const calls: Call[] = []
    let failWrites = true
    const target = Object.create(a.gateway)
    target.statusWrite = (...args: unknown[]) => (failWrites ? Promise.reject(new Error('worker exited')) : a.gateway.statusWrite(...args))
    const sync = new MemberWorkSync({ claudeRoot: copyExampleRoot(), autoStart: false, clock: { nowMs: NOW }, storage: { gateway: recording(target, calls) } })
    try {
      await expect(sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })).rejects.toMatchObject({
        code: 'MWS_IO',
        message: expect.stringContaining('mws.status.write (statusWrite) failed: rejected'),
      })
      failWrites = false
      const status = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
      expect(status.memberName).toBe('jack')
      expect(calls.filter((c) => c.method === 'ping')).toHaveLength(1)
      expect(rows(a.db).member_work_sync_status.map((r: any) => r.member_key)).toEqual(['jack'])
    } finally {
      await sync.dispose()
      a.core.close()
    }
  })
})

describe('gateway mode: the session decision and failures', () => {
  const options = (gateway: unknown, extra: Record<string, unknown> = {}, onLog?: (e: any) => void) => ({
    claudeRoot: copyExampleRoot(),
    autoStart: false,
    clock: { nowMs: NOW },
    storage: { gateway, callTimeoutMs: 200, ...extra },
    ...(onLog ? { onLog } : {}),
  })

  // (case, ping, reason the log gives)
  const unavailable: [string, () => any, RegExp][] = [
    ['throws', () => { throw new Error('worker bundle missing') }, /ping threw or returned no promise: .*worker bundle missing/],
    ['rejects', () => Promise.reject(new Error('ABI mismatch')), /ping rejected: .*ABI mismatch/],
    ['never settles', () => new Promise(() => {}), /ping did not settle within 200 ms/],
  ]
  it.each(unavailable)('a first ping that %s makes a JSON session: the state goes to the JSON files and the gateway is not asked again', async (_case, ping, reason) => {
    const calls: Call[] = []
    const log = logs()
    const opts = options(emptyGateway(calls, { ping }), {}, log.onLog)
    const sync = new MemberWorkSync(opts)
    try {
      const statuses = await sync.refreshTeam({ teamName: 'forge' })
      expect(statuses.length).toBe(5)
      await sync.getMetrics({ teamName: 'forge' })
    } finally {
      await sync.dispose()
    }
    expect(calls.map((c) => c.method)).toEqual(['ping'])
    const entry = log.entries.find((e) => e.code === 'MWS_LOG_STORAGE_JSON_FALLBACK')
    expect(entry).toMatchObject({ level: 'error', context: { reason: expect.stringMatching(reason) } })
    expect(fs.existsSync(path.join(opts.claudeRoot, 'teams/forge/members/jack/.member-work-sync/status.json'))).toBe(true)
  })

  it("a ping that resolves anything, even false, is a SQLite session, as the app's selector decides", async () => {
    const calls: Call[] = []
    const log = logs()
    const opts = options(emptyGateway(calls, { ping: async () => false }), {}, log.onLog)
    const sync = new MemberWorkSync(opts)
    try {
      await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
    } finally {
      await sync.dispose()
    }
    expect(log.codes()).toContain('MWS_LOG_STORAGE_SQLITE_SESSION')
    expect(calls.map((c) => c.method)).toContain('statusWrite')
    expect(fs.existsSync(path.join(opts.claudeRoot, 'teams/forge/members/jack/.member-work-sync/status.json'))).toBe(false)
  })

  it("with the app's selector its decision is taken and the gateway is not pinged", async () => {
    for (const [kind, statusFile] of [['json-fallback', true], ['sqlite', false]] as const) {
      const calls: Call[] = []
      const asked: unknown[][] = []
      const selector = {
        select(...args: unknown[]) {
          asked.push(args)
          return Promise.resolve(kind === 'sqlite' ? args[0] : args[1])
        },
        getBackendInfo: () => ({ driver: 'better-sqlite3', databasePath: '/x/app.db', schemaVersion: 4, integrity: 'ok' }),
      }
      const log = logs()
      const opts = options(emptyGateway(calls), { selector }, log.onLog)
      const sync = new MemberWorkSync(opts)
      try {
        await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
        await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
      } finally {
        await sync.dispose()
      }
      expect(asked).toEqual([['sqlite', 'json-fallback']])
      expect(calls.some((c) => c.method === 'ping')).toBe(false)
      expect(calls.some((c) => c.method === 'statusWrite')).toBe(!statusFile)
      expect(fs.existsSync(path.join(opts.claudeRoot, 'teams/forge/members/jack/.member-work-sync/status.json'))).toBe(statusFile)
      if (kind === 'sqlite') {
        expect(log.entries.find((e) => e.code === 'MWS_LOG_STORAGE_SQLITE_SESSION')).toMatchObject({ context: { databasePath: '/x/app.db', integrity: 'ok' } })
      }
    }
  })

  it('an op that never settles fails its call after callTimeoutMs, naming the op', async () => {
    const calls: Call[] = []
    const sync = new MemberWorkSync(options(emptyGateway(calls, { statusRead: () => new Promise(() => {}) })))
    try {
      await expect(sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })).rejects.toMatchObject({
        code: 'MWS_IO',
        message: expect.stringContaining('mws.status.read (statusRead) failed: did not settle within 200 ms'),
      })
    } finally {
      await sync.dispose()
    }
  })

  it('an answer of the wrong shape fails the call, naming the op', async () => {
    const sync = new MemberWorkSync(options(emptyGateway([], { statusList: async () => 'rows' })))
    try {
      await expect(sync.getMetrics({ teamName: 'forge' })).rejects.toMatchObject({
        code: 'MWS_IO',
        message: expect.stringContaining('mws.status.list (statusList) failed: answered a value of the wrong shape'),
      })
    } finally {
      await sync.dispose()
    }
  })

  it("the Electron entry hands the app's internalStorageBackend to gateway mode", async () => {
    const calls: Call[] = []
    const selector = { select: (sqlite: unknown) => Promise.resolve(sqlite), getBackendInfo: () => null }
    const root = copyExampleRoot()
    const feature = createMemberWorkSyncFeature({
      teamsBasePath: path.join(root, 'teams'),
      autoStart: false,
      clock: { nowMs: NOW },
      internalStorageBackend: { gateway: emptyGateway(calls), selector, fallbackRequiresReplica: false },
    })
    try {
      await feature.refreshStatus({ teamName: 'forge', memberName: 'jack' })
    } finally {
      await feature.dispose()
    }
    expect(calls.map((c) => c.method)).toContain('statusWrite')
    expect(calls.find((c) => c.method === 'statusWrite')!.args[0]).toMatchObject({ teamName: 'forge', memberKey: 'jack', memberName: 'jack' })
    expect(fs.existsSync(path.join(root, 'teams/forge/members/jack/.member-work-sync/status.json'))).toBe(false)
  })

  // (storage, message)
  const invalid: [unknown, RegExp][] = [
    [{ gateway: 1 }, /options\.storage\.gateway must be the app's storage gateway object/],
    [{ gateway: { ping: async () => ({}) } }, /options\.storage\.gateway is not the app's storage gateway: no method statusRead, statusWrite/],
    [{ gateway: 'G', sqlitePath: 'app.db' }, /options\.storage\.sqlitePath is not an option with a gateway/],
    [{ gateway: 'G', callTimeoutMs: 5 }, /options\.storage\.callTimeoutMs must be an integer from 10 to 120000/],
    [{ gateway: 'G', selector: { select: async () => 'sqlite' } }, /options\.storage\.selector must have the methods select and getBackendInfo/],
  ]
  it.each(invalid)('refuses storage %j', (storage: any, message) => {
    if (storage.gateway === 'G') storage.gateway = emptyGateway([])
    expect(() => new MemberWorkSync({ claudeRoot: copyExampleRoot(), autoStart: false, storage } as any)).toThrow(
      expect.objectContaining({ code: 'MWS_INVALID_ARGUMENT', message: expect.stringMatching(message) }),
    )
  })
})

describe('gateway mode: a JSON session and the replica and purge markers', () => {
  const rejecting = (calls: Call[]) => emptyGateway(calls, { ping: () => Promise.reject(new Error('ABI mismatch')) })
  const open = (root: string, gateway: unknown, extra: Record<string, unknown> = {}) =>
    new MemberWorkSync({ claudeRoot: root, autoStart: false, clock: { nowMs: NOW }, storage: { gateway, callTimeoutMs: 200, ...extra } })
  const replicaPath = (root: string) => path.join(root, 'teams/forge/.member-work-sync/sqlite-fallback-replica.json')
  const jackStatus = (root: string) => path.join(root, 'teams/forge/members/jack/.member-work-sync/status.json')
  const writeReplica = (root: string, envelope: unknown) => {
    fs.mkdirSync(path.dirname(replicaPath(root)), { recursive: true })
    fs.writeFileSync(replicaPath(root), `${JSON.stringify(envelope, null, 2)}\n`)
  }

  // (case, replica envelope or null, fallbackRequiresReplica, the app's reason)
  const unsafe: [string, unknown, boolean, string][] = [
    ['dirty', { schemaVersion: 1, state: 'dirty', updatedAt: '2026-11-22T09:00:00.000Z' }, false, 'last SQLite publication is dirty'],
    ['missing where required', null, true, 'replica is missing'],
    ['of another envelope', { schemaVersion: 2, state: 'clean', updatedAt: 'x' }, false, 'replica envelope is invalid'],
  ]
  it.each(unsafe)('a replica %s fails every call of the team with MWS_IO, naming the team and the replica, and writes nothing', async (_case, envelope, required, reason) => {
    const root = copyExampleRoot()
    if (envelope !== null) writeReplica(root, envelope)
    const before = envelope === null ? null : fs.readFileSync(replicaPath(root), 'utf8')
    const calls: Call[] = []
    const sync = open(root, rejecting(calls), { fallbackRequiresReplica: required })
    try {
      for (let call = 0; call < 2; call += 1) {
        const error: any = await sync.refreshTeam({ teamName: 'forge' }).then(() => null, (e) => e)
        expect(error).toMatchObject({ code: 'MWS_IO' })
        expect(error.message).toContain(`Internal storage JSON fallback is unsafe: ${reason}`)
        expect(error.message).toContain('"forge"')
        expect(error.message).toContain(replicaPath(root))
      }
    } finally {
      await sync.dispose()
    }
    expect(calls.map((c) => c.method)).toEqual(['ping'])
    expect(fs.existsSync(jackStatus(root))).toBe(false)
    expect(envelope === null ? fs.existsSync(replicaPath(root)) : fs.readFileSync(replicaPath(root), 'utf8')).toBe(before ?? false)
  })

  it('a clean replica is restored into the JSON files before the first call is served, and never rewritten', async () => {
    // A status as the addon stores it, then a later one in the replica (the last SQLite session's).
    const first = copyExampleRoot()
    const plain = new MemberWorkSync({ claudeRoot: first, autoStart: false, clock: { nowMs: NOW } })
    try {
      await plain.refreshTeam({ teamName: 'forge' })
    } finally {
      await plain.dispose()
    }
    const stored = readJson(jackStatus(first)).status
    const later = { ...stored, state: 'blocked', evaluatedAt: '2026-11-22T11:00:00.000Z' }
    const root = copyExampleRoot()
    writeReplica(root, {
      schemaVersion: 1,
      state: 'clean',
      updatedAt: '2026-11-22T11:00:01.000Z',
      snapshot: { statuses: [later], reportIntents: [], outboxItems: [], metricEvents: [], filesToArchive: [] },
    })
    const replica = fs.readFileSync(replicaPath(root), 'utf8')
    const calls: Call[] = []
    const sync = open(root, rejecting(calls))
    try {
      const metrics: any = await sync.getMetrics({ teamName: 'forge' })
      expect(readJson(jackStatus(root))).toEqual({ schemaVersion: 2, status: later })
      expect(JSON.stringify(metrics)).toContain('blocked')
    } finally {
      await sync.dispose()
    }
    expect(calls.map((c) => c.method)).toEqual(['ping'])
    expect(fs.readFileSync(replicaPath(root), 'utf8')).toBe(replica)
  })

  it('prepareTeamDeletion in a JSON session deletes the live JSON behind a purge marker left for the next SQLite session', async () => {
    const root = copyExampleRoot()
    const config = path.join(root, 'teams/forge/config.json')
    fs.writeFileSync(config, JSON.stringify({ ...readJson(config), _backupIdentityId: 'del-1' }))
    const calls: Call[] = []
    const sync = open(root, rejecting(calls))
    try {
      await sync.refreshTeam({ teamName: 'forge' })
      expect(fs.existsSync(jackStatus(root))).toBe(true)
      await sync.prepareTeamDeletion('forge', 'del-1')
    } finally {
      await sync.dispose()
    }
    expect(fs.existsSync(jackStatus(root))).toBe(false)
    expect(readJson(path.join(root, '.member-work-sync-deletions/forge.json'))).toMatchObject({
      schemaVersion: 2,
      teamName: 'forge',
      deletionIdentityId: 'del-1',
      activeJsonStateCleared: true,
    })
    expect(calls.map((c) => c.method)).toEqual(['ping'])
  })

  it("the Electron entry passes the app's fallbackRequiresReplica on", async () => {
    const root = copyExampleRoot()
    const feature = createMemberWorkSyncFeature({
      teamsBasePath: path.join(root, 'teams'),
      autoStart: false,
      clock: { nowMs: NOW },
      internalStorageBackend: { gateway: rejecting([]), fallbackRequiresReplica: true },
    })
    try {
      await expect(feature.refreshStatus({ teamName: 'forge', memberName: 'jack' })).rejects.toThrow(/replica is missing/)
    } finally {
      await feature.dispose()
    }
  })

  it('refuses a fallbackRequiresReplica that is not a boolean', () => {
    expect(() => open(copyExampleRoot(), emptyGateway([]), { fallbackRequiresReplica: 'yes' })).toThrow(
      expect.objectContaining({ code: 'MWS_INVALID_ARGUMENT', message: expect.stringMatching(/fallbackRequiresReplica must be a boolean/) }),
    )
  })
})
