import fs from 'node:fs'
import { describe, expect, it } from 'vitest'

import { MemberWorkSync } from '../index.js'
import { copyExampleRoot, until } from './helpers'

/** inotify instances this process holds (a per-user budget, 128 by default). */
function inotifyInstances(): number {
  return fs
    .readdirSync('/proc/self/fd')
    .filter((fd) => {
      try {
        return fs.readlinkSync(`/proc/self/fd/${fd}`) === 'anon_inode:inotify'
      } catch {
        return false
      }
    }).length
}

describe.runIf(process.platform === 'linux')('inotify instances', () => {
  it('dispose() releases every one the instance took (task folders and the spool watcher)', async () => {
    const root = copyExampleRoot()
    const before = inotifyInstances()
    const sync = new MemberWorkSync({ claudeRoot: root, autoStart: true, tuning: { drainIntervalMs: 100 } })
    // The spool exists once hook settings were built; the drain loop then watches incoming/.
    await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
    await sync.refreshTeam({ teamName: 'forge' })
    await until(() => (inotifyInstances() >= before + 2 ? true : undefined))
    expect(inotifyInstances()).toBeGreaterThanOrEqual(before + 2)
    await sync.dispose()
    expect(inotifyInstances()).toBe(before)
  })

  it('every instance of the process shares one for its task folders', async () => {
    const before = inotifyInstances()
    const instances = []
    for (let i = 0; i < 3; i++) {
      const root = copyExampleRoot()
      // A second team: its tasks folder is watched too.
      fs.cpSync(`${root}/teams/forge`, `${root}/teams/anvil`, { recursive: true })
      fs.cpSync(`${root}/tasks/forge`, `${root}/tasks/anvil`, { recursive: true })
      const sync = new MemberWorkSync({ claudeRoot: root, autoStart: false })
      await sync.refreshTeam({ teamName: 'forge' })
      await sync.refreshTeam({ teamName: 'anvil' })
      instances.push(sync)
    }
    // Six watched folders, one instance.
    expect(inotifyInstances()).toBe(before + 1)
    for (const sync of instances) await sync.dispose()
    expect(inotifyInstances()).toBe(before)
  })
})
