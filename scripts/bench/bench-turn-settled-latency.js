'use strict'
// Latency from a Stop payload landing in incoming/ (written by the real hook
// through `sh -c`) to the member's persisted turn_settled reconcile, with the
// spool watcher (spool installed before start), and with the spool installed
// after start (the watcher attaches within the 1 s retry; before that retry
// existed, this case waited for the 15 s drain interval: ~14.8 s measured).
// The queue's own turn_settled delay (5 s) is reported separately.
// Run: node scripts/bench/bench-turn-settled-latency.js
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { MemberWorkSync } = require('../..')

const TRIGGER_DELAY_MS = 5000
const PROJECT = '/home/u/proj'

function exampleRoot() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-latency-'))
  fs.cpSync(path.join(__dirname, '..', '..', 'examples', 'claude-root'), root, { recursive: true })
  const configFile = path.join(root, 'teams/forge/config.json')
  const config = JSON.parse(fs.readFileSync(configFile, 'utf8'))
  fs.writeFileSync(configFile, JSON.stringify({ ...config, projectPath: PROJECT }))
  const projectDir = path.join(root, 'projects/-home-u-proj')
  fs.mkdirSync(projectDir, { recursive: true })
  const line = { type: 'user', sessionId: 'B1', teamName: 'forge', agentName: 'bob', cwd: PROJECT }
  fs.writeFileSync(path.join(projectDir, 'B1.jsonl'), JSON.stringify(line) + '\n')
  return root
}

async function waitFor(probe, timeoutMs) {
  const started = Date.now()
  while (Date.now() - started < timeoutMs) {
    if (probe()) return true
    await new Promise((r) => setTimeout(r, 5))
  }
  return false
}

async function once(installFirst) {
  const root = exampleRoot()
  let command
  if (installFirst) {
    const installer = new MemberWorkSync({ claudeRoot: root, autoStart: false })
    command = (await installer.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })).hooks.Stop[0].hooks[0].command
    await installer.dispose()
  }
  const sync = new MemberWorkSync({ claudeRoot: root })
  if (!installFirst) {
    await new Promise((r) => setTimeout(r, 300)) // the first drain ran without a spool: no watcher
    command = (await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })).hooks.Stop[0].hooks[0].command
  }
  const statusFile = path.join(root, 'teams/forge/members/bob/.member-work-sync/status.json')
  const payload = JSON.stringify({ hook_event_name: 'Stop', session_id: 'B1', cwd: PROJECT })
  const started = Date.now()
  spawnSync('sh', ['-c', command], { input: payload })
  const ok = await waitFor(() => {
    try {
      const s = JSON.parse(fs.readFileSync(statusFile, 'utf8')).status
      return s.shadow.reconciledBy === 'queue' && (s.shadow.triggerReasons || []).includes('turn_settled')
    } catch {
      return false
    }
  }, 30_000)
  const elapsed = Date.now() - started
  await sync.dispose()
  fs.rmSync(root, { recursive: true, force: true })
  return ok ? elapsed : NaN
}

async function main() {
  const watcher = []
  for (let i = 0; i < 5; i++) watcher.push(await once(true))
  const interval = []
  for (let i = 0; i < 2; i++) interval.push(await once(false))
  const fmt = (xs) => xs.map((x) => `${x} ms`).join(', ')
  const over = (xs) => xs.map((x) => `${x - TRIGGER_DELAY_MS} ms`).join(', ')
  console.log(`with watcher:  total ${fmt(watcher)}; beyond the ${TRIGGER_DELAY_MS} ms trigger delay: ${over(watcher)}`)
  console.log(`installed after start: total ${fmt(interval)}; beyond the trigger delay: ${over(interval)}`)
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
