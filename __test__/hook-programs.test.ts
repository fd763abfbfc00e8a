import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { MemberWorkSync } from '../index.js'
import { copyExampleRoot, until } from './helpers'

// The Stop-hook programs live in the agent-writable teams folder; whatever
// an agent does to them, the addon puts back what it wrote before the next
// drain, and never writes, chmods or removes through a link.

const NOW = Date.parse('2026-11-22T10:00:00.000Z')
const SHIPPED = path.join(__dirname, '..', 'turn-settled-hook-v1')
const SCRIPT = path.join(__dirname, '..', 'hooks/turn-settled-hook-v1.sh')

function instance(root: string) {
  return new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW }, autoStart: false })
}

const spool = (root: string) => path.join(root, 'teams/.member-work-sync/runtime-hooks')
const bin = (root: string, name = '') => path.join(spool(root), 'bin', name)

/** A folder outside the teams folder holding a program an agent wants run. */
function planted(root: string): string {
  const outside = path.join(root, 'outside')
  fs.mkdirSync(path.join(outside, 'runtime-hooks/bin'), { recursive: true })
  for (const name of ['keep.txt', 'runtime-hooks/bin/turn-settled-hook-v1', 'runtime-hooks/bin/turn-settled-hook-v1.sh']) {
    fs.writeFileSync(path.join(outside, name), '#!/bin/sh\necho planted\n', { mode: 0o755 })
  }
  return outside
}

/** The programs are exactly the addon's, 0755 regular files. */
function expectOurPrograms(root: string) {
  for (const [name, source] of [
    ['turn-settled-hook-v1', SHIPPED],
    ['turn-settled-hook-v1.sh', SCRIPT],
  ]) {
    const stat = fs.lstatSync(bin(root, name))
    expect(stat.isFile(), name).toBe(true)
    expect(stat.mode & 0o777, name).toBe(0o755)
    expect(fs.readFileSync(bin(root, name)).equals(fs.readFileSync(source)), name).toBe(true)
  }
}

describe('a replaced Stop-hook program is put back by the next drain', () => {
  const tamperings: [string, (file: string, root: string) => void][] = [
    ['overwritten in place', (file) => fs.writeFileSync(file, '#!/bin/sh\necho planted\n')],
    [
      'overwritten in place, same size',
      (file) => {
        const bytes = fs.readFileSync(file)
        bytes[bytes.length - 1] ^= 1
        fs.writeFileSync(file, bytes)
      },
    ],
    ['chmod 0644', (file) => fs.chmodSync(file, 0o644)],
    [
      'a link to a planted program',
      (file, root) => {
        fs.rmSync(file)
        fs.symlinkSync(path.join(planted(root), 'keep.txt'), file)
      },
    ],
    [
      'a folder',
      (file) => {
        fs.rmSync(file)
        fs.mkdirSync(path.join(file, 'inside'), { recursive: true })
      },
    ],
    ['removed', (file) => fs.rmSync(file)],
  ]
  for (const name of ['turn-settled-hook-v1', 'turn-settled-hook-v1.sh']) {
    for (const [how, tamper] of tamperings) {
      it(`${name}: ${how}`, async () => {
        const root = copyExampleRoot()
        await instance(root).buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
        tamper(bin(root, name), root)
        // Another instance (an autoStart one, after a relaunch) drains.
        await instance(root).drainRuntimeTurnSettledEvents()
        expectOurPrograms(root)
        if (fs.existsSync(path.join(root, 'outside'))) {
          const keep = path.join(root, 'outside/keep.txt')
          expect(fs.readFileSync(keep, 'utf8')).toBe('#!/bin/sh\necho planted\n')
          expect(fs.statSync(keep).mode & 0o777).toBe(0o755)
        }
      })
    }
  }
})

describe('a folder on the way to the programs replaced by a link is repaired', () => {
  const cases: [string, string][] = [
    ['teams/.member-work-sync', ''],
    ['teams/.member-work-sync/runtime-hooks', 'runtime-hooks'],
    ['teams/.member-work-sync/runtime-hooks/bin', 'runtime-hooks/bin'],
  ]
  for (const [rel, target] of cases) {
    for (const call of ['drain', 'settings'] as const) {
      it(`${rel} (${call})`, async () => {
        const root = copyExampleRoot()
        await instance(root).buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
        const outside = planted(root)
        fs.rmSync(path.join(root, rel), { recursive: true })
        fs.symlinkSync(path.join(outside, target), path.join(root, rel))
        const sync = instance(root)
        if (call === 'drain') {
          await sync.drainRuntimeTurnSettledEvents()
        } else {
          const settings: any = await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
          expect(settings.hooks.Stop[0].hooks[0].command).toContain(`'${bin(root, 'turn-settled-hook-v1')}'`)
        }
        expect(fs.lstatSync(path.join(root, rel)).isDirectory()).toBe(true)
        expectOurPrograms(root)
        // Nothing behind the link was written, chmod'ed or removed.
        expect(fs.readFileSync(path.join(outside, 'runtime-hooks/bin/turn-settled-hook-v1'), 'utf8')).toBe(
          '#!/bin/sh\necho planted\n',
        )
        expect(fs.readdirSync(path.join(outside, 'runtime-hooks/bin')).sort()).toEqual([
          'turn-settled-hook-v1',
          'turn-settled-hook-v1.sh',
        ])
      })
    }
  }
})

describe('a folder where a file of bin/ belongs', () => {
  it('at bin/boot-time: moved aside, and the drain goes on', async () => {
    const root = copyExampleRoot()
    const sync = instance(root)
    await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
    fs.rmSync(bin(root, 'boot-time'), { force: true })
    fs.mkdirSync(bin(root, 'boot-time/inside'), { recursive: true })
    fs.writeFileSync(bin(root, 'boot-time/inside/note'), 'kept for diagnosis')
    for (let i = 0; i < 2; i++) {
      expect(await sync.drainRuntimeTurnSettledEvents()).toMatchObject({ claimed: 0, failed: 0 })
    }
    expect(fs.lstatSync(bin(root, 'boot-time')).isFile()).toBe(true)
    const aside = fs.readdirSync(bin(root)).filter((n) => n.startsWith('boot-time.invalid.'))
    expect(aside).toHaveLength(1)
    expect(fs.readFileSync(bin(root, `${aside[0]}/inside/note`), 'utf8')).toBe('kept for diagnosis')
  })

  it("at the script's name: the hook is still installed, running the executable", async () => {
    const root = copyExampleRoot()
    fs.mkdirSync(bin(root, 'turn-settled-hook-v1.sh/inside'), { recursive: true })
    const settings: any = await instance(root).buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
    expect(settings).not.toBeNull()
    expect(settings.hooks.Stop[0].hooks[0].command).toContain(`'${bin(root, 'turn-settled-hook-v1')}'`)
    expectOurPrograms(root)
  })

  it('moved-aside copies are bounded: the newest 3 are kept', async () => {
    const root = copyExampleRoot()
    const sync = instance(root)
    await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
    for (let i = 0; i < 6; i++) {
      fs.rmSync(bin(root, 'turn-settled-hook-v1.sh'), { recursive: true, force: true })
      fs.mkdirSync(bin(root, 'turn-settled-hook-v1.sh'))
      await sync.drainRuntimeTurnSettledEvents()
    }
    const aside = fs.readdirSync(bin(root)).filter((n) => n.startsWith('turn-settled-hook-v1.sh.invalid.'))
    expect(aside).toHaveLength(3)
    expectOurPrograms(root)
  })
})

describe('with autoStart, a change in bin/ starts the drain that puts the program back', () => {
  it('without waiting for the drain interval', async () => {
    const root = copyExampleRoot()
    await instance(root).buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
    // A payload to show the first drain ran (the watcher is attached by then).
    fs.writeFileSync(path.join(spool(root), 'incoming/20261122T100000Z-1-0.claude.json'), '{}')
    const sync = new MemberWorkSync({ claudeRoot: root, autoStart: true, tuning: { drainIntervalMs: 86_400_000 } })
    try {
      // Claimed: the first drain ran, and the watcher is attached before it.
      await until(() => (fs.readdirSync(path.join(spool(root), 'incoming')).length === 0 ? true : undefined))
      for (const name of ['turn-settled-hook-v1', 'turn-settled-hook-v1.sh']) {
        fs.writeFileSync(bin(root, name), '#!/bin/sh\necho planted\n')
        await until(() => (fs.readFileSync(bin(root, name), 'utf8') !== '#!/bin/sh\necho planted\n' ? true : undefined))
        expectOurPrograms(root)
      }
    } finally {
      await sync.dispose()
    }
  })
})
