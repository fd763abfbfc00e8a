import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { MemberWorkSync } from '../index.js'
import { copyExampleRoot } from './helpers'

const CLI = path.join(__dirname, '..', 'bin', 'member-work-sync.js')
const NOW = Date.parse('2026-11-22T10:00:00.000Z')

function cli(...args: string[]) {
  const result = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

describe('storage: { sqlitePath }', () => {
  // (options.storage, message)
  const invalid: [unknown, RegExp][] = [
    [1, /options\.storage must be an object/],
    [{}, /options\.storage\.sqlitePath must be a non-empty string/],
    [{ sqlitePath: '  ' }, /options\.storage\.sqlitePath must be a non-empty string/],
    [{ sqlitePath: 'app.db', readOnly: 'yes' }, /options\.storage\.readOnly must be a boolean/],
    [{ sqlitePath: 'app.db', path: 'x' }, /options\.storage\.path is not an option/],
    [{ gateway: {} }, /options\.storage\.gateway is not the app's storage gateway: no method ping/],
  ]
  it.each(invalid)('refuses storage %j', (storage, message) => {
    expect(() => new MemberWorkSync({ claudeRoot: copyExampleRoot(), autoStart: false, storage } as any)).toThrow(
      expect.objectContaining({ code: 'MWS_INVALID_ARGUMENT', message: expect.stringMatching(message) }),
    )
  })

  it('keeps the state in the database, where the read-only CLI finds it and the JSON files have none', async () => {
    const root = copyExampleRoot()
    const db = path.join(root, 'userData', 'storage', 'app.db')
    const sync = new MemberWorkSync({ claudeRoot: root, autoStart: false, clock: { nowMs: NOW }, storage: { sqlitePath: db } })
    try {
      expect(fs.existsSync(db)).toBe(false)
      const statuses = await sync.refreshTeam({ teamName: 'forge' })
      expect(statuses.length).toBe(5)
      expect(fs.existsSync(db)).toBe(true)
    } finally {
      await sync.dispose()
    }
    const memberFiles = fs.readdirSync(path.join(root, 'teams', 'forge', 'members'), { recursive: true }) as string[]
    expect(memberFiles.filter((f) => /(^|\/)(status|outbox|reports)\.json$/.test(f))).toEqual([])

    const fromDb = cli('metrics', '--claude-root', root, '--team', 'forge', '--sqlite', db, '--json')
    expect(fromDb).toMatchObject({ code: 0, stderr: '' })
    const metrics = JSON.parse(fromDb.stdout)
    expect(metrics.memberCount).toBe(5)
    expect(metrics.recentEvents.filter((e: any) => e.kind === 'status_evaluated')).toHaveLength(5)
    const fromFiles = JSON.parse(cli('metrics', '--claude-root', root, '--team', 'forge', '--json').stdout)
    expect(fromFiles.memberCount).toBe(0)

    const before = fs.readFileSync(db)
    const status = cli('status', '--claude-root', root, '--team', 'forge', '--sqlite', db, '--json')
    expect(status).toMatchObject({ code: 0, stderr: '' })
    expect(fs.readFileSync(db)).toEqual(before)
  })

  it('prepareTeamDeletion purges the team\'s rows once it is idle and leaves the replica clean and empty; the JSON store keeps its files', async () => {
    const root = copyExampleRoot()
    const db = path.join(root, 'userData', 'storage', 'app.db')
    const replica = path.join(root, 'teams', 'forge', '.member-work-sync', 'sqlite-fallback-replica.json')
    const metricsOf = () => JSON.parse(cli('metrics', '--claude-root', root, '--team', 'forge', '--sqlite', db, '--json').stdout)
    const sync = new MemberWorkSync({ claudeRoot: root, autoStart: false, clock: { nowMs: NOW }, storage: { sqlitePath: db } })
    try {
      await sync.refreshTeam({ teamName: 'forge' })
      expect(metricsOf().memberCount).toBe(5)
      expect(fs.existsSync(replica)).toBe(true)
      await sync.prepareTeamDeletion('forge', 'backup-1')
    } finally {
      await sync.dispose()
    }
    expect(metricsOf().memberCount).toBe(0)
    // The replica is left clean with the team's (now empty) snapshot, as the app leaves it.
    const published = JSON.parse(fs.readFileSync(replica, 'utf8'))
    expect(published.state).toBe('clean')
    expect(published.snapshot).toMatchObject({ statuses: [], reportIntents: [], outboxItems: [], metricEvents: [] })
    expect(fs.readdirSync(root).filter((f) => f.includes('deletions'))
      .flatMap((d) => fs.readdirSync(path.join(root, d)))).toEqual([])

    const jsonRoot = copyExampleRoot()
    const json = new MemberWorkSync({ claudeRoot: jsonRoot, autoStart: false, clock: { nowMs: NOW } })
    try {
      await json.refreshTeam({ teamName: 'forge' })
      await json.prepareTeamDeletion('forge', 'backup-1')
    } finally {
      await json.dispose()
    }
    const kept = fs.readdirSync(path.join(jsonRoot, 'teams', 'forge', 'members'), { recursive: true }) as string[]
    expect(kept.filter((f) => /(^|\/)status\.json$/.test(f))).toHaveLength(5)
  })

  it('the CLI opens a missing database read-only: an error naming it, no file made', () => {
    const root = copyExampleRoot()
    const db = path.join(root, 'nowhere', 'app.db')
    const result = cli('metrics', '--claude-root', root, '--team', 'forge', '--sqlite', db)
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain(db)
    expect(fs.existsSync(path.dirname(db))).toBe(false)
  })
})
