'use strict'
// Measures the JS-side cost of noteTeamChange (it must return at once: routing
// and reconciles run on the addon's own threads). Run: node scripts/bench-note-team-change.js
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { MemberWorkSync } = require('..')

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-bench-'))
fs.cpSync(path.join(__dirname, '..', 'examples', 'claude-root'), root, { recursive: true })
// autoStart false: measure the call itself, not reconciles competing for the CPU.
const sync = new MemberWorkSync({ claudeRoot: root, autoStart: false })
const events = [
  { type: 'task', teamName: 'forge', taskId: '1' },
  { type: 'inbox', teamName: 'forge', detail: `${root}/teams/forge/inboxes/jack.json` },
  { type: 'tool-activity', teamName: 'forge', detail: '{"memberName":"jack","action":"finish","toolUseId":"t"}' },
]
const N = 200_000
for (let i = 0; i < 20_000; i++) sync.noteTeamChange(events[i % events.length]) // warm-up
const started = process.hrtime.bigint()
for (let i = 0; i < N; i++) sync.noteTeamChange(events[i % events.length])
const elapsed = Number(process.hrtime.bigint() - started)
console.log(`noteTeamChange: ${(elapsed / N / 1000).toFixed(3)} µs per call over ${N} calls`)
sync.dispose().then(() => fs.rmSync(root, { recursive: true, force: true }))
