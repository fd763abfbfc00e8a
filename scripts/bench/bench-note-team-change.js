'use strict'
// Measures what noteTeamChange costs: the call itself on the JS thread (it
// must return at once: routing and reconciles run on the addon's own
// threads), and the whole process's CPU per event (process.cpuUsage, all
// threads) until the addon has dealt with every event, for duplicate events
// of already-queued members, with autoStart false and true.
// The call is reported as the mean, and the least and the median of blocks
// of 1,000 calls (the least is what the call costs when nothing preempts it).
// Run: node scripts/bench/bench-note-team-change.js [events] [package-dir]
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { MemberWorkSync } = require(path.resolve(process.argv[3] || path.join(__dirname, '..', '..')))

const N = Math.ceil((Number(process.argv[2]) || 200_000) / 1_000) * 1_000
const WARM_UP = 20_000
const BLOCK = 1_000

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const cpuMs = () => {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

/** Waits until the process has been idle (under 2 ms of CPU in 100 ms) for 300 ms. */
async function settle() {
  let quiet = 0
  let last = cpuMs()
  const started = Date.now()
  while (quiet < 3 && Date.now() - started < 120_000) {
    await sleep(100)
    const now = cpuMs()
    quiet = now - last < 2 ? quiet + 1 : 0
    last = now
  }
}

async function run(autoStart) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-bench-'))
  fs.cpSync(path.join(__dirname, '..', '..', 'examples', 'claude-root'), root, { recursive: true })
  // Long drain and dispatch intervals: only the events' own work is measured.
  const sync = new MemberWorkSync({
    claudeRoot: root,
    autoStart,
    tuning: { drainIntervalMs: 3_600_000, dispatchIntervalMs: 3_600_000 },
  })
  const events = [
    { type: 'task', teamName: 'forge', taskId: '1' },
    { type: 'inbox', teamName: 'forge', detail: `${root}/teams/forge/inboxes/jack.json` },
    { type: 'tool-activity', teamName: 'forge', detail: '{"memberName":"jack","action":"finish","toolUseId":"t"}' },
  ]
  // Every member these events touch is queued (and stays queued: the
  // shortest delay is 5 s) before the measured events arrive.
  for (let i = 0; i < WARM_UP; i++) sync.noteTeamChange(events[i % events.length])
  await settle()
  const cpuBefore = cpuMs()
  // Timed in blocks of BLOCK calls: the least block is the call's cost with
  // the fewest interruptions by other processes (a loaded machine preempts
  // the JS thread mid-block), the median what a typical block saw.
  const blocks = []
  for (let done = 0; done < N; done += BLOCK) {
    const started = process.hrtime.bigint()
    for (let i = done; i < done + BLOCK; i++) sync.noteTeamChange(events[i % events.length])
    blocks.push(Number(process.hrtime.bigint() - started) / BLOCK)
  }
  const callNs = blocks.reduce((a, b) => a + b, 0) / blocks.length
  blocks.sort((a, b) => a - b)
  await settle()
  // settle() ends with 300 ms of idle: take its share of CPU away too.
  const idleStart = cpuMs()
  await sleep(300)
  const idle = cpuMs() - idleStart
  const cpu = cpuMs() - cpuBefore - 2 * idle
  const d = sync.getQueueDiagnostics()
  console.log(
    `autoStart ${String(autoStart).padEnd(5)}: call ${(callNs / 1000).toFixed(3)} µs ` +
      `(blocks of ${BLOCK}: min ${(blocks[0] / 1000).toFixed(3)}, median ${(blocks[blocks.length >> 1] / 1000).toFixed(3)}), ` +
      `process CPU ${((cpu * 1000) / N).toFixed(3)} µs per event over ${N} duplicate events ` +
      `(queued ${d.queued}, enqueued ${d.enqueued}, coalesced ${d.coalesced}, ` +
      `mergedEvents ${d.mergedEvents ?? '-'}, droppedEvents ${d.droppedEvents ?? '-'})`,
  )
  await sync.dispose()
  fs.rmSync(root, { recursive: true, force: true })
}

;(async () => {
  await run(false)
  await run(true)
})()
