'use strict'
// `member-work-sync watch`: a live, read-only terminal view of every member's
// state, each team's phase-2 readiness, the app's reconcile queue, the
// turn-settled spool backlog and recent changes.
//
// A viewer must not change what it watches, so the addon runs with
// `autoStart: false` (no spool drain, no nudge dispatch, no queued
// reconciles) and the view is built only from `previewTeam` and
// `previewMetrics` (no store file, journal line, metric event or report
// token), from listing the spool's folders and from reading the
// `activity.json` a running addon publishes its queue to (the queue lives in
// the app's memory, in another process). It refreshes once a second and as
// soon as `fs.watch` reports a change in a watched team or task folder or in
// the addon's own folder.

const fs = require('node:fs')
const path = require('node:path')

/** How often the view re-reads the board without a change notification. */
const REFRESH_INTERVAL_MS = 1000
/** How long a burst of file notifications is gathered before one refresh. */
const CHANGE_DEBOUNCE_MS = 100
/** Recent events kept in memory (only the ones that fit are drawn). */
const MAX_EVENTS = 200
/** Spool entries counted per folder; more shows as "N+". */
const MAX_SPOOL_COUNT = 10000
/** Largest `activity.json` read (a queue of thousands of members fits). */
const MAX_ACTIVITY_BYTES = 4 * 1024 * 1024
/** Queued items listed under the queue line. */
const MAX_QUEUE_LINES = 8

const ESC = '\x1b['
const ENTER_SCREEN = `${ESC}?1049h${ESC}?25l${ESC}H${ESC}2J`
const LEAVE_SCREEN = `${ESC}?25h${ESC}?1049l`
const QUIT_KEYS = new Set(['q', 'Q', '\x03'])
const SPOOL_FOLDERS = ['incoming', 'processing']
/** Diagnostics that describe every preview and say nothing about the member. */
const ROUTINE_DIAGNOSTICS = new Set(['agenda_empty', 'status_snapshot_not_persisted'])

/**
 * Names in `dir` ending `.json`, counted without following a link anywhere
 * from `base` down to `dir`; undefined when the folder is absent.
 */
function countSpoolFolder(base, dir) {
  let current = base
  for (const part of path.relative(base, dir).split(path.sep)) {
    current = path.join(current, part)
    let stat
    try {
      stat = fs.lstatSync(current)
    } catch {
      return undefined
    }
    if (!stat.isDirectory()) return undefined
  }
  let count = 0
  let handle
  try {
    handle = fs.opendirSync(dir)
    for (let entry = handle.readSync(); entry && count < MAX_SPOOL_COUNT; entry = handle.readSync()) {
      if (entry.name.endsWith('.json') && !entry.name.startsWith('.')) count++
    }
  } catch {
    return undefined
  } finally {
    if (handle) handle.closeSync()
  }
  return count
}

/** `{ incoming, processing }` counts of the turn-settled spool (undefined = absent). */
function spoolBacklog(teamsDir) {
  const spool = path.join(teamsDir, '.member-work-sync', 'runtime-hooks')
  const counts = {}
  for (const folder of SPOOL_FOLDERS) counts[folder] = countSpoolFolder(teamsDir, path.join(spool, folder))
  return counts
}

/** Whether a process with this pid exists (EPERM: it exists, as another user). */
function processAlive(pid) {
  // 0 and negative pids name process groups: kill() would answer for them.
  if (pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return error.code === 'EPERM'
  }
}

/**
 * The queue a running addon published to `teams/.member-work-sync/activity.json`:
 * `{ pid, alive, updatedAt, queue }`, `{ problem }` when the file is there but
 * unusable, undefined when there is none. Links and non-files are not read
 * (agents write under the root too).
 */
function readActivity(teamsDir) {
  const file = path.join(teamsDir, '.member-work-sync', 'activity.json')
  let fd
  try {
    if (!fs.lstatSync(path.dirname(file)).isDirectory()) return undefined
    const stat = fs.lstatSync(file)
    if (!stat.isFile()) return { problem: 'activity.json is not a regular file' }
    if (stat.size > MAX_ACTIVITY_BYTES) return { problem: 'activity.json is too large' }
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK)
    // Checked again on the handle: the name may have been swapped since.
    const opened = fs.fstatSync(fd)
    if (!opened.isFile()) return { problem: 'activity.json is not a regular file' }
    if (opened.size > MAX_ACTIVITY_BYTES) return { problem: 'activity.json is too large' }
    const buffer = Buffer.alloc(MAX_ACTIVITY_BYTES + 1)
    let length = 0
    for (let n; length < buffer.length && (n = fs.readSync(fd, buffer, length, buffer.length - length, null)) > 0; ) length += n
    if (length > MAX_ACTIVITY_BYTES) return { problem: 'activity.json is too large' }
    const activity = JSON.parse(buffer.toString('utf8', 0, length))
    const queue = activity && activity.queue
    if (!Number.isSafeInteger(activity.pid) || !queue || !Array.isArray(queue.queuedItems)) {
      return { problem: 'activity.json has an unexpected shape' }
    }
    return { pid: activity.pid, alive: processAlive(activity.pid), updatedAt: String(activity.updatedAt), queue }
  } catch (error) {
    if (error.code === 'ENOENT') return undefined
    return { problem: `activity.json unreadable (${error.code || error.message})` }
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

/** The queue lines of the header. */
function queueLines(activity) {
  if (!activity) return ['app queue: no running addon has published one (autoStart instances write activity.json)']
  if (activity.problem) return [`app queue: ${activity.problem}`]
  const q = activity.queue
  if (!activity.alive) return [`app queue: last published by pid ${activity.pid} at ${activity.updatedAt}, which is no longer running`]
  const lines = [
    `app queue (pid ${activity.pid}, updated ${activity.updatedAt.slice(11, 19)}): ${q.queued} queued, ${q.running} running; ` +
      `since start ${q.enqueued} enqueued, ${q.coalesced} coalesced, ${q.reconciled} reconciled, ${q.failed} failed, ${q.dropped} dropped`,
  ]
  for (const item of q.queuedItems.slice(0, MAX_QUEUE_LINES)) {
    const reasons = Array.isArray(item.triggerReasons) ? item.triggerReasons.join(', ') : '?'
    lines.push(`  ${item.teamName}/${item.memberName} due ${String(item.runAt).slice(11, 19)} (${reasons})`)
  }
  if (q.queuedItems.length > MAX_QUEUE_LINES) lines.push(`  ... ${q.queuedItems.length - MAX_QUEUE_LINES} more`)
  return lines
}

/** A team's phase-2 readiness: the state and reasons, then the rates against their thresholds. */
function readinessLines(metrics) {
  if (!metrics) return ['  phase 2: -']
  const r = metrics.phase2Readiness
  const reasons = r.reasons.length > 0 ? ` (${r.reasons.join(', ')})` : ''
  return [
    `  phase 2: ${r.state}${reasons}`,
    `    observed ${r.rates.observationHours}/${r.thresholds.minObservationHours} h, ` +
      `${r.rates.statusEventCount}/${r.thresholds.minStatusEvents} events, ` +
      `would-nudges ${r.rates.wouldNudgesPerMemberHour}/${r.thresholds.maxWouldNudgesPerMemberHour} per member-hour, ` +
      `rejections ${r.rates.reportRejectionRate}/${r.thresholds.maxReportRejectionRate}`,
  ]
}

function clock(date = new Date()) {
  return date.toISOString().slice(11, 19)
}

/** The hex after `agenda:v1:`, first 12 characters. */
function fingerprintPrefix(fingerprint) {
  return String(fingerprint).replace(/^agenda:v\d+:/, '').slice(0, 12)
}

function memberDiagnostics(status) {
  return status.diagnostics.filter((d) => !ROUTINE_DIAGNOSTICS.has(d))
}

/** What the events compare between refreshes for one member. */
function memberSummary(status) {
  return {
    state: status.state,
    items: status.agenda.items.length,
    fingerprint: fingerprintPrefix(status.agenda.fingerprint),
  }
}

/** Event lines for what changed between two `{ "team/member": summary }` maps. */
function diffMembers(before, after, at) {
  const events = []
  for (const [key, now] of Object.entries(after)) {
    const was = before[key]
    if (!was) {
      events.push(`${at} ${key} appeared: ${now.state}, ${now.items} item(s)`)
      continue
    }
    const changes = []
    if (was.state !== now.state) changes.push(`${was.state} -> ${now.state}`)
    if (was.items !== now.items) changes.push(`items ${was.items} -> ${now.items}`)
    if (was.fingerprint !== now.fingerprint) changes.push(`fingerprint ${was.fingerprint} -> ${now.fingerprint}`)
    if (changes.length > 0) events.push(`${at} ${key}: ${changes.join(', ')}`)
  }
  for (const key of Object.keys(before)) {
    if (!(key in after)) events.push(`${at} ${key} left the roster`)
  }
  return events
}

/**
 * One screen line: control characters (names and messages come from files
 * agents write, and an escape sequence there would drive the terminal) shown
 * as `?`, cut to `width` with a `~`.
 */
function fit(text, width) {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?')
  return clean.length > width ? clean.slice(0, Math.max(0, width - 1)) + '~' : clean
}

/** The frame's lines (not yet cut to the terminal's size). */
function renderLines(view, columns) {
  const lines = []
  const spool = SPOOL_FOLDERS.map((f) => {
    const n = view.spool[f]
    return `${f} ${n === undefined ? '-' : n >= MAX_SPOOL_COUNT ? `${n}+` : n}`
  }).join(', ')
  lines.push(`member-work-sync watch  ${view.root}  updated ${view.updatedAt || '-'}  (q quits)`)
  lines.push(`turn-settled spool: ${spool}   read-only view: nothing is drained, nudged or written`)
  for (const line of queueLines(view.activity)) lines.push(line)
  if (view.error) lines.push(`error: ${view.error}`)
  for (const problem of view.problems) lines.push(`problem: ${problem}`)
  if (view.teams.length === 0 && view.problems.length === 0) lines.push(`No teams found in ${view.teamsDir}.`)
  for (const team of view.teams) {
    const counts = {}
    for (const s of team.statuses) counts[s.state] = (counts[s.state] || 0) + 1
    const stateText = Object.entries(counts)
      .map(([state, n]) => `${n} ${state}`)
      .join(', ')
    const ready = team.diagnostics.length > 0 ? `config read with ${team.diagnostics.join(', ')}` : 'config ok'
    lines.push('')
    lines.push(`Team ${team.teamName}: ${team.statuses.length} member(s)${stateText ? ` (${stateText})` : ''}; ${ready}`)
    for (const line of readinessLines(view.metrics[team.teamName])) lines.push(line)
    lines.push(`  ${'MEMBER'.padEnd(16)} ${'PROVIDER'.padEnd(9)} ${'STATE'.padEnd(14)} ${'ITEMS'.padStart(5)}  ${'FINGERPRINT'.padEnd(12)}  DIAGNOSTICS`)
    for (const s of team.statuses) {
      const summary = memberSummary(s)
      lines.push(
        `  ${fit(s.memberName, 16).padEnd(16)} ${(s.providerId || '-').padEnd(9)} ${summary.state.padEnd(14)} ` +
          `${String(summary.items).padStart(5)}  ${summary.fingerprint.padEnd(12)}  ${memberDiagnostics(s).join(', ') || '-'}`,
      )
    }
  }
  lines.push('')
  lines.push('Recent events')
  return lines.map((line) => fit(line, columns))
}

/** The whole screen: header and tables, then as many recent events as fit. */
function renderFrame(view, columns, rows) {
  const lines = renderLines(view, columns)
  const room = Math.max(0, rows - lines.length)
  const events = view.events.slice(-room)
  if (events.length === 0 && room > 0) lines.push('  (none yet)')
  for (const event of events) lines.push(fit(`  ${event}`, columns))
  // Home, each line cleared to its end, the rest of the screen cleared.
  return `${ESC}H${lines.slice(0, rows).join(`${ESC}K\r\n`)}${ESC}K${ESC}J`
}

/**
 * Runs the live view until `q`, Ctrl-C, SIGINT or SIGTERM; resolves the exit
 * status. `target` is `{ root, teamsDir, tasksDir, teamNames() }` and
 * `inspect(sync, teamName)` resolves `{ preview, problem }`.
 */
async function runWatch(target, inspect, io = { stdin: process.stdin, stdout: process.stdout }) {
  const { stdin, stdout } = io
  const { MemberWorkSync } = require('..')
  const view = {
    root: target.root,
    teamsDir: target.teamsDir,
    teams: [],
    problems: [],
    metrics: {},
    spool: {},
    activity: undefined,
    events: [],
  }
  const pushEvent = (line) => {
    view.events.push(line)
    if (view.events.length > MAX_EVENTS) view.events.splice(0, view.events.length - MAX_EVENTS)
  }
  const sync = new MemberWorkSync({
    ...(target.instanceOptions ?? { claudeRoot: target.root, autoStart: false }),
    // With autoStart false the addon starts no watcher of its own; these only
    // show what a call of ours might report.
    onTeamChange: (event) => pushEvent(`${clock()} ${event.teamName}: ${event.type} change`),
    onLog: (entry) => pushEvent(`${clock()} ${entry.level} ${entry.code}: ${entry.message}`),
  })

  let members = {}
  let first = true
  let refreshing = false
  let refreshAgain = false
  let lastFrame = ''
  let closed = false
  const watchers = new Map()

  const draw = () => {
    if (closed) return
    const frame = renderFrame(view, stdout.columns || 80, stdout.rows || 24)
    if (frame === lastFrame) return
    lastFrame = frame
    stdout.write(frame)
  }

  // fs.watch is only a hint to refresh sooner; the interval covers the rest.
  const watchFolder = (dir) => {
    if (watchers.has(dir)) return
    try {
      if (!fs.lstatSync(dir).isDirectory()) return
      const watcher = fs.watch(dir, { persistent: false }, () => scheduleRefresh())
      watcher.on('error', () => {
        watcher.close()
        watchers.delete(dir)
      })
      watchers.set(dir, watcher)
    } catch {
      // Absent or unwatchable: polling still sees it.
    }
  }

  const refresh = async () => {
    if (refreshing) {
      refreshAgain = true
      return
    }
    refreshing = true
    try {
      do {
        refreshAgain = false
        const teams = []
        const problems = []
        const metrics = {}
        for (const teamName of target.teamNames()) {
          const { preview, problem } = await inspect(sync, teamName)
          if (problem) problems.push(problem)
          else {
            teams.push(preview)
            metrics[teamName] = await sync.previewMetrics({ teamName })
          }
          watchFolder(path.join(target.teamsDir, teamName))
          watchFolder(path.join(target.tasksDir, teamName))
        }
        const now = {}
        for (const team of teams) {
          for (const s of team.statuses) now[`${team.teamName}/${s.memberName}`] = memberSummary(s)
        }
        if (!first) for (const line of diffMembers(members, now, clock())) pushEvent(line)
        first = false
        members = now
        view.teams = teams
        view.problems = problems
        view.metrics = metrics
        view.spool = spoolBacklog(target.teamsDir)
        const activity = readActivity(target.teamsDir)
        if (activity && !activity.problem && activity.alive && view.activity && view.activity.queue) {
          const was = view.activity.queue
          if (activity.queue.running !== was.running || activity.queue.queued !== was.queued) {
            pushEvent(`${clock()} app queue: ${activity.queue.queued} queued, ${activity.queue.running} running`)
          }
        }
        view.activity = activity
        watchFolder(path.join(target.teamsDir, '.member-work-sync'))
        view.error = undefined
        view.updatedAt = clock()
      } while (refreshAgain && !closed)
    } catch (error) {
      view.error = `${error.code ? `${error.code}: ` : ''}${error.message}`
    } finally {
      refreshing = false
    }
    draw()
  }

  let debounce
  const scheduleRefresh = () => {
    if (closed || debounce) return
    debounce = setTimeout(() => {
      debounce = undefined
      void refresh()
    }, CHANGE_DEBOUNCE_MS)
  }

  // Restores the terminal even if the process dies from an exception.
  const restoreTerminal = () => {
    if (stdin.isTTY && stdin.isRaw) stdin.setRawMode(false)
    stdout.write(LEAVE_SCREEN)
  }
  process.on('exit', restoreTerminal)

  return new Promise((resolve) => {
    let timer
    const quit = async () => {
      if (closed) return
      closed = true
      clearInterval(timer)
      clearTimeout(debounce)
      for (const watcher of watchers.values()) watcher.close()
      stdin.off('data', onKey)
      stdout.off('resize', onResize)
      process.off('SIGINT', quit)
      process.off('SIGTERM', quit)
      restoreTerminal()
      process.off('exit', restoreTerminal)
      stdin.pause()
      await sync.dispose()
      resolve(0)
    }
    const onKey = (chunk) => {
      for (const ch of chunk.toString('utf8')) if (QUIT_KEYS.has(ch)) return void quit()
    }
    const onResize = () => {
      lastFrame = ''
      draw()
    }
    stdout.write(ENTER_SCREEN)
    stdin.setRawMode(true)
    stdin.on('data', onKey)
    stdin.resume()
    stdout.on('resize', onResize)
    process.on('SIGINT', quit)
    process.on('SIGTERM', quit)
    watchFolder(target.teamsDir)
    timer = setInterval(() => void refresh(), REFRESH_INTERVAL_MS)
    void refresh()
  })
}

module.exports = { runWatch, renderFrame, diffMembers, spoolBacklog, readActivity, queueLines }
