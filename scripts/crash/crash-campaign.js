'use strict'
// Crash campaign: SIGKILL at random points of the four writers of the addon
// and check, after each kill and again after a "restart", that nothing valid
// is lost, nothing is acted on twice, every store file parses and no temp file
// survives a restart's own write into its folder.
//
// Phases (each runs `--trials` trials, 200 by default):
//   hook   the Stop hook as the settings install it: the argv of the command from
//          buildRuntimeTurnSettledHookSettings (`<bin>/turn-settled-hook-v1
//          <spoolRoot> claude 262144`, the native executable, when the build
//          placed it beside the addon; else `/bin/sh <script> <spoolRoot>
//          claude 262144`; checked once against `sh -c <command>`), payload
//          piped on stdin; one hook per trial or a loop of six. Not `sh -c`
//          per trial: dash forks the script, so a kill of the group leaves it
//          an orphaned zombie until init reaps it, and until then its pid
//          counts as alive (the drain then rightly keeps its temp file);
//   drain  `drainRuntimeTurnSettledEvents` over 60 spooled payloads;
//   store  `refreshTeam` / `refreshStatus` / `report` / `replayPendingReports`
//          in a busy loop (status.json, reports.json, journal.jsonl, metrics.json);
//   nudge  `dispatchDueNudges` over several roots with planned nudges
//          (inboxes/<member>.json, outbox.json).
//   sqlite (only with --sqlite or --only sqlite) the addon's SQLite store in
//          direct mode on app.db (examples/sqlite_peer.rs: the store ports
//          the use cases call): status writes with their metric events,
//          report intent append and markProcessed, outbox ensure, claim,
//          delivery into a delivery log standing in for the inboxes (once
//          per id) and markDelivered, in a loop; killed by the parent.
//          Each committed step is a line on the pipe; after the kill and
//          after a restart (clock 6 min ahead: stale claims are taken over)
//          integrity_check is ok, every committed step is in the database,
//          a delivered item has exactly one delivery-log line, and after the
//          restart no claim is stranded and no logged item is undelivered.
//   sqlite-import (with --sqlite or --only sqlite-import) the same store with
//          its team files (teams/ given): the team and rows of the recorded
//          import scenario "live files over canonical rows"
//          (tests/fixtures/sqlite/team-files-recording.json) are the start;
//          the first op imports the legacy JSON files, then mutations run
//          fenced by the JSON replica, with purgeTeam in one trial of three.
//          Every other trial is killed uniformly over the first op's window
//          (start, import, publication), the others over the whole run. After
//          the kill and after a restart: integrity_check ok; the import all
//          or nothing (the seed rows, or the reference's merged rows with or
//          without its store_imports row), after the restart done once (the
//          reference's rows, store_imports row and files: every live file
//          archived, no second generation); the replica absent, dirty, or
//          clean and equal to the rows; a purge all or nothing, no marker
//          left; every committed step there (those before a purge that took
//          effect gone with it).
// Kill delays are uniform over the duration of an uninterrupted run of the same
// child, measured first (calibration) and kept current by the children that
// finish before their kill plus one uninterrupted child in ten (fsync latency
// moves a lot on a shared machine). The addon is loaded only in child
// processes (this file re-runs itself with `--child <json>`), which SIGKILL
// themselves from a timer armed when they are ready: their JS thread idles
// while the addon works on its threads, so the kill lands on time. Hooks are
// killed by the parent (their process group), one trial at a time.
// "Kills landed mid-operation": the process died before its operation ended.
//
// Before each restart, temp files left by the killed writer are aged by two
// hours (fs.utimesSync) so the sweeps for dead writers' leftovers (store temp
// files after 5 min, hook temp files after an hour) apply; the restart's clock
// also runs 6 min ahead so stale spool claims and nudge claims are taken over.
//
// Run (after `npm run build`):
//   node scripts/crash/crash-campaign.js [--trials 200] [--only hook,drain,store,nudge,sqlite,sqlite-import]
//                                  [--sqlite] [--seed N] [--jobs N] [--keep-failed] [--verbose]
// The sqlite phases run the sqlite_peer example (build it first:
// `cargo build --profile dev-release --example sqlite_peer`; MWS_SQLITE_PEER
// names another build).
// Env: CRASH_TRIALS, CRASH_ONLY, CRASH_SEED, CRASH_JOBS. Trials at a time:
// 1 for hooks, 2 otherwise, unless --jobs. --keep-failed keeps the folders of
// failed trials; --verbose prints every failed trial.
// Exit code 1 when any trial found a violation, 2 when the script itself failed.

const { spawn } = require('node:child_process')
const crypto = require('node:crypto')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const readline = require('node:readline')

const REPO = path.join(__dirname, '..', '..')
const PHASES = ['hook', 'drain', 'store', 'nudge', 'sqlite', 'sqlite-import']
/** Phases run when --only is not given (sqlite needs the example built: --sqlite adds it). */
const DEFAULT_PHASES = ['hook', 'drain', 'store', 'nudge']
const PROJECT = '/home/u/proj'
const TEAM = 'forge'
const SPOOL_REL = 'teams/.member-work-sync/runtime-hooks'
const SPOOL_DIRS = ['incoming', 'processing', 'processed', 'invalid']
/** Store temp files: the safe_fs naming and the old `tempfile` crate naming. */
const STORE_TEMP = /^\..+\.(mws-tmp|tmp)\./
/** The hook's own temp files in incoming/. */
const HOOK_TEMP = /^\.turn-settled\./
const AGE_LEFTOVERS_MS = 2 * 3600 * 1000
const RESTART_AHEAD_MS = 6 * 60 * 1000
const DRAIN_PAYLOADS = 60
const NUDGE_ROOTS_PER_CHILD = 3
const STORE_ITERATIONS = 2
const HOOK_LOOP_KINDS = ['small', 'medium', 'large', 'small', 'medium', 'large']
const CALIBRATION_RUNS = 6
const REMEASURE_EVERY = 10
/** The sqlite phase: one fixed clock (the restart's is 6 min ahead), rounds per child. */
const SQLITE_NOW = Date.parse('2026-07-07T10:00:00.000Z')
const SQLITE_ROUNDS = 40
/** The sqlite-import phase: the recorded legacy team, rounds per child, a purge in one trial of three. */
const IMPORT_TEAM = 'team-a'
const IMPORT_ROUNDS = 8
const IMPORT_PURGE_ROUND = 4
const IMPORT_MEMBERS = ['gina', 'hank']
/** A child whose only op is the first status write (it runs the import): the import window. */
const IMPORT_ONLY = { rounds: 1, intents: false, ensurePerRound: 0, claimLimit: 0 }
/** A child that stops after the round of its purge: the purge trials' window. */
const UNTIL_PURGE = { rounds: IMPORT_PURGE_ROUND + 1, purgeAtRound: IMPORT_PURGE_ROUND }
const IMPORT_RECORDING = path.join(__dirname, '..', '..', 'tests', 'fixtures', 'sqlite', 'team-files-recording.json')

// ---------------------------------------------------------------------------
// Small helpers

function parseArgs(argv) {
  const opts = {
    trials: Number(process.env.CRASH_TRIALS || 200),
    only: (process.env.CRASH_ONLY || DEFAULT_PHASES.join(',')).split(','),
    seed: Number(process.env.CRASH_SEED || Date.now() % 1e9),
    jobs: process.env.CRASH_JOBS ? Number(process.env.CRASH_JOBS) : null,
    keepFailed: false,
    verbose: false,
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${arg} needs a value`)
      return argv[++i]
    }
    if (arg === '--trials') opts.trials = Number(value())
    else if (arg === '--only') opts.only = value().split(',')
    else if (arg === '--seed') opts.seed = Number(value())
    else if (arg === '--jobs') opts.jobs = Number(value())
    else if (arg === '--sqlite') opts.only = [...opts.only.filter((p) => !p.startsWith('sqlite')), 'sqlite', 'sqlite-import']
    else if (arg === '--keep-failed') opts.keepFailed = true
    else if (arg === '--verbose') opts.verbose = true
    else throw new Error(`unknown argument ${arg}`)
  }
  opts.only = opts.only.map((s) => s.trim()).filter(Boolean)
  for (const phase of opts.only) if (!PHASES.includes(phase)) throw new Error(`unknown phase ${phase} (${PHASES.join(', ')})`)
  if (!(opts.trials > 0) || !Number.isInteger(opts.trials)) throw new Error('--trials must be a positive integer')
  if (opts.jobs !== null && (!(opts.jobs > 0) || !Number.isInteger(opts.jobs))) throw new Error('--jobs must be a positive integer')
  return opts
}

/** mulberry32: reproducible kill delays for a given --seed. */
function prng(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const sha = (bytes) => crypto.createHash('sha256').update(bytes).digest('hex')
const readJson = (file) => JSON.parse(fs.readFileSync(file, 'utf8'))
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
/** Runs `fn(0..n-1)`, `jobs` at a time. */
async function inParallel(n, jobs, fn) {
  let next = 0
  const worker = async () => {
    for (let i = next++; i < n; i = next++) await fn(i)
  }
  await Promise.all(Array.from({ length: jobs }, worker))
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

/**
 * Duration of an uninterrupted run: the calibration runs, then every trial
 * whose child finished before its kill adds its own duration, so the kill
 * window follows the machine's load (fsync latency varies a lot when the
 * cores are shared). The window is the median of the latest samples.
 */
class Durations {
  constructor(samples) {
    this.samples = [...samples]
  }
  add(ms) {
    if (ms !== null && ms !== undefined) this.samples.push(ms)
  }
  current() {
    return median(this.samples.slice(-15))
  }
}

function writeJson(file, value) {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, JSON.stringify(value, null, 2))
}

function listDir(dir) {
  try {
    return fs.readdirSync(dir, { withFileTypes: true })
  } catch (e) {
    if (e.code === 'ENOENT') return []
    throw e
  }
}

/** Every folder under `dir` (itself included). */
function walkDirs(dir, out = []) {
  out.push(dir)
  for (const entry of listDir(dir)) if (entry.isDirectory()) walkDirs(path.join(dir, entry.name), out)
  return out
}

function copyTree(from, to) {
  fs.cpSync(from, to, { recursive: true, preserveTimestamps: true })
}

/** Splits a POSIX sh command line of plain and single-quoted words; stops at a `#` comment. */
function shellWords(command) {
  const words = []
  let word = null
  for (let i = 0; i < command.length; i++) {
    const c = command[i]
    if (c === "'") {
      const end = command.indexOf("'", i + 1)
      if (end < 0) throw new Error(`unterminated quote in ${command}`)
      word = (word || '') + command.slice(i + 1, end)
      i = end
    } else if (c === '\\') {
      word = (word || '') + command[++i]
    } else if (c === ' ' || c === '\t') {
      if (word !== null) words.push(word)
      word = null
    } else if (c === '#' && word === null) {
      break
    } else if (/["$`;&|<>()*?[\]{}~]/.test(c)) {
      throw new Error(`hook command uses shell syntax this parser does not handle: ${command}`)
    } else {
      word = (word || '') + c
    }
  }
  if (word !== null) words.push(word)
  return words
}

// ---------------------------------------------------------------------------
// Child processes: the addon is only ever loaded here.

async function runChild(spec) {
  const { MemberWorkSync } = require(path.join(REPO, 'index.js'))
  const say = (msg) => process.stdout.write(JSON.stringify(msg) + '\n')
  let readyAt = null
  // The kill is armed here, in the child: its JS thread idles while the addon
  // works on its own threads, so the timer fires on time however busy the
  // parent is. It is a SIGKILL all the same (no handler, no unwinding).
  const ready = () => {
    readyAt = process.hrtime.bigint()
    say({ ready: true })
    if (spec.killAfterMs !== undefined) {
      setTimeout(() => {
        say({ killing: Number(process.hrtime.bigint() - readyAt) / 1e6 })
        process.kill(process.pid, 'SIGKILL')
      }, spec.killAfterMs)
    }
  }
  const done = (extra = {}) => say({ done: true, ms: readyAt === null ? null : Number(process.hrtime.bigint() - readyAt) / 1e6, ...extra })
  const open = (root, nowMs, autoStart = false) =>
    new MemberWorkSync({ claudeRoot: root, autoStart, clock: { nowMs } })
  const drainAll = async (sync) => {
    const total = { claimed: 0, enqueued: 0, unresolved: 0, ignored: 0, invalid: 0, failed: 0 }
    for (;;) {
      const s = await sync.drainRuntimeTurnSettledEvents()
      for (const k of Object.keys(total)) total[k] += s[k]
      if (s.claimed === 0) return total
    }
  }
  const members = () => readJson(path.join(spec.root || spec.roots[0], 'teams', TEAM, 'config.json')).members.map((m) => m.name)

  switch (spec.kind) {
    case 'install-hook': {
      const sync = open(spec.root, spec.nowMs)
      const settings = await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
      await sync.dispose()
      say({ command: settings.hooks.Stop[0].hooks[0].command })
      return
    }
    case 'plan-nudges': {
      // Each member's requested reconcile plans its nudge. (A queued
      // reconcile would dispatch its team right after planning, as the app's
      // does, leaving nothing pending for the dispatch trials.)
      const sync = open(spec.root, spec.nowMs)
      for (const name of members()) await sync.refreshStatus({ teamName: TEAM, memberName: name })
      await sync.dispose()
      say({ done: true })
      return
    }
    case 'drain': {
      const sync = open(spec.root, spec.nowMs)
      ready()
      done({ summary: await drainAll(sync) })
      await sync.dispose()
      return
    }
    case 'store': {
      const sync = open(spec.root, spec.nowMs)
      const names = members()
      ready()
      for (let i = 0; i < spec.iterations; i++) {
        // Several writers in flight at once, so a kill lands mid-write more often.
        const statuses = await sync.refreshTeam({ teamName: TEAM })
        const legacy = path.join(spec.root, 'teams', TEAM, '.member-work-sync', 'pending-reports.json')
        const jack = statuses.find((s) => s.memberName === 'jack')
        const intents = {}
        intents[`intent-${i}`] = {
          id: `intent-${i}`,
          teamName: TEAM,
          memberName: 'jack',
          reason: 'control_api_unavailable',
          status: 'pending',
          recordedAt: new Date(spec.nowMs - 1000).toISOString(),
          request: { teamName: TEAM, memberName: 'jack', state: 'still_working', agendaFingerprint: jack.agenda.fingerprint, reportToken: jack.reportToken, source: 'mcp' },
        }
        // The controller's file: written whole (temp + rename) by this stand-in controller.
        fs.writeFileSync(legacy + '.ctl', JSON.stringify({ schemaVersion: 1, intents }))
        fs.renameSync(legacy + '.ctl', legacy)
        await Promise.all([
          ...statuses
            .filter((s) => s.memberName !== 'jack')
            .map((s) =>
              sync.report({ teamName: TEAM, memberName: s.memberName, state: i % 2 ? 'blocked' : 'still_working', agendaFingerprint: s.agenda.fingerprint, reportToken: s.reportToken, taskIds: [], note: `iteration ${i}` }),
            ),
          sync.replayPendingReports([TEAM]),
          sync.refreshStatus({ teamName: TEAM, memberName: names[i % names.length] }),
          sync.getMetrics({ teamName: TEAM }),
        ])
        say({ op: i })
      }
      done()
      await sync.dispose()
      return
    }
    case 'nudge': {
      ready()
      const results = []
      for (const root of spec.roots) {
        const sync = open(root, spec.nowMs)
        results.push(await sync.dispatchDueNudges([TEAM]))
        await sync.dispose()
        say({ op: results.length - 1 })
      }
      done({ results })
      return
    }
    case 'restart': {
      // A normal operation of the phase on the same root(s), clock ahead.
      const out = []
      for (const root of spec.roots) {
        const sync = open(root, spec.nowMs)
        if (spec.phase === 'hook' || spec.phase === 'drain') out.push(await drainAll(sync))
        else if (spec.phase === 'store') {
          const statuses = await sync.refreshTeam({ teamName: TEAM })
          await Promise.all(
            statuses.map((s) => sync.report({ teamName: TEAM, memberName: s.memberName, state: 'still_working', agendaFingerprint: s.agenda.fingerprint, reportToken: s.reportToken })),
          )
          out.push(await sync.replayPendingReports([TEAM]))
        } else if (spec.phase === 'nudge') out.push(await sync.dispatchDueNudges([TEAM]))
        await sync.dispose()
      }
      done({ results: out })
      return
    }
    default:
      throw new Error(`unknown child kind ${spec.kind}`)
  }
}

/**
 * Starts a child (its own process group, so the kill reaches everything it
 * started) and collects its JSON lines. `onMessage(msg, child)` sees each one.
 */
function startProcess(command, args, { input, onMessage } = {}) {
  const child = spawn(command, args, { detached: true, stdio: ['pipe', 'pipe', 'pipe'] })
  const messages = []
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  child.stdin.on('error', () => {}) // EPIPE after a kill
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    let msg
    try {
      msg = JSON.parse(line)
    } catch {
      msg = { line }
    }
    messages.push(msg)
    if (onMessage) onMessage(msg, child)
  })
  if (input !== undefined) child.stdin.end(input)
  else child.stdin.end()
  const exited = new Promise((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, messages, stderr }))
  })
  return { child, exited }
}

function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL')
  } catch {
    // Already gone.
  }
}

function childArgs(spec) {
  return [__filename, '--child', JSON.stringify(spec)]
}

/** Planned kill delay and when the kill was actually sent (the event loop may fire late). */
function killNote(delayMs, r) {
  if (delayMs === undefined) return 'no kill (re-measure run)'
  const sent = r.killedAfterMs === null ? 'not sent: exited first' : `sent at ${r.killedAfterMs.toFixed(2)} ms`
  return `kill planned at ${delayMs.toFixed(2)} ms (${sent})`
}

/** Runs a child to its end; throws when it fails. */
async function runToEnd(spec) {
  const { exited } = startProcess(process.execPath, childArgs(spec))
  const result = await exited
  if (result.code !== 0) throw new Error(`child ${spec.kind} failed (${result.code}/${result.signal}): ${result.stderr}`)
  return result
}

/**
 * Runs a child and kills it `delayMs` after its `ready` line (or after spawn
 * when it prints none). Returns whether it finished before the kill.
 */
async function runAndKill(command, args, { delayMs, input }) {
  let timer
  let armedAt = null
  let killedAfterMs = null
  const arm = (child) => {
    armedAt = process.hrtime.bigint()
    timer = setTimeout(() => {
      killedAfterMs = Number(process.hrtime.bigint() - armedAt) / 1e6
      killGroup(child)
    }, delayMs)
  }
  const started = Date.now()
  const { child, exited } = startProcess(command, args, { input })
  arm(child)
  const result = await exited
  clearTimeout(timer)
  const finished = result.code === 0 && result.signal === null
  if (!finished && result.signal !== 'SIGKILL') throw new Error(`child failed (${result.code}/${result.signal}): ${result.stderr}`)
  return { ...result, finished, killedAfterMs, elapsedMs: Date.now() - started }
}

// ---------------------------------------------------------------------------
// Board templates (a copy of examples/claude-root per trial)

function exampleRoot(base, name) {
  const root = path.join(base, name)
  copyTree(path.join(REPO, 'examples', 'claude-root'), root)
  // A Claude project with transcripts, so Stop payloads resolve to members.
  const configFile = path.join(root, 'teams', TEAM, 'config.json')
  writeJson(configFile, { ...readJson(configFile), projectPath: PROJECT, leadSessionId: 'L1' })
  const projectDir = path.join(root, 'projects', '-home-u-proj')
  fs.mkdirSync(projectDir, { recursive: true })
  fs.writeFileSync(path.join(projectDir, 'L1.jsonl'), '{"teamName":"forge","agentName":"team-lead"}\n')
  for (const [session, member] of [['B1', 'bob'], ['J1', 'jill'], ['K1', 'kim']]) {
    const line = { type: 'user', sessionId: session, teamName: TEAM, agentName: member, cwd: PROJECT, message: { role: 'user', content: 'Start' } }
    fs.writeFileSync(path.join(projectDir, `${session}.jsonl`), JSON.stringify(line) + '\n')
  }
  return root
}

/** Two hours of calm shadow history: phase-2 readiness becomes shadow_ready (as in the nudge test). */
function writeShadowHistory(root, nowMs) {
  const members = {}
  for (let i = 0; i < 5; i++) {
    members[`m${i}`] = { memberName: `m${i}`, state: 'caught_up', agendaFingerprint: 'agenda:v1:x', actionableCount: 0, evaluatedAt: new Date(nowMs - 3_600_000).toISOString() }
  }
  const recentEvents = Array.from({ length: 30 }, (_, i) => ({
    id: `h${i}`,
    teamName: TEAM,
    memberName: `m${i % 5}`,
    kind: 'status_evaluated',
    state: 'caught_up',
    agendaFingerprint: 'agenda:v1:x',
    recordedAt: new Date(nowMs - 2 * 3_600_000 + i * 240_000).toISOString(),
    actionableCount: 0,
  }))
  writeJson(path.join(root, 'teams', TEAM, '.member-work-sync', 'indexes', 'metrics.json'), { schemaVersion: 2, members, recentEvents })
}

let payloadCounter = 0
/** A Stop payload with a unique nonce; `medium`/`large` span many lines (longer hook runs). */
function stopPayload(kind, session = 'B1') {
  const nonce = `${process.pid}-${++payloadCounter}-${crypto.randomBytes(6).toString('hex')}`
  const base = { hook_event_name: 'Stop', session_id: session, transcript_path: `/x/${session}.jsonl`, cwd: PROJECT, nonce }
  if (kind === 'small') return Buffer.from(JSON.stringify({ ...base, last_assistant_message: 'done' }))
  const lines = kind === 'medium' ? 300 : 2500
  const pad = Array.from({ length: lines }, (_, i) => `line ${i} ${'x'.repeat(40)}`)
  // One array element per line (pretty-printed: a multi-line payload).
  return Buffer.from(JSON.stringify({ ...base, last_assistant_message: pad }, null, 1) + (kind === 'large' ? '' : '\n'))
}

// ---------------------------------------------------------------------------
// Invariant checks

class Findings {
  constructor() {
    this.violations = [] // {type, detail}
    this.notes = {} // counters that are not violations
    this.noteExamples = {}
  }
  /** `key` groups a type's violations in the summary (e.g. by file name). */
  fail(type, detail, key) {
    this.violations.push({ type, detail, key })
  }
  note(type, n = 1, detail) {
    this.notes[type] = (this.notes[type] || 0) + n
    if (detail && !this.noteExamples[type]) this.noteExamples[type] = detail
  }
}

/** Visible payload files of the spool by content hash: hash -> [dir/name]. */
function spoolContents(root) {
  const spool = path.join(root, SPOOL_REL)
  const byHash = new Map()
  for (const dir of SPOOL_DIRS) {
    for (const entry of listDir(path.join(spool, dir))) {
      if (entry.name.startsWith('.') || entry.name.endsWith('.meta.json')) continue
      const file = path.join(spool, dir, entry.name)
      if (!entry.isFile()) continue
      const h = sha(fs.readFileSync(file))
      if (!byHash.has(h)) byHash.set(h, [])
      byHash.get(h).push(`${dir}/${entry.name}`)
    }
  }
  return byHash
}

/**
 * Spool payload checks. `completed`: payloads that must be present whole,
 * exactly once; `maybe`: payloads of killed hooks, whole or absent.
 * After a restart + drain they must all be in processed/ or invalid/.
 */
function checkSpool(root, completed, maybe, f, { afterRestart, restartClaimed }) {
  const spool = path.join(root, SPOOL_REL)
  const contents = spoolContents(root)
  const known = new Set([...completed, ...maybe].map(sha))
  for (const payload of completed) {
    const where = contents.get(sha(payload)) || []
    if (where.length === 0) f.fail('payload_lost', `a completed payload (${payload.length} B) is in none of ${SPOOL_DIRS.join('/')}`)
    else if (where.length > 1) f.fail('payload_duplicated', where.join(', '))
    else if (afterRestart && !/^(processed|invalid)\//.test(where[0])) f.fail('payload_not_drained_after_restart', where[0])
  }
  for (const payload of maybe) {
    const where = contents.get(sha(payload)) || []
    if (where.length > 1) f.fail('payload_duplicated', where.join(', '))
    if (where.length === 1) f.note(where[0].includes('abandoned-turn-settled') ? 'abandoned_temp_moved_to_invalid' : 'killed_hook_published_whole')
  }
  for (const [h, where] of contents) {
    if (known.has(h)) continue
    // invalid/ holds the abandoned hook temp files the drain moved there (any prefix of a payload).
    for (const place of where) {
      if (place.startsWith('invalid/') && place.includes('abandoned-turn-settled')) f.note('abandoned_temp_moved_to_invalid')
      else f.fail('unknown_or_truncated_payload_visible', place)
    }
  }
  for (const dir of ['processed', 'invalid']) {
    for (const entry of listDir(path.join(spool, dir))) {
      const file = path.join(spool, dir, entry.name)
      if (entry.name.endsWith('.meta.json') && !entry.name.startsWith('.')) {
        try {
          readJson(file)
        } catch (e) {
          // A new result's meta is written in place before its payload moves
          // in (the commit): a kill mid-write may leave it torn, but never
          // beside its payload, and the restart's drain files the claim
          // again, replacing it whole.
          const committed = fs.existsSync(file.slice(0, -'.meta.json'.length))
          if (committed || afterRestart) f.fail('spool_meta_unparseable', `${dir}/${entry.name}: ${e.message}`)
          else f.note('torn_meta_of_uncommitted_claim')
        }
      } else if (!entry.name.startsWith('.') && afterRestart && !fs.existsSync(`${file}.meta.json`)) {
        f.fail('spool_result_without_meta', `${dir}/${entry.name}`)
      }
    }
  }
  if (afterRestart) {
    for (const entry of listDir(path.join(spool, 'incoming'))) {
      if (HOOK_TEMP.test(entry.name)) {
        // The drain sweeps only after claiming something (reported apart: a known cause).
        const type = restartClaimed === 0 ? 'hook_temp_survived_restart_drain_that_claimed_nothing' : 'hook_temp_survived_restart_drain'
        f.fail(type, `incoming/${entry.name}`)
      }
      else if (!entry.name.startsWith('.')) f.fail('incoming_not_drained_after_restart', `incoming/${entry.name}`)
    }
    for (const entry of listDir(path.join(spool, 'processing'))) f.fail('claim_stranded_after_restart', `processing/${entry.name}`)
  }
}

/** Parses every store file under teams/ (JSON files, journal lines). */
function checkStoreFiles(root, f, { afterRestart, journalSizesBefore }) {
  const teams = path.join(root, 'teams')
  for (const dir of walkDirs(teams)) {
    if (dir.startsWith(path.join(root, SPOOL_REL))) continue
    const rel = path.relative(root, dir)
    const parts = rel.split(path.sep)
    // Store folders, inboxes, and members/<key>/ (member.meta.json is written there too).
    const isStoreDir = parts.includes('.member-work-sync') || parts.at(-1) === 'inboxes' || parts.at(-2) === 'members'
    if (!isStoreDir) continue
    for (const entry of listDir(dir)) {
      if (!entry.isFile()) continue
      const name = entry.name
      const file = path.join(dir, name)
      const relFile = path.join(rel, name)
      if (name.startsWith('.')) continue // temp files: checked separately
      if (/\.invalid\.\d+$/.test(name)) {
        f.fail('store_file_quarantined', relFile)
        continue
      }
      if (name.endsWith('.json')) {
        try {
          JSON.parse(fs.readFileSync(file, 'utf8'))
        } catch (e) {
          f.fail('store_file_unparseable', `${relFile}: ${e.message}`)
        }
      } else if (/^journal\.jsonl(\.\d)?$/.test(name)) {
        const text = fs.readFileSync(file, 'utf8')
        const lines = text.split('\n')
        const tail = lines.pop() // '' when the file ends with a newline
        lines.forEach((line, i) => {
          try {
            JSON.parse(line)
          } catch {
            f.fail(afterRestart ? 'journal_glued_or_torn_line_after_restart' : 'journal_torn_line_mid_file', `${relFile}:${i + 1}: ${line.slice(0, 80)}…`)
          }
        })
        if (tail !== '') {
          const grew = journalSizesBefore && (journalSizesBefore.get(file) || 0) !== text.length
          if (afterRestart && grew) f.fail('journal_unterminated_tail_after_restart_append', relFile)
          else f.note('journal_torn_tail')
        }
      }
    }
  }
}

function journalSizes(root) {
  const sizes = new Map()
  for (const dir of walkDirs(path.join(root, 'teams'))) {
    for (const entry of listDir(dir)) {
      if (/^journal\.jsonl(\.\d)?$/.test(entry.name)) sizes.set(path.join(dir, entry.name), fs.statSync(path.join(dir, entry.name)).size)
    }
  }
  return sizes
}

/** Temp files (store and hook) anywhere under teams/: [absolute path]. */
function tempFiles(root) {
  const out = []
  for (const dir of walkDirs(path.join(root, 'teams'))) {
    for (const entry of listDir(dir)) if (STORE_TEMP.test(entry.name) || HOOK_TEMP.test(entry.name)) out.push(path.join(dir, entry.name))
  }
  return out
}

/** Per folder, the non-temp entries with identity, to tell which folders a restart wrote into. */
function folderSnapshot(root) {
  const snap = new Map()
  for (const dir of walkDirs(path.join(root, 'teams'))) {
    const entries = {}
    for (const entry of listDir(dir)) {
      // Lock files are opened (created when missing) by every operation: not a store write.
      if (STORE_TEMP.test(entry.name) || HOOK_TEMP.test(entry.name) || entry.isDirectory() || /\.(lock|ctl)$/.test(entry.name)) continue
      try {
        const st = fs.lstatSync(path.join(dir, entry.name))
        entries[entry.name] = `${st.ino}:${st.size}:${st.mtimeMs}`
      } catch {
        // Vanished meanwhile.
      }
    }
    snap.set(dir, entries)
  }
  return snap
}

function foldersWritten(before, after) {
  const written = new Set()
  for (const [dir, entries] of after) {
    const old = before.get(dir) || {}
    for (const [name, id] of Object.entries(entries)) if (old[name] !== id) written.add(dir)
  }
  return written
}

/** Ages leftovers as if their writers died two hours ago. Returns how many. */
function ageLeftovers(root) {
  const files = tempFiles(root)
  const past = new Date(Date.now() - AGE_LEFTOVERS_MS)
  for (const file of files) fs.utimesSync(file, past, past)
  return files.length
}

function checkTempsAfterRestart(root, before, f) {
  const written = foldersWritten(before, folderSnapshot(root))
  for (const file of tempFiles(root)) {
    const rel = path.relative(root, file)
    const target = path.basename(file).replace(/^\./, '').replace(/\.(mws-tmp|tmp)\..*$/, '')
    if (written.has(path.dirname(file))) f.fail(HOOK_TEMP.test(path.basename(file)) ? 'hook_temp_survived_restart' : 'temp_file_survived_restart_write', rel, target)
    else f.note('temp_left_in_folder_restart_did_not_write')
  }
}

/** Nudge rows by messageId in every inbox; outbox items by id. */
function checkNudges(root, f, { afterRestart }) {
  const inboxDir = path.join(root, 'teams', TEAM, 'inboxes')
  const rowsById = new Map()
  for (const entry of listDir(inboxDir)) {
    if (!entry.name.endsWith('.json') || entry.name.startsWith('.')) continue
    let rows
    try {
      rows = readJson(path.join(inboxDir, entry.name))
    } catch {
      continue // reported by checkStoreFiles
    }
    const seen = new Map()
    for (const row of Array.isArray(rows) ? rows : []) {
      if (!row || !row.messageId) continue
      seen.set(row.messageId, (seen.get(row.messageId) || 0) + 1)
      rowsById.set(row.messageId, (rowsById.get(row.messageId) || 0) + 1)
    }
    for (const [id, n] of seen) if (n > 1) f.fail('nudge_row_delivered_twice', `${entry.name}: ${id} ×${n}`)
  }
  for (const entry of listDir(inboxDir)) {
    if (!entry.name.endsWith('.lock')) continue
    const content = JSON.stringify(fs.readFileSync(path.join(inboxDir, entry.name), 'utf8'))
    f.note(afterRestart ? 'inbox_lock_left_after_restart' : 'inbox_lock_left_by_kill', 1, `${entry.name} ${content}`)
  }
  const membersDir = path.join(root, 'teams', TEAM, 'members')
  for (const member of listDir(membersDir)) {
    const file = path.join(membersDir, member.name, '.member-work-sync', 'outbox.json')
    if (!fs.existsSync(file)) continue
    let items
    try {
      items = Object.values(readJson(file).items || {})
    } catch {
      continue
    }
    for (const item of items) {
      const rows = rowsById.get(item.id) || 0
      if (item.status === 'delivered' && rows !== 1) f.fail('outbox_delivered_without_inbox_row', item.id)
      if (!afterRestart) continue
      if (item.status !== 'delivered' && rows > 0) f.fail('inbox_row_but_outbox_not_delivered_after_restart', `${item.id}: ${item.status}`)
      if (item.status === 'claimed') f.fail('nudge_claim_stranded_after_restart', item.id)
      else if (item.status !== 'delivered') f.note(`nudge_${item.status}_after_restart`, 1, `${item.id}: ${item.lastError || ''}`)
    }
  }
}

// ---------------------------------------------------------------------------
// Phases

/** Common shape of a trial: run and kill, check, age, restart, check again. */
async function restartAndCheck(phase, roots, f, nowMs) {
  const before = new Map()
  const sizes = new Map()
  let aged = 0
  for (const root of roots) {
    aged += ageLeftovers(root)
    before.set(root, folderSnapshot(root))
    for (const [k, v] of journalSizes(root)) sizes.set(k, v)
  }
  if (aged) f.note('leftovers_aged_before_restart', aged)
  const { messages } = await runToEnd({ kind: 'restart', phase, roots, nowMs: nowMs + RESTART_AHEAD_MS })
  for (const root of roots) {
    checkStoreFiles(root, f, { afterRestart: true, journalSizesBefore: sizes })
    checkTempsAfterRestart(root, before.get(root), f)
  }
  return messages.find((m) => m.done)
}

const phases = {
  hook: {
    jobs: 1,
    describe: 'Stop hook (the argv of the command from buildRuntimeTurnSettledHookSettings: <executable> or /bin/sh <script>, then <spoolRoot> claude 262144, payload piped on stdin)',
    async prepare(base) {
      const template = exampleRoot(base, 'hook-template')
      const { messages } = await runToEnd({ kind: 'install-hook', root: template, nowMs: Date.now() })
      const command = messages.find((m) => m.command).command
      const argv = shellWords(command)
      // `/bin/sh <script> <root> …` (the script) or `<executable> <root> …`.
      const args = argv[0] === '/bin/sh' ? argv.slice(2) : argv.slice(1)
      if (args[0] !== path.join(template, SPOOL_REL) || args[1] !== 'claude' || args[2] !== '262144' || args.length !== 3) {
        throw new Error(`unexpected hook command: ${command}`)
      }
      console.log(`hook: ${argv[0] === '/bin/sh' ? 'the sh script' : 'the native executable'} (${path.basename(argv[argv[0] === '/bin/sh' ? 1 : 0])})`)
      // The parsed argv must do what `sh -c <command>` (Claude Code's way) does.
      const probe = exampleRoot(base, 'hook-probe')
      copyTree(template, probe)
      const payload = stopPayload('small')
      const viaShell = await runAndKill('sh', ['-c', command.split(template).join(probe)], { delayMs: 60_000, input: payload })
      const landed = [...spoolContents(probe).values()].flat()
      if (!viaShell.finished || landed.length !== 1 || !spoolContents(probe).has(sha(payload))) throw new Error('hook via sh -c did not spool the payload')
      fs.rmSync(probe, { recursive: true, force: true })
      return { template, argv }
    },
    /** Runs the hooks one after another (each its own process, payload piped); kills the running one at `delayMs`. */
    async runHooks(ctx, root, payloads, delayMs) {
      const argv = ctx.argv.map((a) => a.split(ctx.template).join(root))
      const started = process.hrtime.bigint()
      const elapsed = () => Number(process.hrtime.bigint() - started) / 1e6
      let completed = 0
      let killedAfterMs = null
      for (const payload of payloads) {
        const left = delayMs - elapsed()
        if (left <= 0) break
        const r = await runAndKill(argv[0], argv.slice(1), { delayMs: left, input: payload })
        if (!r.finished) {
          killedAfterMs = elapsed()
          return { completed, killed: true, killedAfterMs, ms: elapsed() }
        }
        completed++
      }
      // The kill time fell after the last hook (or between two hooks): nothing was running.
      return { completed, killed: completed < payloads.length, killedAfterMs, ms: elapsed() }
    },
    async calibrate(ctx, base, jobs) {
      const durations = {}
      for (const key of ['small', 'medium', 'large', 'loop']) {
        const times = []
        for (let i = 0; i < CALIBRATION_RUNS; i++) {
          const root = path.join(base, `hook-cal-${key}-${i}`)
          copyTree(ctx.template, root)
          const payloads = key === 'loop' ? HOOK_LOOP_KINDS.map((k) => stopPayload(k)) : [stopPayload(key)]
          const r = await this.runHooks(ctx, root, payloads, 60_000)
          if (r.completed !== payloads.length) throw new Error('calibration hook did not finish')
          times.push(r.ms)
          fs.rmSync(root, { recursive: true, force: true })
        }
        durations[key] = new Durations(times)
      }
      ctx.durations = durations
      return Object.entries(durations).map(([k, v]) => `${k === 'loop' ? `loop of ${HOOK_LOOP_KINDS.length}` : k} ${v.current().toFixed(1)} ms`).join(', ')
    },
    async trial(ctx, base, i, rand, f) {
      const root = path.join(base, `hook-${i}`)
      copyTree(ctx.template, root)
      const loop = rand() < 0.4
      const kinds = loop ? HOOK_LOOP_KINDS : [['small', 'medium', 'large'][Math.floor(rand() * 3)]]
      const payloads = kinds.map((k) => stopPayload(k))
      const window = ctx.durations[loop ? 'loop' : kinds[0]]
      const delayMs = rand() * window.current()
      const r = await this.runHooks(ctx, root, payloads, delayMs)
      if (r.completed === payloads.length) window.add(r.ms)
      const completed = payloads.slice(0, r.completed)
      const maybe = payloads.slice(r.completed)
      checkSpool(root, completed, maybe, f, { afterRestart: false })
      for (const file of tempFiles(root)) if (HOOK_TEMP.test(path.basename(file))) f.note('hook_temp_left_by_kill')
      const restart = await restartAndCheck('hook', [root], f, Date.now())
      checkSpool(root, completed, maybe, f, { afterRestart: true, restartClaimed: restart.results[0].claimed })
      const sent = r.killedAfterMs === null ? 'no hook running at the kill time' : `killed at ${r.killedAfterMs.toFixed(2)} ms`
      return { roots: [root], landed: r.killedAfterMs !== null, repro: `${loop ? 'loop' : 'single'} ${kinds.join('+')}, kill planned at ${delayMs.toFixed(2)} ms (${sent}), ${r.completed}/${payloads.length} hooks completed` }
    },
  },

  drain: {
    jobs: 2,
    describe: `drainRuntimeTurnSettledEvents over ${DRAIN_PAYLOADS} spooled payloads (resolved, unresolved, invalid)`,
    async prepare(base) {
      const template = exampleRoot(base, 'drain-template')
      await runToEnd({ kind: 'install-hook', root: template, nowMs: Date.now() })
      return { template }
    },
    fill(ctx, root) {
      // Named as the hook names them; a mix that resolves (bob, jill, kim),
      // stays unresolved (unknown session) or is invalid (not JSON).
      const incoming = path.join(root, SPOOL_REL, 'incoming')
      const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')
      const payloads = []
      for (let i = 0; i < DRAIN_PAYLOADS; i++) {
        const sessions = ['B1', 'J1', 'K1', 'Z9']
        const payload = i % 10 === 9 ? Buffer.from(`not json ${crypto.randomBytes(8).toString('hex')}`) : stopPayload(i % 3 === 0 ? 'medium' : 'small', sessions[i % 4])
        fs.writeFileSync(path.join(incoming, `${stamp}-${10000 + i}-0.claude.json`), payload)
        payloads.push(payload)
      }
      return payloads
    },
    async calibrate(ctx, base, jobs) {
      const times = []
      await inParallel(CALIBRATION_RUNS, jobs, async (i) => {
        const root = path.join(base, `drain-cal-${i}`)
        copyTree(ctx.template, root)
        this.fill(ctx, root)
        times.push(await timeReadyToDone({ kind: 'drain', root, nowMs: Date.now() }))
        fs.rmSync(root, { recursive: true, force: true })
      })
      ctx.duration = new Durations(times)
      return `ready→done ${ctx.duration.current().toFixed(1)} ms`
    },
    async trial(ctx, base, i, rand, f) {
      const root = path.join(base, `drain-${i}`)
      copyTree(ctx.template, root)
      const payloads = this.fill(ctx, root)
      // Every tenth child runs uninterrupted: its duration keeps the kill window current.
      const delayMs = i % REMEASURE_EVERY === REMEASURE_EVERY - 1 ? undefined : rand() * ctx.duration.current()
      const nowMs = Date.now()
      const r = await runChildKilled({ kind: 'drain', root, nowMs }, delayMs)
      if (r.finished) ctx.duration.add(r.readyToDoneMs)
      checkSpool(root, payloads, [], f, { afterRestart: false })
      checkStoreFiles(root, f, { afterRestart: false })
      await restartAndCheck('drain', [root], f, nowMs)
      checkSpool(root, payloads, [], f, { afterRestart: true })
      checkTurnSettledJournal(root, f)
      return { roots: [root], landed: !r.finished && r.readyToDoneMs === null, repro: `${killNote(delayMs, r)} after ready` }
    },
  },

  store: {
    jobs: 2,
    describe: `refreshTeam/report/replayPendingReports/refreshStatus busy loop (${STORE_ITERATIONS} iterations per child)`,
    async prepare(base) {
      return { template: exampleRoot(base, 'store-template') }
    },
    async calibrate(ctx, base, jobs) {
      const times = []
      await inParallel(CALIBRATION_RUNS, jobs, async (i) => {
        const root = path.join(base, `store-cal-${i}`)
        copyTree(ctx.template, root)
        times.push(await timeReadyToDone({ kind: 'store', root, nowMs: Date.now(), iterations: STORE_ITERATIONS }))
        fs.rmSync(root, { recursive: true, force: true })
      })
      ctx.duration = new Durations(times)
      return `ready→done ${ctx.duration.current().toFixed(1)} ms`
    },
    async trial(ctx, base, i, rand, f) {
      const root = path.join(base, `store-${i}`)
      copyTree(ctx.template, root)
      // Every tenth child runs uninterrupted: its duration keeps the kill window current.
      const delayMs = i % REMEASURE_EVERY === REMEASURE_EVERY - 1 ? undefined : rand() * ctx.duration.current()
      const nowMs = Date.now()
      const r = await runChildKilled({ kind: 'store', root, nowMs, iterations: STORE_ITERATIONS }, delayMs)
      if (r.finished) ctx.duration.add(r.readyToDoneMs)
      checkStoreFiles(root, f, { afterRestart: false })
      const temps = tempFiles(root).length
      if (temps) f.note('temp_left_by_kill', temps)
      await restartAndCheck('store', [root], f, nowMs)
      const ops = r.messages.filter((m) => m.op !== undefined).length
      return { roots: [root], landed: !r.finished && r.readyToDoneMs === null, repro: `${killNote(delayMs, r)} after ready, ${ops}/${STORE_ITERATIONS} iterations done` }
    },
  },

  nudge: {
    jobs: 2,
    describe: `dispatchDueNudges over ${NUDGE_ROOTS_PER_CHILD} roots per child, every member with a planned nudge`,
    async prepare(base) {
      const template = exampleRoot(base, 'nudge-template')
      const nowMs = Date.now()
      writeShadowHistory(template, nowMs)
      await runToEnd({ kind: 'plan-nudges', root: template, nowMs })
      const planned = []
      const membersDir = path.join(template, 'teams', TEAM, 'members')
      for (const m of listDir(membersDir)) {
        const file = path.join(membersDir, m.name, '.member-work-sync', 'outbox.json')
        if (fs.existsSync(file)) planned.push(...Object.values(readJson(file).items).filter((it) => it.status === 'pending').map((it) => it.id))
      }
      if (planned.length === 0) throw new Error('nudge template: no nudge was planned')
      // Dispatch runs on the clock the nudges were planned at (+30 s, as in the test).
      return { template, planned, nowMs: nowMs + 30_000 }
    },
    roots(ctx, base, tag) {
      return Array.from({ length: NUDGE_ROOTS_PER_CHILD }, (_, j) => {
        const root = path.join(base, `nudge-${tag}-${j}`)
        copyTree(ctx.template, root)
        return root
      })
    },
    async calibrate(ctx, base, jobs) {
      const times = []
      let delivered = 0
      await inParallel(CALIBRATION_RUNS, jobs, async (i) => {
        const roots = this.roots(ctx, base, `cal${i}`)
        const spec = { kind: 'nudge', roots, nowMs: ctx.nowMs }
        const { ms, messages } = await timeReadyToDone(spec, true)
        times.push(ms)
        delivered = messages.find((m) => m.done).results.reduce((n, r) => n + r.delivered, 0)
        for (const root of roots) fs.rmSync(root, { recursive: true, force: true })
      })
      ctx.duration = new Durations(times)
      return `ready→done ${ctx.duration.current().toFixed(1)} ms; ${ctx.planned.length} nudges planned per root, ${delivered} delivered over ${NUDGE_ROOTS_PER_CHILD} roots uninterrupted`
    },
    async trial(ctx, base, i, rand, f) {
      const roots = this.roots(ctx, base, i)
      // Every tenth child runs uninterrupted: its duration keeps the kill window current.
      const delayMs = i % REMEASURE_EVERY === REMEASURE_EVERY - 1 ? undefined : rand() * ctx.duration.current()
      const r = await runChildKilled({ kind: 'nudge', roots, nowMs: ctx.nowMs }, delayMs)
      if (r.finished) ctx.duration.add(r.readyToDoneMs)
      for (const root of roots) {
        checkStoreFiles(root, f, { afterRestart: false })
        checkNudges(root, f, { afterRestart: false })
      }
      await restartAndCheck('nudge', roots, f, ctx.nowMs)
      for (const root of roots) checkNudges(root, f, { afterRestart: true })
      const ops = r.messages.filter((m) => m.op !== undefined).length
      return { roots, landed: !r.finished && r.readyToDoneMs === null, repro: `${killNote(delayMs, r)} after ready, ${ops}/${roots.length} roots dispatched` }
    },
  },

  sqlite: {
    jobs: 2,
    describe: `the addon's SQLite store in direct mode (sqlite_peer): ${SQLITE_ROUNDS} rounds of status write, intent append/markProcessed, outbox ensure/claim/deliver (delivery log)/markDelivered`,
    async prepare(base) {
      const peer = sqlitePeer()
      const template = path.join(base, 'sqlite-template')
      fs.mkdirSync(template, { recursive: true })
      // Rows from an earlier session: delivered items, statuses, intents.
      const r = await runAndKill(peer, ['run', JSON.stringify(sqliteSpec(template, { rounds: 6, firstRound: 0 }))], { delayMs: 60_000 })
      if (!r.finished) throw new Error(`sqlite template run failed: ${r.stderr}`)
      return { peer, template }
    },
    root(ctx, base, tag) {
      const root = path.join(base, `sqlite-${tag}`)
      copyTree(ctx.template, root)
      return root
    },
    async calibrate(ctx, base, jobs) {
      const times = []
      await inParallel(CALIBRATION_RUNS, jobs, async (i) => {
        const root = this.root(ctx, base, `cal${i}`)
        const r = await runAndKill(ctx.peer, ['run', JSON.stringify(sqliteSpec(root))], { delayMs: 120_000 })
        if (!r.finished) throw new Error(`sqlite calibration run failed: ${r.stderr}`)
        times.push(r.elapsedMs)
        fs.rmSync(root, { recursive: true, force: true })
      })
      ctx.duration = new Durations(times)
      return `spawn→exit ${ctx.duration.current().toFixed(1)} ms (${path.relative(REPO, ctx.peer)})`
    },
    async trial(ctx, base, i, rand, f) {
      const root = this.root(ctx, base, i)
      const delayMs = i % REMEASURE_EVERY === REMEASURE_EVERY - 1 ? 120_000 : rand() * ctx.duration.current()
      const r = await runAndKill(ctx.peer, ['run', JSON.stringify(sqliteSpec(root))], { delayMs })
      if (r.finished) ctx.duration.add(r.elapsedMs)
      const committed = r.messages
      const killedAt = sqliteKillPoint(committed)
      if (!r.finished) f.note(`killed_${killedAt}`)
      checkSqlite(ctx, root, committed, f, { afterRestart: false })
      // The restart: the clock 6 min ahead takes over stale claims; it claims and delivers
      // everything due and writes statuses of its own.
      const restart = await runAndKill(
        ctx.peer,
        ['run', JSON.stringify(sqliteSpec(root, { now: SQLITE_NOW + RESTART_AHEAD_MS, rounds: 3, firstRound: 100_000, ensurePerRound: 0, claimLimit: 1000, intents: false, name: 'restart' }))],
        { delayMs: 120_000 }
      )
      if (!restart.finished) f.fail('restart_failed', restart.stderr)
      const errors = restart.messages.filter((m) => m.error)
      if (errors.length) f.fail('restart_surfaced_error', JSON.stringify(errors[0]))
      checkSqlite(ctx, root, [...committed, ...restart.messages], f, { afterRestart: true })
      const steps = committed.filter((m) => !m.ready && !m.done).length
      return { roots: [root], landed: !r.finished, repro: `kill planned at ${delayMs.toFixed(2)} ms after spawn (${r.finished ? 'exited first' : `last committed step: ${killedAt}`}), ${steps} steps committed` }
    },
  },

  'sqlite-import': {
    jobs: 2,
    describe: `the addon's SQLite store with its team files (sqlite_peer, teams/ given): the first op imports the recorded legacy JSON team (live files over earlier rows, one archive generation already there, an invalid file quarantined), then ${IMPORT_ROUNDS} rounds of mutations fenced by the JSON replica; purgeTeam at round ${IMPORT_PURGE_ROUND} in one trial of three`,
    async prepare(base) {
      const peer = sqlitePeer()
      const scenario = JSON.parse(fs.readFileSync(IMPORT_RECORDING, 'utf8')).import.find((s) => s.name === 'live files over canonical rows')
      if (!scenario || scenario.team !== IMPORT_TEAM) throw new Error(`no 'live files over canonical rows' import scenario in ${IMPORT_RECORDING}`)
      const template = path.join(base, 'sqlite-import-template')
      const teams = path.join(template, 'claude', 'teams')
      for (const [rel, text] of Object.entries(scenario.files)) {
        fs.mkdirSync(path.dirname(path.join(teams, rel)), { recursive: true })
        fs.writeFileSync(path.join(teams, rel), text)
      }
      fs.mkdirSync(path.join(template, 'storage'), { recursive: true })
      const seedFile = path.join(base, 'sqlite-import-seed.json')
      fs.writeFileSync(seedFile, JSON.stringify(scenario.seed))
      require('node:child_process').execFileSync(peer, ['seed', path.join(template, 'storage', 'app.db'), seedFile])
      const imported = scenario.calls[0]
      return {
        peer,
        template,
        seed: scenario.seed,
        // The reference's rows and files after its import of this team.
        expectedRows: imported.rows,
        expectedFiles: imported.files.filter((f) => !f.endsWith('sqlite-fallback-replica.json')),
        liveFiles: Object.keys(scenario.files).filter((f) => !f.includes('.pre-sqlite') && !f.endsWith('member.meta.json')),
      }
    },
    root(ctx, base, tag) {
      const root = path.join(base, `sqlite-import-${tag}`)
      copyTree(ctx.template, root)
      return root
    },
    async calibrate(ctx, base, jobs) {
      const times = []
      await inParallel(CALIBRATION_RUNS, jobs, async (i) => {
        const root = this.root(ctx, base, `cal${i}`)
        const r = await runAndKill(ctx.peer, ['run', JSON.stringify(importSpec(root, { purgeAtRound: i % 2 ? IMPORT_PURGE_ROUND : undefined }))], { delayMs: 120_000 })
        if (!r.finished) throw new Error(`sqlite-import calibration run failed: ${r.stderr}`)
        const errors = r.messages.filter((m) => m.error)
        if (errors.length) throw new Error(`sqlite-import calibration run surfaced ${JSON.stringify(errors[0])}`)
        times.push(r.elapsedMs)
        fs.rmSync(root, { recursive: true, force: true })
      })
      // The import window: a child whose only op is the first status write (import, op, publication).
      const importTimes = []
      await inParallel(CALIBRATION_RUNS, jobs, async (i) => {
        const root = this.root(ctx, base, `cal-import${i}`)
        const r = await runAndKill(ctx.peer, ['run', JSON.stringify(importSpec(root, IMPORT_ONLY))], { delayMs: 120_000 })
        if (!r.finished) throw new Error(`sqlite-import calibration run failed: ${r.stderr}`)
        importTimes.push(r.elapsedMs)
        fs.rmSync(root, { recursive: true, force: true })
      })
      // The purge window's end: a child that stops after the round of its purge.
      const purgeTimes = []
      await inParallel(CALIBRATION_RUNS, jobs, async (i) => {
        const root = this.root(ctx, base, `cal-purge${i}`)
        const r = await runAndKill(ctx.peer, ['run', JSON.stringify(importSpec(root, UNTIL_PURGE))], { delayMs: 120_000 })
        if (!r.finished || !r.messages.some((m) => m.purged)) throw new Error(`sqlite-import purge calibration run failed: ${r.stderr}`)
        purgeTimes.push(r.elapsedMs)
        fs.rmSync(root, { recursive: true, force: true })
      })
      ctx.duration = new Durations(times)
      ctx.importDuration = new Durations(importTimes)
      ctx.purgeDuration = new Durations(purgeTimes)
      return `spawn→exit ${ctx.duration.current().toFixed(1)} ms, through the first op (the import) ${ctx.importDuration.current().toFixed(1)} ms, through the purge's round ${ctx.purgeDuration.current().toFixed(1)} ms (${path.relative(REPO, ctx.peer)})`
    },
    async trial(ctx, base, i, rand, f) {
      const root = this.root(ctx, base, i)
      const purge = i % 3 === 2
      // Every other trial kills uniformly over the first op's window (process start, import,
      // publication); a purge trial otherwise over the run through its purge's round, the others
      // over the whole run.
      const inImport = i % 2 === 1
      const remeasure = i % REMEASURE_EVERY === REMEASURE_EVERY - 1
      const window = inImport ? ctx.importDuration : purge ? ctx.purgeDuration : ctx.duration
      const delayMs = remeasure ? 120_000 : rand() * window.current()
      const r = await runAndKill(ctx.peer, ['run', JSON.stringify(importSpec(root, { purgeAtRound: purge ? IMPORT_PURGE_ROUND : undefined }))], { delayMs })
      if (r.finished) ctx.duration.add(r.elapsedMs)
      if (!r.finished && r.messages.some((m) => m.purging) && !r.messages.some((m) => m.purged)) f.note('killed_between_purging_and_purged')
      const committed = r.messages
      const killedAt = sqliteKillPoint(committed)
      const markerAtKill = purgeMarkers(root).length > 0
      if (listDir(path.join(root, 'claude', '.member-work-sync-deletions')).some((e) => STORE_TEMP.test(e.name))) f.note('purge_marker_temp_file_left_by_kill')
      const afterKill = checkImport(ctx, root, committed, f, { afterRestart: false, markerAtKill })
      if (!r.finished) {
        f.note(`killed_${killedAt}`)
        f.note(`landed_${afterKill.landing}`)
      }
      // Dead writers' temp files (the replica's) as two hours old: the restart's write sweeps them.
      const leftovers = ageLeftovers(path.join(root, 'claude'))
      if (leftovers) f.note('temp_files_left_by_kill', leftovers)
      // The restart: a new process on the same files and database; its first op finishes
      // whatever the kill interrupted (purge, import, publication), then claims everything due.
      const restart = await runAndKill(
        ctx.peer,
        ['run', JSON.stringify(importSpec(root, { now: SQLITE_NOW + RESTART_AHEAD_MS, rounds: 3, firstRound: 100_000, ensurePerRound: 0, claimLimit: 1000, intents: false, name: 'restart' }))],
        { delayMs: 120_000 }
      )
      if (!restart.finished) f.fail('restart_failed', restart.stderr)
      const errors = restart.messages.filter((m) => m.error)
      if (errors.length) f.fail('restart_surfaced_error', JSON.stringify(errors[0]))
      checkImport(ctx, root, [...committed, ...restart.messages], f, { afterRestart: true, markerAtKill, purgedAtKill: afterKill.purged })
      const steps = committed.filter((m) => !m.ready && !m.done).length
      return { roots: [root], landed: !r.finished, repro: `${purge ? 'purge trial, ' : ''}kill planned at ${delayMs.toFixed(2)} ms after spawn (${r.finished ? 'exited first' : `last committed step: ${killedAt}, ${afterKill.landing}`}), ${steps} steps committed` }
    },
  },
}

// ---------------------------------------------------------------------------
// The SQLite phase's peer and checks


/** The sqlite_peer executable: MWS_SQLITE_PEER, else the newest build of the example. */
function sqlitePeer() {
  const candidates = process.env.MWS_SQLITE_PEER
    ? [process.env.MWS_SQLITE_PEER]
    : ['dev-release', 'release', 'debug'].map((p) => path.join(REPO, 'target', p, 'examples', 'sqlite_peer'))
  const found = candidates.filter((c) => fs.existsSync(c)).sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0]
  if (!found) throw new Error(`no sqlite_peer build (${candidates.join(', ')}): cargo build --profile dev-release --example sqlite_peer`)
  return found
}

function sqliteSpec(root, extra = {}) {
  return {
    store: 'sqlite',
    db: path.join(root, 'storage', 'app.db'),
    team: TEAM,
    name: 'addon',
    now: SQLITE_NOW,
    rounds: SQLITE_ROUNDS,
    firstRound: 1000,
    ensurePerRound: 1,
    claimLimit: 2,
    intents: true,
    inbox: path.join(root, 'delivery-log.jsonl'),
    ...extra,
  }
}

/** The last committed step before the kill (what the kill interrupted came next). */
function sqliteKillPoint(lines) {
  const last = [...lines].reverse().find((m) => !m.ready && !m.done)
  if (!last) return 'before_first_commit'
  return `after_${Object.keys(last)[0]}`
}

function sqliteDump(ctx, root) {
  const out = require('node:child_process').execFileSync(ctx.peer, ['dump', path.join(root, 'storage', 'app.db')], { encoding: 'utf8' })
  return JSON.parse(out.trim().split('\n').pop())
}

/**
 * After a kill (and again after the restart): integrity_check ok; every committed step of the
 * logs in the database; the status columns and status_json agree, and each status has its
 * status_evaluated event (one transaction); a delivered item has exactly one delivery-log line;
 * after the restart no claim is stranded and no logged item is undelivered.
 */
function checkSqlite(ctx, root, lines, f, { afterRestart }) {
  const when = afterRestart ? '_after_restart' : ''
  let dump
  try {
    dump = sqliteDump(ctx, root)
  } catch (e) {
    f.fail(`sqlite_unreadable${when}`, e.message)
    return
  }
  if (dump.integrity !== 'ok') f.fail(`integrity_check${when}`, dump.integrity)
  const outbox = new Map(dump.outbox.map((r) => [r.id, r]))
  const intents = new Map(dump.intents.map((r) => [r.id, r]))
  const statuses = new Map(dump.statuses.map((r) => [r.member_key, r]))
  const events = new Set(dump.events.filter((e) => e.kind === 'status_evaluated').map((e) => `${e.member_key} ${e.recorded_at}`))
  const logLines = fs.existsSync(path.join(root, 'delivery-log.jsonl'))
    ? fs.readFileSync(path.join(root, 'delivery-log.jsonl'), 'utf8').split('\n').filter(Boolean)
    : []
  const delivered = new Map()
  for (const line of logLines) {
    let id
    try {
      id = JSON.parse(line).messageId
    } catch {
      // A torn last line of the stand-in log (its append is not atomic): not the store's.
      f.note('delivery_log_torn_line')
      continue
    }
    delivered.set(id, (delivered.get(id) || 0) + 1)
  }
  for (const m of lines) {
    if (m.status) {
      const row = statuses.get(m.status)
      if (!row || row.evaluated_at < m.evaluatedAt) f.fail(`committed_status_lost${when}`, `${m.status} ${m.evaluatedAt}: ${JSON.stringify(row)}`)
    } else if (m.intent) {
      if (!intents.has(m.intent)) f.fail(`committed_intent_lost${when}`, m.intent)
    } else if (m.processed) {
      if (intents.get(m.processed)?.status !== 'accepted') f.fail(`committed_processed_lost${when}`, JSON.stringify(intents.get(m.processed)))
    } else if (m.ensured) {
      if (!outbox.has(m.ensured)) f.fail(`committed_outbox_item_lost${when}`, m.ensured)
    } else if (m.claimed) {
      const row = outbox.get(m.claimed)
      if (!row || !['claimed', 'delivered'].includes(row.status) || row.attempt_generation < m.gen) f.fail(`committed_claim_lost${when}`, `${m.claimed} gen ${m.gen}: ${JSON.stringify(row)}`)
    } else if (m.inbox) {
      if (!delivered.has(m.inbox)) f.fail(`delivery_log_line_lost${when}`, m.inbox)
    } else if (m.delivered) {
      if (outbox.get(m.delivered)?.status !== 'delivered') f.fail(`committed_delivery_lost${when}`, JSON.stringify(outbox.get(m.delivered)))
    } else if (m.error) {
      f.fail(`addon_surfaced_error${when}`, JSON.stringify(m))
    }
  }
  for (const row of dump.statuses) {
    if (row.evaluated_at !== row.json_evaluated_at) f.fail(`status_columns_disagree_with_json${when}`, JSON.stringify(row))
    if (!events.has(`${row.member_key} ${row.evaluated_at}`)) f.fail(`status_without_its_metric_event${when}`, JSON.stringify(row))
  }
  for (const [id, n] of delivered) if (n > 1) f.fail(`delivered_twice${when}`, `${id} ×${n}`)
  for (const row of dump.outbox) {
    const n = delivered.get(row.id) || 0
    if (row.status === 'delivered' && n !== 1) f.fail(`outbox_delivered_without_delivery_log_line${when}`, row.id)
    if (!afterRestart) {
      if (row.status === 'claimed') f.note('item_left_claimed_by_kill')
      if (row.status !== 'delivered' && n > 0) f.note('delivery_log_line_before_markDelivered_at_kill')
      continue
    }
    if (row.status === 'claimed') f.fail('claim_stranded_after_restart', row.id)
    if (row.status !== 'delivered' && n > 0) f.fail('delivery_log_line_but_outbox_not_delivered_after_restart', `${row.id}: ${row.status}`)
    if (row.status === 'pending') f.fail('pending_item_not_delivered_after_restart', row.id)
  }
  for (const id of delivered.keys()) if (!outbox.has(id)) f.fail(`delivery_log_line_without_outbox_row${when}`, id)
}

function importSpec(root, extra = {}) {
  return sqliteSpec(root, {
    teams: path.join(root, 'claude', 'teams'),
    team: IMPORT_TEAM,
    members: IMPORT_MEMBERS,
    rounds: IMPORT_ROUNDS,
    ...extra,
  })
}

/**
 * The purge markers: files of the deletions folder beside teams/ but a killed write's temp file
 * (not a marker; swept at the next marker write into that folder, which a restart does not make).
 */
function purgeMarkers(root) {
  return listDir(path.join(root, 'claude', '.member-work-sync-deletions'))
    .map((e) => e.name)
    .filter((name) => !STORE_TEMP.test(name))
}

/** Every file below `dir`, relative and sorted, a quarantined file's stamp as `<ms>` (the recording's form). */
function filesBelow(dir) {
  const out = []
  const walk = (d) => {
    for (const e of listDir(d)) {
      const p = path.join(d, e.name)
      if (e.isDirectory()) walk(p)
      else out.push(path.relative(dir, p).split(path.sep).join('/').replace(/\.invalid\.\d+$/, '.invalid.<ms>'))
    }
  }
  walk(dir)
  return out.sort()
}

/** A row as one comparable string (columns sorted; store_imports' wall clock blanked). */
function rowKey(table, row) {
  const r = { ...row }
  if (table === 'store_imports') r.imported_at = '<importedAt>'
  return JSON.stringify(Object.keys(r).sort().map((k) => [k, r[k]]))
}

const IMPORT_TABLES = ['member_work_sync_status', 'member_work_sync_report_intents', 'member_work_sync_outbox', 'member_work_sync_metric_events']
const ROW_ID = { member_work_sync_status: (r) => r.member_key, store_imports: (r) => r.store_id }

/**
 * The sqlite-import phase's checks, after the kill and again after the restart:
 * - integrity_check ok;
 * - the import is all or nothing: without a store_imports row the team's rows are exactly the seed
 *   (import not committed) or exactly the reference's merged rows (committed, marker not yet
 *   recorded); with one, every row of the reference's import result is there (a legacy outbox row
 *   our claims moved only as present), and after the restart the files below teams/ are exactly
 *   the reference's (every live file archived once, no second generation) and store_imports is the
 *   reference's row;
 * - the replica is absent (no op ran yet) or dirty, or clean with exactly the rows' snapshot; after
 *   the restart always clean and equal (a clean one that differs is allowed only while a purge
 *   marker is pending: the marker's completion republishes it);
 * - a purge is all or nothing: the legacy rows and the steps committed before it are all there or
 *   all gone, gone whenever the marker was on disk at the kill or `purged` was said; no marker
 *   survives the restart;
 * - every step committed after the purge (or in a run without one) is in the database, and a
 *   delivered item of ours has exactly one delivery-log line.
 */
function checkImport(ctx, root, lines, f, { afterRestart, markerAtKill, purgedAtKill }) {
  const when = afterRestart ? '_after_restart' : ''
  let dump
  try {
    const out = require('node:child_process').execFileSync(ctx.peer, ['dump-team', path.join(root, 'storage', 'app.db'), path.join(root, 'claude', 'teams'), IMPORT_TEAM], { encoding: 'utf8' })
    dump = JSON.parse(out.trim().split('\n').pop())
  } catch (e) {
    f.fail(`sqlite_unreadable${when}`, e.message)
    return { landing: 'unreadable', purged: false }
  }
  if (dump.integrity !== 'ok') f.fail(`integrity_check${when}`, dump.integrity)
  const rows = dump.rows
  const keysOf = (table, list) => new Set(list.map((r) => rowKey(table, r)))
  const idOf = (table, r) => (ROW_ID[table] || ((x) => x.id))(r)
  const markers = purgeMarkers(root)
  if (afterRestart && markers.length) f.fail('purge_marker_left_after_restart', markers.join(', '))

  // Where the purge stands: said, pending (marker), or by the rows (legacy all gone).
  const purgingAt = lines.findIndex((m) => m.purging)
  const said = lines.some((m) => m.purged)
  const legacyIds = IMPORT_TABLES.flatMap((t) => ctx.expectedRows[t].map((r) => `${t} ${idOf(t, r)}`))
  const present = new Set(IMPORT_TABLES.flatMap((t) => rows[t].map((r) => `${t} ${idOf(t, r)}`)))
  const legacyPresent = legacyIds.filter((id) => present.has(id)).length
  const imported = rows.store_imports.some((r) => r.team_name === IMPORT_TEAM)
  let purged = false
  if (purgingAt >= 0) {
    if (legacyPresent !== 0 && legacyPresent !== legacyIds.length) f.fail(`purge_not_all_or_nothing${when}`, `${legacyPresent}/${legacyIds.length} legacy rows left`)
    purged = legacyPresent === 0 && imported
    if ((said || (afterRestart && (markerAtKill || purgedAtKill))) && !purged) f.fail(`purge_undone${when}`, `${legacyPresent} legacy rows left`)
  }

  // The import: all or nothing, once.
  let landing
  const liveLeft = ctx.liveFiles.filter((rel) => fs.existsSync(path.join(root, 'claude', 'teams', rel))).length
  const teamRows = (table) => rows[table].filter((r) => r.team_name === IMPORT_TEAM)
  if (!imported) {
    const same = (expected) => IMPORT_TABLES.every((t) => {
      const a = keysOf(t, teamRows(t))
      const b = keysOf(t, expected[t] || [])
      return a.size === b.size && [...a].every((k) => b.has(k))
    })
    if (same(ctx.seed)) landing = 'before_import_commit'
    else if (same(ctx.expectedRows)) landing = 'import_committed_before_store_imports'
    else f.fail(`import_partial${when}`, IMPORT_TABLES.map((t) => `${t} ${teamRows(t).length}`).join(', '))
    if (afterRestart) f.fail('import_not_done_after_restart', 'no store_imports row')
  } else {
    landing = liveLeft ? 'archive_renames' : 'after_import'
    if (!purged) {
      for (const t of IMPORT_TABLES) {
        const have = new Map(rows[t].map((r) => [idOf(t, r), r]))
        for (const want of ctx.expectedRows[t]) {
          const got = have.get(idOf(t, want))
          const moved = t === 'member_work_sync_outbox' && got && ['addon', 'restart'].includes(got.claimed_by)
          if (!got || (!moved && rowKey(t, got) !== rowKey(t, want))) f.fail(`legacy_row_lost_or_changed${when}`, `${t} ${idOf(t, want)}: ${JSON.stringify(got)}`)
        }
      }
    }
    if (afterRestart) {
      const want = ctx.expectedRows.store_imports.map((r) => rowKey('store_imports', r))
      const got = rows.store_imports.map((r) => rowKey('store_imports', r))
      // A purge records its own import of the (empty) live state.
      if (!purged && JSON.stringify(got) !== JSON.stringify(want)) f.fail('store_imports_differs_after_restart', JSON.stringify(rows.store_imports))
    }
  }
  if (afterRestart) {
    const files = filesBelow(path.join(root, 'claude', 'teams')).filter((rel) => !rel.endsWith('sqlite-fallback-replica.json'))
    if (JSON.stringify(files) !== JSON.stringify(ctx.expectedFiles)) {
      const extra = files.filter((x) => !ctx.expectedFiles.includes(x))
      const missing = ctx.expectedFiles.filter((x) => !files.includes(x))
      f.fail('team_files_differ_after_restart', `extra ${extra.join(', ') || '-'}; missing ${missing.join(', ') || '-'}`)
    }
  }

  // The replica fence.
  const replica = dump.replica
  if (replica.state === 'unreadable') f.fail(`replica_unreadable${when}`, replica.detail)
  if (replica.state === 'clean' && !replica.equalsRows) {
    if (markers.length) f.note('clean_replica_stale_while_purge_marker_pending')
    else f.fail(`clean_replica_differs_from_rows${when}`, 'clean replica snapshot != team rows')
  }
  if (afterRestart && replica.state !== 'clean') f.fail('replica_not_clean_after_restart', replica.state)
  if (afterRestart && replica.state === 'clean' && !replica.equalsRows) f.fail('clean_replica_differs_from_rows_after_restart', 'clean replica snapshot != team rows')
  if (!afterRestart) landing = `${landing || 'unclassified'}_replica_${replica.state}${markers.length ? '_purge_marker' : ''}`

  // Committed steps: those before a purge that took effect are gone with it.
  const kept = purged ? lines.slice(purgingAt + 1) : lines
  if (purgingAt >= 0 && !purged) {
    // Not purged: nothing before it may be gone either (all or nothing).
  }
  const outbox = new Map(rows.member_work_sync_outbox.map((r) => [r.id, r]))
  const intents = new Map(rows.member_work_sync_report_intents.map((r) => [r.id, r]))
  const statuses = new Map(rows.member_work_sync_status.map((r) => [r.member_key, r]))
  if (purged) {
    for (const m of lines.slice(0, purgingAt)) {
      const id = m.intent || m.ensured
      if (id && (intents.has(id) || outbox.has(id))) f.fail(`row_survived_purge${when}`, id)
    }
  }
  const logFile = path.join(root, 'delivery-log.jsonl')
  const delivered = new Map()
  for (const line of fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').split('\n').filter(Boolean) : []) {
    try {
      const id = JSON.parse(line).messageId
      delivered.set(id, (delivered.get(id) || 0) + 1)
    } catch {
      f.note('delivery_log_torn_line')
    }
  }
  for (const m of kept) {
    if (m.status) {
      const row = statuses.get(m.status)
      if (!row || row.evaluated_at < m.evaluatedAt) f.fail(`committed_status_lost${when}`, `${m.status} ${m.evaluatedAt}: ${JSON.stringify(row)}`)
    } else if (m.intent) {
      if (!intents.has(m.intent)) f.fail(`committed_intent_lost${when}`, m.intent)
    } else if (m.processed) {
      if (intents.get(m.processed)?.status !== 'accepted') f.fail(`committed_processed_lost${when}`, JSON.stringify(intents.get(m.processed)))
    } else if (m.ensured) {
      if (!outbox.has(m.ensured)) f.fail(`committed_outbox_item_lost${when}`, m.ensured)
    } else if (m.delivered) {
      if (outbox.get(m.delivered)?.status !== 'delivered') f.fail(`committed_delivery_lost${when}`, JSON.stringify(outbox.get(m.delivered)))
    } else if (m.error) {
      f.fail(`addon_surfaced_error${when}`, JSON.stringify(m))
    }
  }
  for (const [id, n] of delivered) if (n > 1) f.fail(`delivered_twice${when}`, `${id} ×${n}`)
  for (const row of rows.member_work_sync_outbox) {
    if (!['addon', 'restart'].includes(row.claimed_by)) continue
    const n = delivered.get(row.id) || 0
    if (row.status === 'delivered' && n !== 1) f.fail(`outbox_delivered_without_delivery_log_line${when}`, row.id)
    if (afterRestart && row.status === 'claimed') f.fail('claim_stranded_after_restart', row.id)
    if (afterRestart && row.status !== 'delivered' && n > 0) f.fail('delivery_log_line_but_outbox_not_delivered_after_restart', `${row.id}: ${row.status}`)
  }
  if (afterRestart) for (const row of rows.member_work_sync_outbox) if (row.status === 'pending' && row.id.startsWith('addon-')) f.fail('pending_item_not_delivered_after_restart', row.id)
  return { landing, purged }
}

/** Each resolved payload is acted on once: one `turn_settled_resolved` journal event per sourceId. */
function checkTurnSettledJournal(root, f) {
  const membersDir = path.join(root, 'teams', TEAM, 'members')
  for (const m of listDir(membersDir)) {
    const file = path.join(membersDir, m.name, '.member-work-sync', 'journal.jsonl')
    if (!fs.existsSync(file)) continue
    const seen = new Map()
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      let event
      try {
        event = JSON.parse(line)
      } catch {
        continue
      }
      if (event.type !== 'turn_settled_resolved') continue
      const id = event.metadata && event.metadata.sourceId
      if (!id) continue
      seen.set(id, (seen.get(id) || 0) + 1)
    }
    // Journaled after the commit rename: twice means the payload was acted on twice.
    for (const [id, n] of seen) if (n > 1) f.fail('turn_settled_resolved_journaled_twice', `${m.name}: ${id} ×${n}`)
  }
}

/**
 * Runs an addon child that SIGKILLs itself `delayMs` after its `ready` line
 * (see `ready` in runChild). `finished`: it exited on its own first.
 */
async function runChildKilled(spec, delayMs) {
  const { child, exited } = startProcess(process.execPath, childArgs({ ...spec, killAfterMs: delayMs }))
  const watchdog = setTimeout(() => killGroup(child), 120_000)
  const r = await exited
  clearTimeout(watchdog)
  const finished = r.code === 0 && r.signal === null
  if (!finished && r.signal !== 'SIGKILL') throw new Error(`child ${spec.kind} failed (${r.code}/${r.signal}): ${r.stderr}`)
  const killing = r.messages.find((m) => m.killing !== undefined)
  const done = r.messages.find((m) => m.done)
  return { ...r, finished, killedAfterMs: killing ? killing.killing : null, readyToDoneMs: done ? done.ms : null }
}

/** ms from the child's `ready` line to its `done` line, uninterrupted. */
async function timeReadyToDone(spec, withMessages = false) {
  const { exited } = startProcess(process.execPath, childArgs(spec))
  const r = await exited
  const done = r.messages.find((m) => m.done)
  if (r.code !== 0 || !done) throw new Error(`calibration child failed: ${r.stderr}`)
  const ms = done.ms
  return withMessages ? { ms, messages: r.messages } : ms
}

// ---------------------------------------------------------------------------
// Driver

async function runPhase(name, opts, base, rand) {
  const phase = phases[name]
  const phaseStarted = Date.now()
  const ctx = await phase.prepare(base)
  const jobs = opts.jobs || phase.jobs
  const calibration = await phase.calibrate(ctx, base, jobs)
  console.log(`\n[${name}] ${phase.describe}`)
  console.log(`  calibration (median of ${CALIBRATION_RUNS} uninterrupted runs, ${jobs} at a time as the trials): ${calibration}`)
  const stats = { trials: 0, landed: 0, passed: 0, failed: 0, byType: {}, byKey: {}, notes: {}, examples: {}, noteExamples: {} }
  let next = 0
  const worker = async () => {
    for (;;) {
      const i = next++
      if (i >= opts.trials) return
      const f = new Findings()
      let outcome
      try {
        outcome = await phase.trial(ctx, base, i, rand, f)
      } catch (e) {
        f.fail('trial_error', e.message)
        outcome = { roots: [], landed: false, repro: '' }
      }
      stats.trials++
      if (outcome.landed) stats.landed++
      for (const [k, v] of Object.entries(f.notes)) stats.notes[k] = (stats.notes[k] || 0) + v
      for (const [k, v] of Object.entries(f.noteExamples)) if (!stats.noteExamples[k]) stats.noteExamples[k] = `trial ${i}: ${v}`
      if (f.violations.length) {
        stats.failed++
        const types = new Set()
        for (const v of f.violations) {
          stats.byType[v.type] = (stats.byType[v.type] || 0) + 1
          if (v.key) {
            const keys = (stats.byKey[v.type] = stats.byKey[v.type] || {})
            keys[v.key] = (keys[v.key] || 0) + 1
          }
          if (!types.has(v.type) && !stats.examples[v.type]) stats.examples[v.type] = `trial ${i} (${outcome.repro}): ${v.detail}`
          types.add(v.type)
        }
        if (opts.verbose) console.log(`  trial ${i} ${outcome.repro}: ${f.violations.map((v) => `${v.type} ${v.detail}`).join('; ')}`)
        if (opts.keepFailed) {
          console.log(`  kept ${outcome.roots.join(', ')}`)
          continue
        }
      } else stats.passed++
      for (const root of outcome.roots) fs.rmSync(root, { recursive: true, force: true })
    }
  }
  // Hooks take milliseconds: one trial at a time keeps the parent's timers on time.
  await Promise.all(Array.from({ length: jobs }, worker))
  console.log(`  trials ${stats.trials}, kills landed mid-operation ${stats.landed}, passed ${stats.passed}, failed ${stats.failed} (${((Date.now() - phaseStarted) / 1000).toFixed(0)} s)`)
  const types = Object.entries(stats.byType)
  if (types.length === 0) console.log('  violations: none')
  for (const [type, n] of types) {
    console.log(`  violation ${type}: ${n}`)
    if (stats.byKey[type]) console.log(`    by file: ${Object.entries(stats.byKey[type]).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ')}`)
    console.log(`    e.g. ${stats.examples[type]}`)
  }
  const notes = Object.entries(stats.notes)
  if (notes.length) console.log('  observed (not violations):')
  for (const [k, v] of notes) console.log(`    ${k}: ${v}${stats.noteExamples[k] ? ` (e.g. ${stats.noteExamples[k]})` : ''}`)
  return stats
}

async function main() {
  const opts = parseArgs(process.argv.slice(2))
  if (!fs.existsSync(path.join(REPO, 'index.js'))) throw new Error('build the addon first: npm run build')
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-crash-'))
  const rand = prng(opts.seed)
  console.log(`crash campaign: ${opts.trials} trials per phase, phases ${opts.only.join(',')}, seed ${opts.seed}, temp dir ${base}`)
  console.log('note: before each restart, leftover temp files (.*.mws-tmp.*, .*.tmp.*, .turn-settled.*) get their mtime set 2 h back')
  console.log('      (fs.utimesSync) to simulate dead writers of that age; the restart child runs with its clock 6 min ahead.')
  const started = Date.now()
  let passed = 0
  let failed = 0
  try {
    for (const name of opts.only) {
      const stats = await runPhase(name, opts, base, rand)
      passed += stats.passed
      failed += stats.failed
    }
  } finally {
    if (!opts.keepFailed || failed === 0) fs.rmSync(base, { recursive: true, force: true })
  }
  console.log(`\n${((Date.now() - started) / 1000).toFixed(0)} s`)
  console.log(`${passed} passed, ${failed} failed`)
  process.exitCode = failed ? 1 : 0
}

if (require.main !== module) {
  // Required for a repro script: the helpers only.
  module.exports = { exampleRoot, writeShadowHistory, runToEnd, TEAM, Findings, checkStoreFiles, checkSpool, checkNudges, SPOOL_REL, checkSqlite, sqlitePeer, sqliteSpec }
} else if (process.argv[2] === '--child') {
  runChild(JSON.parse(process.argv[3])).catch((e) => {
    console.error(e && e.stack ? e.stack : e)
    process.exit(2)
  })
} else {
  main().catch((e) => {
    console.error(e && e.stack ? e.stack : e)
    process.exit(2)
  })
}
