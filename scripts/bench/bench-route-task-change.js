'use strict'
// The CPU of routing a one-task change on a 50 x 10,000 team: the task file
// is rewritten and `noteTeamChange` names it (autoStart false: no reconcile
// runs, so what the event costs is routing it: finding the members the task
// touches), against the floor in the same process: the same loop without
// the event (the write and the timer). Changes are 4 ms apart, so the intake
// routes each on its own. Rounds alternate the two; each prints both as
// whole-process CPU per change (process.cpuUsage, all threads) and their
// difference, which is the routing. CPU time, not wall time: a loaded
// machine stretches wall time more than the work done.
//
// Run: npm run build && node scripts/bench/bench-route-task-change.js [rounds] [changes] [package-dir]
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { MemberWorkSync } = require(path.resolve(process.argv[4] || path.join(__dirname, '..', '..')))

const { MEMBERS, TASKS, writeFixture, taskChanger } = require('./bench-board-memory.js')
const ROUNDS = Number(process.argv[2]) || 3
const CHANGES = Number(process.argv[3]) || 200
const GAP_MS = 4

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]

async function main() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-route-task-change-'))
  const sync = new MemberWorkSync({ claudeRoot: root, autoStart: false })
  try {
    writeFixture(root)
    const changeTask = taskChanger(root)
    // Warm: the task cache is built.
    await sync.refreshTeam({ teamName: 'bench' })
    let change = 0
    /** CPU ms per change of one loop, routed or not. */
    const loop = async (routed) => {
      await sleep(300)
      const before = process.cpuUsage()
      for (let i = 0; i < CHANGES; i++, change++) {
        const task = changeTask(change)
        if (routed) sync.noteTeamChange({ type: 'task', teamName: 'bench', taskId: String(task) })
        await sleep(GAP_MS)
      }
      // The last events are routed before the count ends.
      await sleep(300)
      const { user, system } = process.cpuUsage(before)
      return (user + system) / 1000 / CHANGES
    }
    await loop(true)
    console.log(`fixture: ${MEMBERS} members x ${TASKS} tasks; ${ROUNDS} rounds of ${CHANGES} changes, routed and not`)
    const routing = []
    for (let round = 0; round < ROUNDS; round++) {
      const floor = await loop(false)
      const routed = await loop(true)
      routing.push(routed - floor)
      console.log(
        `round ${round + 1}: CPU per change routed ${routed.toFixed(3)} ms, floor ${floor.toFixed(3)} ms, ` +
          `routing ${(routed - floor).toFixed(3)} ms; load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`,
      )
    }
    console.log(`routing CPU per change over rounds: min ${Math.min(...routing).toFixed(3)} ms, median ${median(routing).toFixed(3)} ms`)
  } finally {
    await sync.dispose()
    fs.rmSync(root, { recursive: true, force: true })
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
