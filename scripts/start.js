'use strict'
// `npm start`: the main job on the bundled example team. Copies
// examples/claude-root into a temp dir (the example stays pristine) and prints
// every member's status and agenda (the read-only `member-work-sync status`).

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { runStatus } = require('../bin/member-work-sync.js')

async function main() {
  const claudeRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'member-work-sync-example-'))
  fs.cpSync(path.join(__dirname, '..', 'examples', 'claude-root'), claudeRoot, { recursive: true })
  console.log(`Example Claude root copied to ${claudeRoot}\n`)
  const { stdout, stderr, exitCode } = await runStatus({ claudeRoot, json: false })
  console.log(stdout)
  if (stderr) console.error(stderr)
  process.exitCode = exitCode
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
