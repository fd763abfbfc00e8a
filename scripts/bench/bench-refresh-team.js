'use strict'
// refreshTeam of a 20-member x 1,000-task team from disk (every status
// persisted), timed through the addon. Pass another build's package folder
// to compare two builds on the same machine state, e.g. alternately:
//
//   npm run build && node scripts/bench/bench-refresh-team.js [package-dir] [rounds]
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const MEMBERS = 20
const TASKS = 1_000

function memberName(i) {
  return i === 0 ? 'team-lead' : `member-${i}`
}

function writeFixture(root) {
  const team = path.join(root, 'teams', 'bench')
  const tasks = path.join(root, 'tasks', 'bench')
  fs.mkdirSync(team, { recursive: true })
  fs.mkdirSync(tasks, { recursive: true })
  const members = Array.from({ length: MEMBERS }, (_, i) => ({
    name: memberName(i),
    agentType: i === 0 ? 'team-lead' : 'general-purpose',
  }))
  fs.writeFileSync(path.join(team, 'config.json'), JSON.stringify({ name: 'bench', members }))
  for (let i = 0; i < TASKS; i++) {
    const owner = memberName(1 + (i % (MEMBERS - 1)))
    const status = ['pending', 'in_progress', 'completed', 'completed', 'completed'][i % 5]
    const task = { id: String(i), subject: `Task number ${i}`, status, owner, blockedBy: i % 7 === 3 ? [String(i - 1)] : [] }
    fs.writeFileSync(path.join(tasks, `${i}.json`), JSON.stringify(task))
  }
}

async function main() {
  const packageDir = path.resolve(process.argv[2] ?? path.join(__dirname, '..', '..'))
  const rounds = Number(process.argv[3] ?? 20)
  const { MemberWorkSync } = require(packageDir)
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-refresh-team-'))
  try {
    writeFixture(root)
    const sync = new MemberWorkSync({ claudeRoot: root, autoStart: false })
    await sync.refreshTeam({ teamName: 'bench' }) // creates the member stores
    const times = []
    for (let round = 0; round < rounds; round++) {
      const started = process.hrtime.bigint()
      const statuses = await sync.refreshTeam({ teamName: 'bench' })
      times.push(Number(process.hrtime.bigint() - started) / 1e6)
      if (statuses.length !== MEMBERS) throw new Error(`${statuses.length} statuses`)
    }
    await sync.dispose()
    times.sort((a, b) => a - b)
    const median = times[Math.floor(times.length / 2)]
    console.log(`refreshTeam ${MEMBERS}x${TASKS} (${packageDir}): median ${median.toFixed(1)} ms, min ${times[0].toFixed(1)} ms over ${rounds}`)
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
