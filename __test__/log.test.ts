import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { MemberWorkSync } from '../index.js'
import type { MemberWorkSyncLogEntry } from '../index.js'
import { copyExampleRoot, until } from './helpers'

const NOW = Date.parse('2026-11-22T10:00:00.000Z')

describe('onLog receives background failures', () => {
  it('a drain that cannot claim (a file where processing/ belongs) is logged', async () => {
    const root = copyExampleRoot()
    const spool = path.join(root, 'teams/.member-work-sync/runtime-hooks')
    fs.mkdirSync(path.join(spool, 'incoming'), { recursive: true })
    fs.writeFileSync(path.join(spool, 'incoming/20261122T100000Z-1-0.claude.json'), '{}')
    fs.writeFileSync(path.join(spool, 'processing'), 'not a folder')
    const entries: MemberWorkSyncLogEntry[] = []
    const sync = new MemberWorkSync({ claudeRoot: root, autoStart: true, onLog: (entry) => entries.push(entry) })
    const drain = await until(() =>
      entries.find((e) => e.code === 'MWS_LOG_DRAIN_FAILED' || e.code === 'MWS_LOG_DRAIN_INCOMPLETE'),
    )
    expect(['warn', 'error']).toContain(drain.level)
    expect(drain.message).toMatch(/turn-settled drain/)
    await sync.dispose()
  })

  it('a journal write that fails is logged with the member', async () => {
    const root = copyExampleRoot()
    // A file where jill's store folder belongs: every journal append fails
    // (and so does the status write).
    fs.mkdirSync(path.join(root, 'teams/forge/members/jill'), { recursive: true })
    fs.writeFileSync(path.join(root, 'teams/forge/members/jill/.member-work-sync'), 'planted')
    const entries: MemberWorkSyncLogEntry[] = []
    const sync = new MemberWorkSync({
      claudeRoot: root,
      clock: { nowMs: NOW },
      autoStart: false,
      onLog: (entry) => entries.push(entry),
    })
    await expect(sync.refreshStatus({ teamName: 'forge', memberName: 'jill' })).rejects.toMatchObject({ code: 'MWS_IO' })
    const entry = await until(() => entries.find((e) => e.code === 'MWS_LOG_JOURNAL_WRITE_FAILED'))
    expect(entry).toMatchObject({
      level: 'warn',
      context: { teamName: 'forge', memberName: 'jill', kind: 'reconcile_started' },
    })
    expect(entry.message).toContain('.member-work-sync')
    await sync.dispose()
  })

  it('a throwing logger changes nothing and a non-function is refused', async () => {
    const root = copyExampleRoot()
    fs.mkdirSync(path.join(root, 'teams/forge/members/jill'), { recursive: true })
    fs.writeFileSync(path.join(root, 'teams/forge/members/jill/.member-work-sync'), 'planted')
    let calls = 0
    const sync = new MemberWorkSync({
      claudeRoot: root,
      autoStart: false,
      onLog: () => {
        calls++
        throw new Error('logger broke')
      },
    })
    await expect(sync.refreshStatus({ teamName: 'forge', memberName: 'jill' })).rejects.toMatchObject({ code: 'MWS_IO' })
    expect((await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })).memberName).toBe('jack')
    await until(() => (calls > 0 ? true : undefined))
    await sync.dispose()
    expect(() => new MemberWorkSync({ claudeRoot: root, onLog: 'console.log' as any })).toThrow(
      expect.objectContaining({ code: 'MWS_INVALID_ARGUMENT', message: expect.stringContaining('options.onLog') }),
    )
  })
})
