'use strict'
// Steady RSS of a Node process that keeps refreshing members of one large
// team from disk (50 members x 10,000 tasks, about 8 MB of task JSON), warm
// task cache included, against a bare Node process; each measured in its own
// process. Also prints the mean refreshStatus latency seen from JS.
//
// Run: npm run build && node scripts/bench/bench-board-memory.js [rounds]
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const MEMBERS = 50
const TASKS = 10_000
const MiB = 1024 * 1024

function memberName(i) {
  return i === 0 ? 'team-lead' : `member-${i}`
}

/** Writes the team under `root`; returns the bytes of task JSON written. */
function writeFixture(root) {
  const team = path.join(root, 'teams', 'bench')
  const tasks = path.join(root, 'tasks', 'bench')
  fs.mkdirSync(team, { recursive: true })
  fs.mkdirSync(tasks, { recursive: true })
  const members = Array.from({ length: MEMBERS }, (_, i) => ({
    name: memberName(i),
    agentType: i === 0 ? 'team-lead' : 'general-purpose',
    model: 'claude-sonnet-4-5',
  }))
  fs.writeFileSync(path.join(team, 'config.json'), JSON.stringify({ name: 'bench', members }))
  let bytes = 0
  for (let i = 0; i < TASKS; i++) {
    const owner = memberName(1 + (i % (MEMBERS - 1)))
    const reviewer = memberName(1 + ((i + 1) % (MEMBERS - 1)))
    const status = ['pending', 'in_progress', 'completed', 'completed', 'completed'][i % 5]
    const task = {
      id: String(i),
      displayId: `#${i}`,
      subject: `Task number ${i}`,
      description: `Do the work of task ${i}. `.repeat(17),
      status,
      owner,
      blockedBy: i % 7 === 3 ? [String(i - 1)] : [],
      blocks: [],
      reviewState: i % 5 === 3 ? 'needsFix' : 'none',
      historyEvents: [
        { id: `c${i}`, type: 'created', timestamp: '2026-11-20T08:00:00Z', actor: owner },
        ...(i % 5 === 2
          ? [{ id: `r${i}`, type: 'review_requested', timestamp: '2026-11-20T09:00:00Z', from: 'none', to: 'review', reviewer, actor: owner }]
          : []),
      ],
    }
    const text = JSON.stringify(task, null, 2)
    bytes += text.length
    fs.writeFileSync(path.join(tasks, `${i}.json`), text)
  }
  return bytes
}

function rssAfterSettling() {
  if (global.gc) global.gc()
  return process.memoryUsage().rss
}

async function worker(root, rounds) {
  const { MemberWorkSync } = require('../..')
  const sync = new MemberWorkSync({ claudeRoot: root, autoStart: false })
  const taskFile = path.join(root, 'tasks', 'bench', '0.json')
  const original = fs.readFileSync(taskFile, 'utf8')
  const samples = []
  let elapsed = 0n
  for (let round = 0; round < rounds; round++) {
    // One task changes (same size), then one member is refreshed.
    fs.writeFileSync(taskFile, original.replace('Task number 0', `Task number ${round % 10}`))
    const started = process.hrtime.bigint()
    await sync.refreshStatus({ teamName: 'bench', memberName: memberName(1 + (round % (MEMBERS - 1))) })
    if (round > 0) elapsed += process.hrtime.bigint() - started
    if (round % 10 === 9) samples.push(rssAfterSettling())
  }
  const steady = samples.slice(Math.floor(samples.length / 2))
  await sync.dispose()
  await new Promise((resolve) => setTimeout(resolve, 200))
  console.log(
    JSON.stringify({
      steadyRss: Math.max(...steady),
      peakRss: Math.max(...samples),
      afterDisposeRss: rssAfterSettling(),
      meanRefreshMs: Number(elapsed / BigInt(rounds - 1)) / 1e6,
    }),
  )
}

function run(args) {
  const child = spawnSync(process.execPath, ['--expose-gc', __filename, ...args], { encoding: 'utf8' })
  if (child.status !== 0) throw new Error(`${args[0]} failed: ${child.stderr}`)
  return JSON.parse(child.stdout.trim().split('\n').pop())
}

async function main() {
  const [mode, root, rounds] = process.argv.slice(2)
  if (mode === '--bare') {
    await new Promise((resolve) => setTimeout(resolve, 200))
    console.log(JSON.stringify({ rss: rssAfterSettling() }))
    return
  }
  if (mode === '--worker') {
    await worker(root, Number(rounds))
    return
  }
  const count = Number(mode ?? 200)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-board-memory-'))
  try {
    const bytes = writeFixture(dir)
    const bare = run(['--bare']).rss
    const result = run(['--worker', dir, String(count)])
    const mib = (n) => (n / MiB).toFixed(1)
    console.log(`fixture: ${MEMBERS} members x ${TASKS} tasks, ${mib(bytes)} MiB of task JSON; ${count} refreshes`)
    console.log(`bare node RSS:              ${mib(bare)} MiB`)
    console.log(`steady RSS while refreshing: ${mib(result.steadyRss)} MiB (+${mib(result.steadyRss - bare)} MiB over bare; target <= +64)`)
    console.log(`peak RSS:                    ${mib(result.peakRss)} MiB (+${mib(result.peakRss - bare)} MiB)`)
    console.log(`RSS after dispose():         ${mib(result.afterDisposeRss)} MiB (+${mib(result.afterDisposeRss - bare)} MiB)`)
    console.log(`refreshStatus after a one-task change: ${result.meanRefreshMs.toFixed(2)} ms mean (JS-visible)`)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Edits the board written by `writeFixture` under `root` one task at a time:
 * the returned function rewrites task `change % 49` (owned by
 * member-(task+1)) with a subject naming the change, and returns the task.
 */
function taskChanger(root) {
  const taskDir = path.join(root, 'tasks', 'bench')
  const originals = Array.from({ length: MEMBERS - 1 }, (_, i) =>
    fs.readFileSync(path.join(taskDir, `${i}.json`), 'utf8'),
  )
  return (change) => {
    const task = change % (MEMBERS - 1)
    const text = originals[task].replace(`"Task number ${task}"`, `"Task number ${task} (${change % 10})"`)
    fs.writeFileSync(path.join(taskDir, `${task}.json`), text)
    return task
  }
}

// The board is shared with scripts/bench/bench-status-after-change.js and
// scripts/bench/bench-route-task-change.js.
module.exports = { MEMBERS, TASKS, memberName, writeFixture, taskChanger }

if (require.main === module) {
  main().catch((error) => {
    console.error(error)
    process.exit(1)
  })
}
