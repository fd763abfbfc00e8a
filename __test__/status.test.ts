import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { MemberWorkSync } from '../index.js'
import { copyExampleRoot, listFiles, readJson, writeJson } from './helpers'

const NOW = Date.parse('2026-11-22T10:00:00.000Z')

function instance(root: string) {
  return new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW }, autoStart: false })
}

describe('refreshStatus / getStatus on the example team', () => {
  it('builds the agenda from disk and persists a v2 status', async () => {
    const root = copyExampleRoot()
    const sync = instance(root)
    const status = await sync.refreshStatus({ teamName: 'forge', memberName: 'jill' })
    expect(status.state).toBe('needs_sync')
    expect(status.providerId).toBe('opencode')
    expect(status.evaluatedAt).toBe('2026-11-22T10:00:00.000Z')
    expect(status.agenda.fingerprint).toMatch(/^agenda:v1:[0-9a-f]{64}$/)
    // In the app's task list order: display labels `#3`, `#6`, `#8`, `#14`.
    expect(status.agenda.items.map((i) => [i.kind, i.taskId, i.reason])).toEqual([
      ['work', '3', 'owned_in_progress_task'],
      ['review', '6', 'current_cycle_review_assigned'],
      ['work', '8', 'review_changes_requested'],
      ['work', '14', 'owned_pending_task'],
    ])
    expect(status.shadow).toMatchObject({ reconciledBy: 'request', wouldNudge: true, fingerprintChanged: false })
    expect(status.diagnostics).toContain('no_current_report')

    const file = path.join(root, 'teams/forge/members/jill/.member-work-sync/status.json')
    const stored = readJson(file)
    expect(stored.schemaVersion).toBe(2)
    expect(stored.status.agenda.fingerprint).toBe(status.agenda.fingerprint)
    const journal = fs
      .readFileSync(path.join(root, 'teams/forge/members/jill/.member-work-sync/journal.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line).event)
    expect(journal.slice(0, 4)).toEqual(['reconcile_started', 'agenda_loaded', 'decision_made', 'status_written'])
    // refreshStatus also plans: with no shadow history readiness is still collecting, and
    // (as in the app) a native member's inbox watch is targeted anyway.
    expect(journal.slice(4)).toEqual(['nudge_planned'])
  })

  it('getStatus returns the stored status while fresh and refreshes it when stale', async () => {
    const root = copyExampleRoot()
    const sync = instance(root)
    const unpersisted = await sync.getStatus({ teamName: 'forge', memberName: 'jack' })
    expect(unpersisted.diagnostics).toContain('status_snapshot_not_persisted')
    expect(fs.existsSync(path.join(root, 'teams/forge/members/jack'))).toBe(false)

    const first = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
    // Jack finishes task 1 on the board; a fresh stored status is still returned as stored.
    const taskFile = path.join(root, 'tasks/forge/1.json')
    writeJson(taskFile, { ...readJson(taskFile), status: 'completed' })
    const fresh = await sync.getStatus({ teamName: 'forge', memberName: 'jack' })
    expect(fresh.agenda.fingerprint).toBe(first.agenda.fingerprint)
    expect(fresh.evaluatedAt).toBe(first.evaluatedAt)

    // Past the 2-minute staleness bound getStatus reconciles synchronously.
    sync.setClockForTesting(NOW + 3 * 60_000)
    const refreshed = await sync.getStatus({ teamName: 'forge', memberName: 'jack' })
    expect(refreshed.evaluatedAt).toBe('2026-11-22T10:03:00.000Z')
    expect(refreshed.agenda.items.map((i) => i.taskId)).toEqual(['2'])
    expect(refreshed.shadow).toMatchObject({ fingerprintChanged: true, previousFingerprint: first.agenda.fingerprint })
  })

  it('setTeamRuntimeState makes members inactive', async () => {
    const root = copyExampleRoot()
    const sync = instance(root)
    sync.setTeamRuntimeState('forge', { active: true, activeMembers: ['jack'] })
    expect((await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })).state).toBe('needs_sync')
    const bob = await sync.refreshStatus({ teamName: 'forge', memberName: 'bob' })
    expect(bob.state).toBe('inactive')
    expect(bob.diagnostics).toContain('member_runtime_inactive')
    sync.setTeamRuntimeState('forge', { active: false })
    const jack = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
    expect(jack.state).toBe('inactive')
    expect(jack.diagnostics).toContain('team_runtime_inactive')
  })

  it('unknown teams and members are inactive, not errors', async () => {
    const root = copyExampleRoot()
    const sync = instance(root)
    const ghost = await sync.refreshStatus({ teamName: 'nope', memberName: 'jack' })
    expect(ghost.state).toBe('inactive')
    expect(ghost.agenda.diagnostics).toContain('team_config_missing')
    expect(ghost.diagnostics).toContain('status_snapshot_not_persisted')
    expect(fs.existsSync(path.join(root, 'teams/nope'))).toBe(false)
    const removed = await sync.refreshStatus({ teamName: 'forge', memberName: 'old-timer' })
    expect(removed.state).toBe('inactive')
    expect(removed.agenda.diagnostics).toContain('member_not_active')
  })

  it('quarantines a corrupt status file and rebuilds it', async () => {
    const root = copyExampleRoot()
    const sync = instance(root)
    const dir = path.join(root, 'teams/forge/members/kim/.member-work-sync')
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(path.join(dir, 'status.json'), '{"schemaVersion": 99, "status": {}}')
    const status = await sync.refreshStatus({ teamName: 'forge', memberName: 'kim' })
    expect(status.diagnostics).toContain('status_store_quarantined:future_schema_version:99')
    expect(fs.readdirSync(dir).filter((f) => f.startsWith('status.json.invalid.'))).toHaveLength(1)
    expect(readJson(path.join(dir, 'status.json')).schemaVersion).toBe(2)
  })
})

describe('bad input', () => {
  const hostile = ['', '   ', '..', '.', '../forge', 'a/b', 'a\\b', 'a\0b', 'x'.repeat(129)]

  it.each(hostile)('rejects hostile team name %j with MWS_INVALID_ARGUMENT and touches nothing', async (name) => {
    const root = copyExampleRoot()
    const before = listFiles(root)
    const sync = instance(root)
    await expect(sync.refreshStatus({ teamName: name, memberName: 'jack' })).rejects.toMatchObject({
      code: 'MWS_INVALID_ARGUMENT',
    })
    await expect(sync.getStatus({ teamName: 'forge', memberName: name })).rejects.toMatchObject({
      code: 'MWS_INVALID_ARGUMENT',
    })
    expect(() => sync.setTeamRuntimeState(name, { active: true })).toThrow(
      expect.objectContaining({ code: 'MWS_INVALID_ARGUMENT' }),
    )
    expect(listFiles(root)).toEqual(before)
  })

  it('rejects unconvertible arguments (undefined, BigInt, cycles, deep nesting) without crashing', async () => {
    const sync = instance(copyExampleRoot())
    const cyclic: any = { teamName: 'forge', memberName: 'jack' }
    cyclic.self = cyclic
    let deep: any = {}
    for (let i = 0; i < 10_000; i++) deep = { deep }
    for (const request of [undefined, { teamName: 'forge', memberName: 'jack', x: 1n }, cyclic, { teamName: 'forge', memberName: 'jack', deep }]) {
      await expect(sync.getStatus(request as any)).rejects.toMatchObject({ code: 'MWS_INVALID_ARGUMENT' })
      await expect(sync.report(request as any)).rejects.toMatchObject({ code: 'MWS_INVALID_ARGUMENT' })
    }
    expect(() => sync.setTeamRuntimeState('forge', { active: true, x: 1n } as any)).toThrow(
      expect.objectContaining({ code: 'MWS_INVALID_ARGUMENT' }),
    )
  })

  it('rejects malformed constructor options with MWS_INVALID_ARGUMENT', () => {
    for (const options of [42, 'x', { clock: 'x' }, { clock: { nowMs: Number.NaN } }, { claudeRoot: 5 }, { autoStart: 'yes' }, { onTeamChange: 1 }]) {
      expect(() => new MemberWorkSync(options as any)).toThrow(expect.objectContaining({ code: 'MWS_INVALID_ARGUMENT' }))
    }
    const sync = new MemberWorkSync({ autoStart: false, onTeamChange: () => {}, clock: { nowMs: 1 } })
    expect(() => sync.setClockForTesting(2)).not.toThrow()
    return sync.dispose()
  })

  it('rejects malformed requests with MWS_INVALID_ARGUMENT', async () => {
    const sync = instance(copyExampleRoot())
    for (const request of [null, 42, 'forge', {}, { teamName: 'forge' }, { teamName: 1, memberName: 'jack' }]) {
      await expect(sync.refreshStatus(request as any)).rejects.toMatchObject({ code: 'MWS_INVALID_ARGUMENT' })
    }
    expect(() => sync.setTeamRuntimeState('forge', { active: 'yes' } as any)).toThrow(
      expect.objectContaining({ code: 'MWS_INVALID_ARGUMENT' }),
    )
    expect(() => new MemberWorkSync({ autoStart: false }).setClockForTesting(1)).toThrow(
      expect.objectContaining({ code: 'MWS_INVALID_ARGUMENT' }),
    )
  })
})
