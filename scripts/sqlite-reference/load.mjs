// Two processes under load on one app.db: the reference's own store (bundled from the mirror by
// record.mjs, better-sqlite3 12, its worker core in this process) and the addon's store in direct
// mode (examples/sqlite_peer.rs, another process). Both write statuses with their metric events,
// append report intents, and create, claim and deliver outbox items of one shared team, on one
// fixed clock (the app takes a claimedAt in the future for stale: two clocks apart would both
// claim an item legitimately).
//
// Checked at the end: PRAGMA integrity_check is ok; no item was claimed twice (each side's log of
// what it claimed and delivered, and every delivered row holds the generation and claimer one log
// names); the addon surfaced no error at all, SQLITE_BUSY included; and, halfway through, while
// this process holds the write lock (BEGIN IMMEDIATE, then an UPDATE that makes an item due) for
// one second, a fresh addon process's claim waits for it and then claims that item (it could not
// see it without waiting for the commit). The reference's own errors (its deferred transactions
// meet SQLITE_BUSY when the addon writes between their read and their write) are
// counted and printed, not hidden.
//
//   cargo build --release --example sqlite_peer
//   node scripts/sqlite-reference/load.mjs --mirror DIR --deps DIR [--seconds 60] [--peer FILE]
//
// --deps: as record.mjs says. --peer: the sqlite_peer executable (default
// target/release/examples/sqlite_peer). Exit code 1 when a check fails.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import readline from 'node:readline'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

import { loadReference, referenceStore } from './record.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const REPO = path.join(here, '..', '..')
const NOW = Date.parse('2026-07-07T10:00:00.000Z')
const NOW_ISO = new Date(NOW).toISOString()
const TEAM = 'shared'
const HELD_TEAM = 'held'
const MEMBERS = ['alice', 'bob', 'carol']

/** A status as the scenario writes one (needs_sync, one item, would-nudge shadow). */
export function status(team, member, evaluatedAt, n) {
  return {
    teamName: team,
    memberName: member,
    state: 'needs_sync',
    agenda: {
      teamName: team,
      memberName: member,
      generatedAt: evaluatedAt,
      fingerprint: `agenda:v1:${member}-${n % 3}`,
      items: [
        {
          taskId: `task-${n % 4}`,
          displayId: `1111111${n % 4}`,
          subject: 'Ship it',
          kind: 'work',
          assignee: member,
          priority: 'normal',
          reason: 'owned_pending_task',
          evidence: { status: 'pending', owner: member },
        },
      ],
      diagnostics: [],
    },
    shadow: { reconciledBy: 'queue', wouldNudge: true, fingerprintChanged: n % 2 === 1 },
    evaluatedAt,
    diagnostics: [],
  }
}

/** An outbox item's ensure input (the hash is the caller's; both sides only compare it). */
export function ensureInput(team, member, id, nowIso) {
  return {
    teamName: team,
    memberName: member,
    id,
    agendaFingerprint: `agenda:v1:${id}`,
    payloadHash: `hash-${id}`,
    payload: {
      to: member,
      text: 'Work sync check: continue the current task or report a blocker.',
      taskRefs: [{ teamName: team, taskId: 'task-1', displayId: '11111111' }],
      workSyncIntent: 'agenda_sync',
    },
    nowIso,
  }
}

/** Starts the addon peer; resolves with its JSON lines when it exits. */
export function startPeer(peer, args) {
  const child = spawn(peer, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  const lines = []
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    try {
      lines.push(JSON.parse(line))
    } catch {
      lines.push({ line })
    }
  })
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, lines, stderr })))
  return { child, exited, lines }
}

const errorCode = (e) => (e && e.code) || (e && /SQLITE_[A-Z_]+/.exec(String(e.message))?.[0]) || 'other'

async function main() {
  const { values } = parseArgs({
    options: { mirror: { type: 'string' }, deps: { type: 'string' }, seconds: { type: 'string' }, peer: { type: 'string' } },
  })
  if (!values.mirror || !values.deps) {
    console.error('usage: load.mjs --mirror DIR --deps DIR [--seconds 60] [--peer FILE]')
    process.exit(2)
  }
  const seconds = Number(values.seconds ?? 60)
  const peer = values.peer ?? path.join(REPO, 'target', 'release', 'examples', 'sqlite_peer')
  if (!fs.existsSync(peer)) throw new Error(`${peer} is missing: cargo build --release --example sqlite_peer`)
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-sqlite-load-'))
  const reference = await loadReference({ mirror: values.mirror, deps: values.deps, work })
  const db = path.join(work, 'storage', 'app.db')
  const { core, gateway, store } = referenceStore(reference, db)
  await gateway.ping()

  // The item of the lock test: pending in its own team, then held back for a year.
  await store.ensurePending(ensureInput(HELD_TEAM, 'alice', 'held-item', NOW_ISO))
  const raw = new reference.Database(db)
  raw.pragma('busy_timeout = 30000')
  raw.prepare("UPDATE member_work_sync_outbox SET status = 'failed_retryable', next_attempt_at = ? WHERE id = 'held-item'").run(
    new Date(NOW + 365 * 86_400_000).toISOString()
  )

  const started = Date.now()
  const deadline = started + seconds * 1000
  const addon = startPeer(peer, [
    'run',
    JSON.stringify({ store: 'sqlite', db, team: TEAM, name: 'addon', now: NOW, runMs: seconds * 1000, intents: true, ensurePerRound: 1, claimLimit: 2 }),
  ])

  const log = { claimed: [], delivered: [], lost: [] }
  const referenceErrors = {}
  const tally = { rounds: 0, statuses: 0, ensured: 0, intents: 0 }
  const failed = (op, e) => {
    const key = `${op}:${errorCode(e)}`
    referenceErrors[key] = (referenceErrors[key] || 0) + 1
  }
  let lockTest = null
  for (let round = 0; Date.now() < deadline; round++) {
    tally.rounds++
    const member = MEMBERS[round % MEMBERS.length]
    const evaluatedAt = new Date(NOW - 3_600_000 + (round % 3_000_000) + 500_000).toISOString()
    try {
      await store.write(status(TEAM, member, evaluatedAt, round))
      await store.read({ teamName: TEAM, memberName: member })
      tally.statuses++
    } catch (e) {
      failed('status', e)
    }
    try {
      await gateway.reportsAppend(
        reference.mod.reportIntentToRecord({
          id: `reference-intent-${round}`,
          teamName: TEAM,
          memberName: member,
          request: { teamName: TEAM, memberName: member, state: 'caught_up', agendaFingerprint: 'agenda:v1:abc' },
          reason: 'control_api_unavailable',
          status: 'pending',
          recordedAt: evaluatedAt,
        })
      )
      tally.intents++
    } catch (e) {
      failed('intent', e)
    }
    try {
      await store.ensurePending(ensureInput(TEAM, member, `reference-${round}`, NOW_ISO))
      tally.ensured++
    } catch (e) {
      failed('ensure', e)
    }
    let claimed = []
    try {
      claimed = await store.claimDue({ teamName: TEAM, claimedBy: 'reference', nowIso: NOW_ISO, limit: 2 })
    } catch (e) {
      failed('claim', e)
    }
    for (const item of claimed) {
      log.claimed.push({ id: item.id, gen: item.attemptGeneration })
      try {
        await store.markDelivered({ teamName: TEAM, id: item.id, attemptGeneration: item.attemptGeneration, deliveredMessageId: item.id, nowIso: NOW_ISO })
        log.delivered.push({ id: item.id, gen: item.attemptGeneration })
      } catch (e) {
        failed('deliver', e)
      }
    }
    if (lockTest === null && Date.now() >= started + (seconds * 1000) / 2) {
      // This process takes the write lock, makes the held item due inside the transaction, and
      // keeps the lock one second; a fresh addon process claims from the held team meanwhile.
      raw.exec('BEGIN IMMEDIATE')
      raw.prepare("UPDATE member_work_sync_outbox SET next_attempt_at = NULL WHERE id = 'held-item'").run()
      const waiter = startPeer(peer, [
        'run',
        JSON.stringify({ store: 'sqlite', db, team: HELD_TEAM, name: 'waiter', now: NOW, rounds: 1, statuses: false, ensurePerRound: 0, claimLimit: 5 }),
      ])
      const heldFrom = Date.now()
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000)
      raw.exec('COMMIT')
      const heldMs = Date.now() - heldFrom
      lockTest = waiter.exited.then((r) => ({ ...r, heldMs, returnedAfterMs: Date.now() - heldFrom }))
    }
    // Lets the addon's lines in (the in-process gateway resolves without I/O).
    await new Promise((resolve) => setImmediate(resolve))
  }
  const addonRun = await addon.exited
  const waiter = await lockTest
  core.close()

  const checks = []
  const check = (name, fn) => {
    try {
      fn()
      checks.push({ name, ok: true })
    } catch (e) {
      checks.push({ name, ok: false, detail: e.message })
    }
  }
  const check_db = new reference.Database(db, { readonly: true })
  const integrity = check_db.pragma('integrity_check', { simple: true })
  const rows = check_db.prepare('SELECT id, team_name, status, attempt_generation, claimed_by FROM member_work_sync_outbox').all()
  const counts = Object.fromEntries(
    ['member_work_sync_status', 'member_work_sync_report_intents', 'member_work_sync_metric_events'].map((t) => [t, check_db.prepare(`SELECT count(*) AS n FROM ${t}`).get().n])
  )
  check_db.close()
  raw.close()

  const addonLines = addonRun.lines
  const addonDone = addonLines.find((l) => l.done)
  const addonClaimed = addonLines.filter((l) => l.claimed).map((l) => ({ id: l.claimed, gen: l.gen }))
  const addonDelivered = addonLines.filter((l) => l.delivered).map((l) => ({ id: l.delivered, gen: l.gen }))
  const addonErrors = addonLines.filter((l) => l.error)
  check('the addon process ran to its end', () => assert.equal(addonRun.code, 0, addonRun.stderr))
  check('integrity_check is ok', () => assert.equal(integrity, 'ok'))
  check('the addon surfaced no error (no SQLITE_BUSY)', () => assert.deepEqual(addonErrors.slice(0, 3), []))
  check('no item was claimed twice (both logs)', () => {
    const seen = new Map()
    for (const [who, list] of [['addon', addonClaimed], ['reference', log.claimed]]) {
      for (const c of list) {
        assert.ok(!seen.has(c.id), `${c.id} claimed by ${seen.get(c.id)} and by ${who}`)
        seen.set(c.id, who)
      }
    }
  })
  check('every delivered row is the claim one log names (claimer and generation)', () => {
    const byId = new Map(rows.map((r) => [r.id, r]))
    for (const [who, list] of [['addon', addonDelivered], ['reference', log.delivered]]) {
      for (const d of list) {
        const row = byId.get(d.id)
        assert.ok(row, `${d.id} missing`)
        assert.equal(row.status, 'delivered', d.id)
        assert.equal(row.claimed_by, who, d.id)
        assert.equal(row.attempt_generation, d.gen, d.id)
      }
    }
    const logged = addonDelivered.length + log.delivered.length
    const deliveredRows = rows.filter((r) => r.team_name === TEAM && r.status === 'delivered').length
    assert.equal(deliveredRows, logged, 'delivered rows no log names')
  })
  check('while the write lock was held, the addon claim waited and then claimed the held item', () => {
    assert.equal(waiter.code, 0, waiter.stderr)
    assert.deepEqual(waiter.lines.filter((l) => l.error), [])
    assert.deepEqual(waiter.lines.filter((l) => l.claimed).map((l) => l.claimed), ['held-item'])
    assert.deepEqual(waiter.lines.filter((l) => l.delivered).map((l) => l.delivered), ['held-item'])
  })

  const perSec = (n) => (n / seconds).toFixed(1)
  console.log(`load: ${seconds} s on ${db}, load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`)
  console.log(
    `  addon (direct mode, another process): ${addonDone ? addonDone.done.statuses : '?'} status writes, ${addonClaimed.length} claimed, ${addonDelivered.length} delivered (${perSec(addonDelivered.length)}/s), errors ${addonErrors.length}, busy ${addonDone ? addonDone.done.busy : '?'}, rounds ${addonDone ? addonDone.done.rounds : '?'}`
  )
  console.log(
    `  reference (its worker core on better-sqlite3, this process): ${tally.statuses} status writes, ${tally.intents} intents, ${tally.ensured} ensured, ${log.claimed.length} claimed, ${log.delivered.length} delivered (${perSec(log.delivered.length)}/s)`
  )
  console.log(`  reference errors (not hidden; deferred transactions): ${JSON.stringify(referenceErrors)}`)
  console.log(`  reference claims left 'claimed' by a failed markDelivered: ${log.claimed.length - log.delivered.length}`)
  console.log(`  rows: outbox ${rows.length} (${rows.filter((r) => r.status === 'delivered').length} delivered, ${rows.filter((r) => r.status === 'claimed').length} left claimed), ${JSON.stringify(counts)}`)
  console.log(`  lock test: held ${waiter.heldMs} ms; the waiter process exited ${waiter.returnedAfterMs} ms after the lock was taken`)
  for (const c of checks) console.log(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}${c.ok ? '' : `: ${c.detail}`}`)
  const failedChecks = checks.filter((c) => !c.ok).length
  console.log(`${checks.length - failedChecks} passed, ${failedChecks} failed`)
  if (failedChecks === 0) fs.rmSync(work, { recursive: true, force: true })
  else console.log(`kept ${work}`)
  process.exitCode = failedChecks ? 1 : 0
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main()
