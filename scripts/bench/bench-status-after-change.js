'use strict'
// One member's status after a one-task change on a 50 x 10,000 team, through
// the JS API on a warm instance (`noteTeamChange` for the task, then
// `refreshStatus` of its owner), against the floor in the same process: a
// read + JSON.parse of the 10,000 task files. Rounds alternate the two; each
// round prints both medians, their ratio and the load average.
//
// Run: npm run build && node scripts/bench/bench-status-after-change.js [rounds] [changes-per-round] [package-dir]
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { MemberWorkSync } = require(path.resolve(process.argv[4] || path.join(__dirname, '..', '..')))

const { MEMBERS, TASKS, memberName, writeFixture, taskChanger } = require('./bench-board-memory.js')
const ROUNDS = Number(process.argv[2]) || 5
const CHANGES = Number(process.argv[3]) || 40
const FLOOR_PASSES = 3

const ms = (started) => Number(process.hrtime.bigint() - started) / 1e6
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]

/** The floor: every task file read and parsed, in name order. */
function readAndParse(taskDir) {
  let parsed = 0
  for (const name of fs.readdirSync(taskDir).sort()) {
    if (JSON.parse(fs.readFileSync(path.join(taskDir, name), 'utf8')).id !== undefined) parsed++
  }
  return parsed
}

async function main() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-status-after-change-'))
  const sync = new MemberWorkSync({ claudeRoot: root, autoStart: false })
  try {
    writeFixture(root)
    const taskDir = path.join(root, 'tasks', 'bench')
    // Task i (i < 49) is owned by member-(i+1): each change moves one member's agenda.
    const changeTask = taskChanger(root)
    // Warm: the task cache and kept index are built, every owner has a stored status.
    await sync.refreshTeam({ teamName: 'bench' })
    let change = 0
    console.log(`fixture: ${MEMBERS} members x ${TASKS} tasks; ${ROUNDS} rounds of ${CHANGES} changes and ${FLOOR_PASSES} floor passes`)
    const ratios = []
    for (let round = 0; round < ROUNDS; round++) {
      const floor = []
      for (let pass = 0; pass < FLOOR_PASSES; pass++) {
        const started = process.hrtime.bigint()
        if (readAndParse(taskDir) !== TASKS) throw new Error('floor read a wrong number of tasks')
        floor.push(ms(started))
      }
      const status = []
      for (let i = 0; i < CHANGES; i++, change++) {
        const task = changeTask(change)
        const started = process.hrtime.bigint()
        sync.noteTeamChange({ type: 'task', teamName: 'bench', taskId: String(task) })
        const result = await sync.refreshStatus({ teamName: 'bench', memberName: memberName(task + 1) })
        status.push(ms(started))
        if (result.memberName !== memberName(task + 1)) throw new Error('refreshStatus answered for another member')
      }
      const ratio = median(status) / median(floor)
      ratios.push(ratio)
      console.log(
        `round ${round + 1}: status after change median ${median(status).toFixed(2)} ms ` +
          `(min ${Math.min(...status).toFixed(2)}), floor read+parse median ${median(floor).toFixed(1)} ms, ` +
          `ratio ${ratio.toFixed(4)}; load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`,
      )
    }
    console.log(`ratio over rounds: min ${Math.min(...ratios).toFixed(4)}, median ${median(ratios).toFixed(4)}, max ${Math.max(...ratios).toFixed(4)}`)
  } finally {
    await sync.dispose()
    fs.rmSync(root, { recursive: true, force: true })
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
