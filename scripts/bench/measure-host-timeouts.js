'use strict'
// How long a host callback that never settles holds a reconcile, a
// dispatch and dispose (README "Electron entry"). Usage:
//   node scripts/bench/measure-host-timeouts.js [hostTimeoutMs]
// Prints one line per case with the wall time in ms. A measurement, not a test.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { createMemberWorkSyncFeature } = require('../../electron.js')

const timeoutMs = process.argv[2] ? Number(process.argv[2]) : undefined
const never = () => new Promise(() => {})

function root() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-host-timeouts-'))
  fs.cpSync(path.join(__dirname, '..', '..', 'examples', 'claude-root'), dir, { recursive: true })
  return path.join(dir, 'teams')
}

async function timed(label, run) {
  const started = process.hrtime.bigint()
  await run()
  console.log(`${label}: ${Number(process.hrtime.bigint() - started) / 1e6} ms`)
}

async function main() {
  const base = { autoStart: false, logger: { debug() {}, warn() {}, error() {} }, ...(timeoutMs ? { hostTimeoutMs: timeoutMs } : {}) }
  console.log(`hostTimeoutMs: ${timeoutMs ?? 'default (5000)'}`)
  {
    const f = createMemberWorkSyncFeature({ teamsBasePath: root(), ...base })
    await timed('refreshStatus, no callbacks', () => f.refreshStatus({ teamName: 'forge', memberName: 'jack' }))
    await f.dispose()
  }
  {
    const f = createMemberWorkSyncFeature({ teamsBasePath: root(), ...base, isTeamActive: never })
    await timed('refreshStatus, isTeamActive never settles', () => f.refreshStatus({ teamName: 'forge', memberName: 'jack' }))
    await f.dispose()
  }
  {
    const f = createMemberWorkSyncFeature({ teamsBasePath: root(), ...base, isTeamActive: never, isMemberActive: never })
    await timed('refreshStatus, isTeamActive and isMemberActive never settle', () => f.refreshStatus({ teamName: 'forge', memberName: 'jack' }))
    await f.dispose()
  }
  {
    const f = createMemberWorkSyncFeature({ teamsBasePath: root(), ...base, canDispatchNudges: never })
    await timed('dispatchDueNudges(1 team), canDispatchNudges never settles', () => f.dispatchDueNudges(['forge']))
    await f.dispose()
  }
  {
    const f = createMemberWorkSyncFeature({ teamsBasePath: root(), ...base, resolveControlUrl: never })
    await timed('dispatchDueNudges(5 members due), resolveControlUrl never settles', () => f.dispatchDueNudges(['forge']))
    await f.dispose()
  }
  {
    const f = createMemberWorkSyncFeature({ teamsBasePath: root(), ...base, canDispatchNudges: never })
    const dispatching = f.dispatchDueNudges(['forge'])
    await new Promise((resolve) => setTimeout(resolve, 50))
    await timed('dispose while a dispatch waits on canDispatchNudges', () => f.dispose())
    await dispatching
  }
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
