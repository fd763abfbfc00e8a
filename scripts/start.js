'use strict'
// `npm start`: the main job on the bundled example team. Copies
// examples/claude-root into a temp dir (the example stays pristine), reconciles
// every member and prints the per-member table.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { runStatus } = require('../bin/member-work-sync.js')

async function main() {
  const claudeRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'member-work-sync-example-'))
  fs.cpSync(path.join(__dirname, '..', 'examples', 'claude-root'), claudeRoot, { recursive: true })
  console.log(`Example Claude root copied to ${claudeRoot}\n`)
  console.log(await runStatus({ claudeRoot, json: false }))
  console.log(`\nStore files written under ${path.join(claudeRoot, 'teams')}`)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
