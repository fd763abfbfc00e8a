import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { MemberWorkSync } from '../index.js'
import { copyExampleRoot, treeFingerprint } from './helpers'

const NOW = Date.parse('2026-11-22T10:00:00.000Z')
const MEMBERS = ['bob', 'jack', 'jill', 'kim', 'team-lead']

function instance(root: string) {
  return new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW }, autoStart: false })
}

describe('previewStatus / previewTeam are side-effect free', () => {
  it('change no file under the root, issue no token and match what a reconcile computes', async () => {
    const root = copyExampleRoot()
    const sync = instance(root)
    // A stored status (with journal, metrics and a team secret) for jill, a
    // corrupt one for kim that a writing read would move aside.
    const refreshed = await sync.refreshStatus({ teamName: 'forge', memberName: 'jill' })
    expect(refreshed.reportToken).toBeTruthy()
    const kimStore = path.join(root, 'teams/forge/members/kim/.member-work-sync')
    fs.mkdirSync(kimStore, { recursive: true })
    fs.writeFileSync(path.join(kimStore, 'status.json'), '{not json')
    const metricsBefore = await sync.getMetrics({ teamName: 'forge' })
    const before = treeFingerprint(root)

    const previews = []
    for (const memberName of [...MEMBERS, 'nobody-here']) {
      previews.push(await sync.previewStatus({ teamName: 'forge', memberName }))
    }
    const team = await sync.previewTeam({ teamName: 'forge' })
    const ghostTeam = await sync.previewTeam({ teamName: 'no-such-team' })

    expect(treeFingerprint(root)).toBe(before)
    expect(fs.readFileSync(path.join(kimStore, 'status.json'), 'utf8')).toBe('{not json')
    expect((await sync.getMetrics({ teamName: 'forge' })).recentEvents).toEqual(metricsBefore.recentEvents)
    for (const status of [...previews, ...team.statuses]) {
      expect(status.reportToken).toBeUndefined()
      expect(status.reportTokenExpiresAt).toBeUndefined()
      expect(status.diagnostics).not.toContain('report_token_issued')
      expect(status.diagnostics).toContain('status_snapshot_not_persisted')
    }
    expect(JSON.stringify([previews, team])).not.toContain(refreshed.reportToken)

    const jill = previews[MEMBERS.indexOf('jill')]
    expect(jill.state).toBe(refreshed.state)
    expect(jill.agenda).toEqual(refreshed.agenda)
    // The stored status is the previous one: same fingerprint, no change.
    expect(jill.shadow).toMatchObject({ previousFingerprint: refreshed.agenda.fingerprint, fingerprintChanged: false })
    expect(previews[MEMBERS.indexOf('kim')].diagnostics).toContain('status_store_quarantined:invalid_json')

    expect(team).toMatchObject({ teamName: 'forge', configFound: true })
    expect(team.statuses.map((s) => s.memberName)).toEqual(MEMBERS)
    expect(ghostTeam).toMatchObject({ teamName: 'no-such-team', configFound: false, statuses: [] })

    // A later reconcile still sees (and repairs) what the preview left alone.
    const kim = await sync.refreshStatus({ teamName: 'forge', memberName: 'kim' })
    expect(kim.diagnostics).toContain('status_store_quarantined:invalid_json')
    await sync.dispose()
  })

  it('rejects bad arguments with MWS_INVALID_ARGUMENT', async () => {
    const sync = instance(copyExampleRoot())
    await expect(sync.previewStatus({ teamName: '../x', memberName: 'jill' } as any)).rejects.toMatchObject({
      code: 'MWS_INVALID_ARGUMENT',
    })
    await expect(sync.previewStatus({ teamName: 'forge' } as any)).rejects.toMatchObject({ code: 'MWS_INVALID_ARGUMENT' })
    await expect(sync.previewTeam({} as any)).rejects.toMatchObject({ code: 'MWS_INVALID_ARGUMENT' })
    await sync.dispose()
    await expect(sync.previewTeam({ teamName: 'forge' })).rejects.toMatchObject({ code: 'MWS_DISPOSED' })
  })

  it('previewMetrics matches getMetrics and leaves a corrupt index where it is', async () => {
    const root = copyExampleRoot()
    const sync = instance(root)
    await sync.refreshTeam({ teamName: 'forge' })
    const metrics = await sync.getMetrics({ teamName: 'forge' })
    expect(metrics.recentEvents.length).toBeGreaterThan(0)
    const before = treeFingerprint(root)
    expect(await sync.previewMetrics({ teamName: 'forge' })).toEqual(metrics)
    expect(treeFingerprint(root)).toBe(before)

    const index = path.join(root, 'teams/forge/.member-work-sync/indexes/metrics.json')
    fs.writeFileSync(index, '{not json')
    const corrupt = treeFingerprint(root)
    const preview = await sync.previewMetrics({ teamName: 'forge' })
    expect(preview).toMatchObject({ teamName: 'forge', memberCount: 0, recentEvents: [] })
    expect(treeFingerprint(root)).toBe(corrupt)
    expect(fs.readFileSync(index, 'utf8')).toBe('{not json')
    // The writing read moves it aside.
    await sync.getMetrics({ teamName: 'forge' })
    expect(fs.existsSync(index)).toBe(false)
    await sync.dispose()
  })
})
