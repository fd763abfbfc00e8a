'use strict'
// The packed-install smoke test, run by scripts/check/packed-install-check.js as
// `smoke.js` in a scratch app whose node_modules were installed (npm or pnpm)
// from the packed main package and platform packages, next to `claude-root/`
// (a copy of examples/claude-root). It loads the addon through the package's
// entries as an app does, CommonJS and ES module, and works on a copy of the
// example team in a temp folder. Each check prints one line; the last line
// is a JSON summary; the first failure exits 1.

const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const EXAMPLE = path.join(__dirname, 'claude-root')
const NOW = Date.parse('2026-11-22T10:00:00.000Z')
const HOOK = process.platform === 'win32' ? 'turn-settled-hook-v1.exe' : 'turn-settled-hook-v1'
const summary = {}

async function check(name, fn) {
  const detail = await fn()
  console.log(`ok   ${name}${detail === undefined ? '' : ` (${detail})`}`)
}

async function main() {
  const { MemberWorkSync } = require('member-work-sync')
  const loaded = Object.keys(require.cache).find((file) => file.endsWith('.node'))
  summary.loaded = path.relative(__dirname, loaded)
  console.log(`node ${process.version} ${process.platform}-${process.arch}: loaded ${summary.loaded}`)

  await check('member-work-sync/lazy resolves to the same module', async () => {
    const { loadMemberWorkSync } = require('member-work-sync/lazy')
    const lazy = await loadMemberWorkSync()
    assert.equal(lazy.MemberWorkSync, MemberWorkSync)
  })

  await check('an ES module imports both entries by name', () => {
    const script = "import { MemberWorkSync } from 'member-work-sync'; import { loadMemberWorkSync } from 'member-work-sync/lazy'; console.log(typeof MemberWorkSync, typeof loadMemberWorkSync)"
    const out = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: __dirname, encoding: 'utf8' })
    assert.equal(out.status, 0, out.stderr)
    assert.equal(out.stdout.trim(), 'function function')
  })

  await check('member-work-sync/electron loads as CommonJS and ES module', () => {
    const electron = require('member-work-sync/electron')
    assert.equal(typeof electron.createMemberWorkSyncFeature, 'function')
    const script = "import { createMemberWorkSyncFeature, registerMemberWorkSyncIpc } from 'member-work-sync/electron'; console.log(typeof createMemberWorkSyncFeature, typeof registerMemberWorkSyncIpc)"
    const out = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: __dirname, encoding: 'utf8' })
    assert.equal(out.status, 0, out.stderr)
    assert.equal(out.stdout.trim(), 'function function')
  })

  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-packed-smoke-'))
  fs.cpSync(EXAMPLE, root, { recursive: true })
  const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW }, autoStart: false })

  await check('refreshStatus issues a report token and writes the member status', async () => {
    const status = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
    assert.match(status.reportToken, /^wrs:v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
    const stored = JSON.parse(fs.readFileSync(path.join(root, 'teams', 'forge', 'members', 'jack', '.member-work-sync', 'status.json'), 'utf8'))
    assert.equal(stored.status.agenda.fingerprint, status.agenda.fingerprint)
    summary.refreshStatus = `state ${status.state}, ${status.agenda.items.length} agenda items`
    return summary.refreshStatus
  })

  await check('the Claude hook settings run the hook executable shipped in the platform package', async () => {
    const settings = await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
    const command = settings.hooks.Stop[0].hooks[0].command
    const bin = path.join(root, 'teams', '.member-work-sync', 'runtime-hooks', 'bin')
    assert.ok(command.startsWith(`'${path.join(bin, HOOK)}' `), command)
    const shipped = path.join(path.dirname(fs.realpathSync(loaded)), HOOK)
    assert.deepEqual(fs.readFileSync(path.join(bin, HOOK)), fs.readFileSync(shipped))
    summary.hook = path.relative(__dirname, shipped)
    return `copied from ${summary.hook}`
  })

  await check('dispose', () => sync.dispose())
  fs.rmSync(root, { recursive: true, force: true })
  console.log(JSON.stringify(summary))
}

main().catch((error) => {
  console.log(`FAIL ${error && error.stack ? error.stack : error}`)
  process.exitCode = 1
})
