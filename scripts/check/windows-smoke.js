'use strict'
// The Windows smoke test, run by scripts/check/test-windows.js with a Windows
// node.exe under wine, as `smoke.js` in a scratch app whose node_modules hold
// the packed member-work-sync and member-work-sync-win32-x64-gnu packages, next
// to `claude-root/` (a copy of examples/claude-root). It loads the addon
// through the package entry (index.js) and works on a copy of the example
// team in the Windows temp folder. Each check prints one line; the first
// failure exits 1.

const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const PACKAGE = path.dirname(require.resolve('member-work-sync/package.json'))
const EXAMPLE = path.join(__dirname, 'claude-root')
const NOW = Date.parse('2026-11-22T10:00:00.000Z')
const PROJECT = 'C:\\work\\forge-app'
/** Claude's project folder name for PROJECT: every non-alphanumeric character becomes `-`. */
const PROJECT_FOLDER = PROJECT.replace(/[^A-Za-z0-9]/g, '-')

function check(name, fn) {
  return Promise.resolve()
    .then(fn)
    .then((detail) => console.log(`ok   ${name}${detail === undefined ? '' : ` (${detail})`}`))
}

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'))
}

/** Every file below `dir`, relative with `/`, sorted. */
function listFiles(dir) {
  const out = []
  const walk = (d) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, entry.name)
      if (entry.isDirectory()) walk(full)
      else out.push(path.relative(dir, full).split(path.sep).join('/'))
    }
  }
  walk(dir)
  return out.sort()
}

/** The example team plus a Claude project whose transcript says bob works there. */
function claudeRoot() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-windows-smoke-'))
  fs.cpSync(EXAMPLE, root, { recursive: true })
  const configFile = path.join(root, 'teams', 'forge', 'config.json')
  fs.writeFileSync(configFile, JSON.stringify({ ...readJson(configFile), projectPath: PROJECT, leadSessionId: 'L1' }))
  const projectDir = path.join(root, 'projects', PROJECT_FOLDER)
  fs.mkdirSync(projectDir, { recursive: true })
  fs.writeFileSync(path.join(projectDir, 'L1.jsonl'), '{"teamName":"forge","agentName":"team-lead"}\n')
  const line = { type: 'user', sessionId: 'B1', teamName: 'forge', agentName: 'bob', cwd: PROJECT, message: { role: 'user', content: 'Start task 3' } }
  fs.writeFileSync(path.join(projectDir, 'B1.jsonl'), JSON.stringify(line) + '\n')
  return root
}

async function main() {
  assert.equal(process.platform, 'win32', 'run this with a Windows node.exe')
  console.log(`node ${process.version} ${process.platform}-${process.arch}`)
  const { MemberWorkSync } = require('member-work-sync')
  const loaded = Object.keys(require.cache).find((file) => file.endsWith('.node'))
  console.log(`loaded ${path.relative(__dirname, loaded)} through ${path.relative(__dirname, require.resolve('member-work-sync'))}`)

  const root = claudeRoot()
  console.log(`claudeRoot ${root}`)
  const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW }, autoStart: false })
  const memberStore = path.join(root, 'teams', 'forge', 'members', 'jack', '.member-work-sync')
  let status

  await check('refreshStatus issues a report token', async () => {
    status = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
    assert.match(status.reportToken, /^wrs:v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
    return `state ${status.state}, ${status.agenda.items.length} agenda items`
  })

  await check('report with the issued token is accepted', async () => {
    const result = await sync.report({
      teamName: 'forge',
      memberName: 'jack',
      state: 'still_working',
      agendaFingerprint: status.agenda.fingerprint,
      reportToken: status.reportToken,
      source: 'test',
    })
    assert.equal(result.accepted, true, JSON.stringify(result))
    assert.equal(result.code, 'accepted')
    return result.code
  })

  await check('getStatus reads the lease back', async () => {
    const again = await sync.getStatus({ teamName: 'forge', memberName: 'jack' })
    assert.equal(again.state, 'still_working')
    return again.state
  })

  await check('refreshTeam commits every member as one batch', async () => {
    const statuses = await sync.refreshTeam({ teamName: 'forge' })
    assert.ok(statuses.length >= 3, `${statuses.length} statuses`)
    assert.equal(statuses.find((s) => s.memberName === 'jack').state, 'still_working')
    return `${statuses.length} members`
  })

  await check('getMetrics counts the team', async () => {
    const metrics = await sync.getMetrics({ teamName: 'forge' })
    assert.equal(metrics.teamName, 'forge')
    return JSON.stringify(metrics).length + ' bytes of metrics'
  })

  for (const [what, request] of [
    ['report from member ../x', () => sync.report({ teamName: 'forge', memberName: '../x', state: 'caught_up', agendaFingerprint: 'x' })],
    ['refreshStatus of team ..\\teams', () => sync.refreshStatus({ teamName: '..\\teams', memberName: 'jack' })],
  ]) {
    await check(`hostile name rejected: ${what}`, async () => {
      await assert.rejects(request(), (error) => error.code === 'MWS_INVALID_ARGUMENT')
      return 'MWS_INVALID_ARGUMENT'
    })
  }

  let spoolRoot
  await check('Claude hook settings: the hook executable by its Git Bash path, the spool root as Windows spells it', async () => {
    const settings = await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
    assert.ok(settings, 'settings are null')
    const command = settings.hooks.Stop[0].hooks[0].command
    assert.match(command, /^'\/[a-z]\/[^\\']+\/turn-settled-hook-v1\.exe' '[A-Za-z]:\\[^']+' 'claude' '262144' # /)
    spoolRoot = path.join(root, 'teams', '.member-work-sync', 'runtime-hooks')
    assert.ok(command.includes(`'${spoolRoot}'`), command)
    const script = fs.readFileSync(path.join(spoolRoot, 'bin', 'turn-settled-hook-v1.sh'), 'utf8')
    assert.equal(script, fs.readFileSync(path.join(PACKAGE, 'hooks', 'turn-settled-hook-v1.sh'), 'utf8'))
    const shipped = path.join(path.dirname(require.resolve('member-work-sync-win32-x64-gnu/package.json')), 'turn-settled-hook-v1.exe')
    assert.deepEqual(fs.readFileSync(path.join(spoolRoot, 'bin', 'turn-settled-hook-v1.exe')), fs.readFileSync(shipped))
    return command.slice(0, command.indexOf("' '") + 1)
  })

  const payload = {
    hook_event_name: 'Stop',
    session_id: 'B1',
    transcript_path: path.join(root, 'projects', PROJECT_FOLDER, 'B1.jsonl'),
    cwd: PROJECT,
  }
  await check('the installed hook executable spools a Stop payload, silently, exit 0', async () => {
    // Git Bash cannot run under wine: the executable is run with the command's arguments directly.
    const hook = path.join(spoolRoot, 'bin', 'turn-settled-hook-v1.exe')
    const out = spawnSync(hook, [spoolRoot, 'claude', '262144'], { input: JSON.stringify(payload) })
    assert.equal(out.error, undefined)
    assert.equal(out.status, 0)
    assert.equal(out.stdout.length + out.stderr.length, 0)
    const names = fs.readdirSync(path.join(spoolRoot, 'incoming'))
    assert.equal(names.length, 1, names.join(', '))
    // What the hook publishes: <UTC stamp>-<pid>-<n>.<provider>.json in incoming/.
    assert.match(names[0], /^\d{8}T\d{6}Z-\d+-0\.claude\.json$/)
    assert.equal(fs.readFileSync(path.join(spoolRoot, 'incoming', names[0]), 'utf8'), JSON.stringify(payload))
    return names[0]
  })

  await check('drain: the spooled Stop payload is claimed and enqueued for bob', async () => {
    const summary = await sync.drainRuntimeTurnSettledEvents()
    assert.deepEqual(summary, { claimed: 1, enqueued: 1, unresolved: 0, ignored: 0, invalid: 0, failed: 0 })
    assert.deepEqual(fs.readdirSync(path.join(spoolRoot, 'incoming')), [])
    return JSON.stringify(summary)
  })

  await check('dispose', () => sync.dispose())

  await check('store files written and read back', () => {
    const stored = readJson(path.join(memberStore, 'status.json'))
    assert.equal(stored.status.state, 'still_working')
    assert.equal(stored.status.report.accepted, true)
    const files = listFiles(path.join(root, 'teams', 'forge'))
    const leftovers = files.filter((file) => file.includes('.mws-tmp.'))
    assert.deepEqual(leftovers, [], 'temp files left behind')
    const written = files.filter((file) => file.includes('.member-work-sync/'))
    assert.ok(written.length >= 3, written.join(', '))
    return `${written.length} store files, e.g. ${written.slice(0, 4).join(', ')}`
  })

  await check('a second instance reads the same store and secret', async () => {
    const second = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW }, autoStart: false })
    const again = await second.getStatus({ teamName: 'forge', memberName: 'jack' })
    assert.equal(again.state, 'still_working')
    await second.dispose()
    return again.state
  })

  fs.rmSync(root, { recursive: true, force: true })
  console.log('windows smoke: all checks passed')
}

main().catch((error) => {
  console.log(`FAIL ${error && error.stack ? error.stack : error}`)
  process.exitCode = 1
})
