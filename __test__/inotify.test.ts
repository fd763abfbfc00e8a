import fs from 'node:fs'
import path from 'node:path'
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
    // The watcher's thread closes its descriptor just after dispose (below).
    await until(() => (inotifyInstances() === before ? true : undefined), 5_000)
    expect(inotifyInstances()).toBe(before)
  })

  it('autoStart instances share one spool watcher, and each still hears its own bin/', async () => {
    const before = inotifyInstances()
    const roots: string[] = []
    const instances: MemberWorkSync[] = []
    for (let i = 0; i < 3; i++) {
      const root = copyExampleRoot()
      const spool = path.join(root, 'teams/.member-work-sync/runtime-hooks')
      await new MemberWorkSync({ claudeRoot: root, autoStart: false }).buildRuntimeTurnSettledHookSettings({
        provider: 'claude',
      })
      fs.writeFileSync(path.join(spool, 'incoming/20261122T100000Z-1-0.claude.json'), '{}')
      roots.push(root)
      instances.push(new MemberWorkSync({ claudeRoot: root, autoStart: true, tuning: { drainIntervalMs: 86_400_000 } }))
    }
    // Each first drain claims its payload, with its watch attached before.
    for (const root of roots) {
      const incoming = path.join(root, 'teams/.member-work-sync/runtime-hooks/incoming')
      await until(() => (fs.readdirSync(incoming).length === 0 ? true : undefined))
    }
    expect(inotifyInstances()).toBe(before + 1)
    for (const root of roots) {
      const script = path.join(root, 'teams/.member-work-sync/runtime-hooks/bin/turn-settled-hook-v1.sh')
      fs.writeFileSync(script, 'planted')
      await until(() => (fs.readFileSync(script, 'utf8') !== 'planted' ? true : undefined))
    }
    for (const sync of instances) await sync.dispose()
    // The shared watcher is dropped with its last registration, and its
    // event loop thread closes the inotify descriptor right after, not
    // before dispose resolves (the watcher crate does not join it).
    await until(() => (inotifyInstances() === before ? true : undefined), 5_000)
    expect(inotifyInstances()).toBe(before)
  })
})
