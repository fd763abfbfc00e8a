'use strict'
// Peak RSS of one nudge dispatch into a 31 MiB hostile inbox, over the
// baseline of the same process just before the call, and the inbox size
// after delivery. Two inboxes an agent can write: `[0,0,…]` and `[{},{},…]`
// (valid JSON under the 32 MiB read cap). Goals (issue 23): at most 64 MiB
// over the baseline; the inbox grows by at most one row.
//
// Each dispatch runs in a fresh child process. Peak RSS is the kernel's
// high-water mark (VmHWM, reset through /proc/self/clear_refs on Linux);
// elsewhere it is the lifetime maxRSS, so the figure is an upper bound.
//
// Run: npm run build && node scripts/bench/bench-hostile-inbox.js [package-dir]
// (package-dir: another build's package folder, to measure it on the same inputs).
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const NOW = Date.parse('2026-11-22T10:00:00.000Z')
const MiB = 1024 * 1024
const INBOX_BYTES = 31 * MiB
const GOAL_OVER_BASELINE = 64 * MiB

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

function writeJson(file, value) {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, JSON.stringify(value, null, 2))
}

/** Two hours of calm shadow history for five members: phase 2 is ready. */
function writeShadowHistory(root) {
  const members = {}
  for (let i = 0; i < 5; i++) {
    members[`m${i}`] = { memberName: `m${i}`, state: 'caught_up', agendaFingerprint: 'agenda:v1:x', actionableCount: 0, evaluatedAt: '2026-11-22T09:00:00.000Z' }
  }
  const recentEvents = Array.from({ length: 30 }, (_, i) => ({
    id: `h${i}`,
    teamName: 'forge',
    memberName: `m${i % 5}`,
    kind: 'status_evaluated',
    state: 'caught_up',
    agendaFingerprint: 'agenda:v1:x',
    recordedAt: new Date(NOW - 2 * 3_600_000 + i * 240_000).toISOString(),
    actionableCount: 0,
  }))
  writeJson(path.join(root, 'teams/forge/.member-work-sync/indexes/metrics.json'), { schemaVersion: 2, members, recentEvents })
}

/** A root of the example team with one nudge to jack planned and due. */
async function plannedRoot(pkg) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-hostile-inbox-'))
  fs.cpSync(path.join(__dirname, '..', '..', 'examples', 'claude-root'), root, { recursive: true })
  writeShadowHistory(root)
  const { MemberWorkSync } = require(pkg)
  // A requested reconcile plans the nudge and leaves it due. (A queued one
  // would dispatch it right away, as the app's does, before the inbox is
  // made hostile.)
  const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW }, autoStart: false })
  const outbox = path.join(root, 'teams/forge/members/jack/.member-work-sync/outbox.json')
  try {
    await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
    if (!fs.existsSync(outbox)) throw new Error('no nudge was planned')
  } finally {
    await sync.dispose()
  }
  return root
}

/** `[e,e,…]` of `INBOX_BYTES`, written in pieces. */
function writeHostileInbox(file, element) {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const perChunk = Math.floor(MiB / (element.length + 1))
  const chunk = Buffer.from(`,${element}`.repeat(perChunk))
  const fd = fs.openSync(file, 'w')
  try {
    fs.writeSync(fd, `[${element}`)
    let size = 1 + element.length
    while (size + chunk.length + 1 <= INBOX_BYTES) size += fs.writeSync(fd, chunk)
    const rest = Buffer.from(`,${element}`.repeat(Math.floor((INBOX_BYTES - size - 1) / (element.length + 1))))
    size += fs.writeSync(fd, rest)
    fs.writeSync(fd, ']')
  } finally {
    fs.closeSync(fd)
  }
  return fs.statSync(file).size
}

function currentRss() {
  if (global.gc) global.gc()
  return process.memoryUsage().rss
}

/** Resets the kernel's peak RSS to the current RSS; false where it cannot. */
function resetPeak() {
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5')
    return true
  } catch {
    return false
  }
}

function peakRss() {
  try {
    const hwm = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'))
    if (hwm) return Number(hwm[1]) * 1024
  } catch {}
  return process.resourceUsage().maxRSS * 1024
}

async function dispatchChild(pkg, root) {
  const { MemberWorkSync } = require(pkg)
  const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW + 30_000 }, autoStart: false })
  // Warm up the process (thread pool, stores) on another call first.
  await sync.getMetrics({ teamName: 'forge' })
  await sleep(100)
  const baseline = currentRss()
  const peakReset = resetPeak()
  const summary = await sync.dispatchDueNudges(['forge'])
  const peak = peakRss()
  const outbox = JSON.parse(fs.readFileSync(path.join(root, 'teams/forge/members/jack/.member-work-sync/outbox.json'), 'utf8'))
  const item = Object.values(outbox.items)[0]
  await sync.dispose()
  console.log(JSON.stringify({ baseline, peak, peakReset, summary, status: item.status, lastError: item.lastError ?? null }))
}

async function main() {
  const [mode, ...rest] = process.argv.slice(2)
  if (mode === '--dispatch') return dispatchChild(rest[0], rest[1])
  const pkg = path.resolve(mode ?? path.join(__dirname, '..', '..'))
  let failed = false
  for (const element of ['0', '{}']) {
    const root = await plannedRoot(pkg)
    try {
      const inbox = path.join(root, 'teams/forge/inboxes/jack.json')
      const before = writeHostileInbox(inbox, element)
      const child = spawnSync(process.execPath, ['--expose-gc', __filename, '--dispatch', pkg, root], { encoding: 'utf8', maxBuffer: 16 * MiB })
      if (child.status !== 0) throw new Error(`dispatch child failed: ${child.stderr}`)
      const result = JSON.parse(child.stdout.trim().split('\n').pop())
      const after = fs.statSync(inbox).size
      // One row as the app writes it in an array: `[\n  {…}\n]` less the brackets' 2 bytes.
      // (dispatchDueNudges also reconciles the other members, whose status is
      // missing, and delivers their nudges: jack's item is the one measured.)
      let oneRow = 0
      if (result.status === 'delivered') {
        const rows = JSON.parse(fs.readFileSync(inbox, 'utf8'))
        oneRow = Buffer.byteLength(JSON.stringify([rows[rows.length - 1]], null, 2)) - 2
      }
      const over = result.peak - result.baseline
      const mib = (n) => (n / MiB).toFixed(1)
      const growth = after - before
      console.log(`[${element},${element},…] inbox of ${mib(before)} MiB:`)
      console.log(`  peak RSS over baseline: ${mib(over)} MiB (baseline ${mib(result.baseline)} MiB, peak ${mib(result.peak)} MiB${result.peakReset ? '' : ', lifetime peak'}); goal <= ${mib(GOAL_OVER_BASELINE)} MiB`)
      console.log(`  inbox after delivery: ${after} bytes (${growth >= 0 ? '+' : ''}${growth} bytes; one row: ${oneRow} bytes)`)
      console.log(`  dispatch: ${JSON.stringify(result.summary)}; nudge ${result.status}${result.lastError ? `: ${result.lastError}` : ''}`)
      if (over > GOAL_OVER_BASELINE || result.status !== 'delivered' || growth > oneRow || growth <= 0) failed = true
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  }
  console.log(failed ? 'goal missed' : 'goal met')
  process.exitCode = failed ? 1 : 0
}

main().catch((error) => {
  console.error(error)
  process.exitCode = 2
})
