import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { MemberWorkSync } from '../index.js'
import { exampleWithHistory, NOW } from './explain-fixture'
import { copyExampleRoot, treeFingerprint } from './helpers'

describe('explain()', () => {
  it('tells a member timeline from journal, outbox and status, oldest first, and writes nothing', async () => {
    const root = await exampleWithHistory()
    const before = treeFingerprint(root)
    const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW + 120_000 }, autoStart: false })
    try {
      const explanation = await sync.explain({ teamName: 'forge', memberName: 'jack' })
      expect(explanation).toMatchObject({ teamName: 'forge', memberName: 'jack', since: null, diagnostics: [] })
      expect(explanation.generatedAt).toBe('2026-11-22T10:02:00.000Z')
      const entries = explanation.entries
      const times = entries.map((e) => e.atMs)
      expect(times).toEqual([...times].sort((a, b) => a - b))
      const sentences = entries.map((e) => e.sentence)
      expect(sentences).toContain('reconcile queued (member_spawned)')
      expect(sentences).toContain('reconcile started (triggers: member_spawned)')
      expect(sentences.some((s) => /^decision: needs_sync with 2 actionable item\(s\); diagnostics: .*no_current_report/.test(s))).toBe(true)
      const planned = entries.find((e) => e.kind === 'nudge_planned')!
      expect(planned.sentence).toBe('nudge planned (created)')
      const delivered = entries.find((e) => e.kind === 'nudge_delivered')!
      expect(delivered.sentence).toMatch(/^nudge \S+ delivered to the inbox \(attempt 1; tasks #1; #2\)$/)
      expect(delivered.at).toBe('2026-11-22T10:00:30.000Z')
      expect(entries.find((e) => e.kind === 'report_rejected')!.sentence).toMatch(/^report rejected: stale_fingerprint; diagnostics: .*report_rejected:stale_fingerprint/)
      expect(sentences).toContain('nudge not planned: the nudge for this agenda already went out')
      expect(sentences).toContain('report accepted')
      const outbox = entries.find((e) => e.origin === 'outbox')!
      expect(outbox.kind).toBe('outbox_delivered')
      expect(outbox.sentence).toMatch(/^outbox: nudge \S+ \(agenda_sync\) delivered$/)
      const status = entries.filter((e) => e.origin === 'status')
      expect(status).toHaveLength(1)
      expect(status[0].sentence).toMatch(/^stored status: still_working with 2 actionable item\(s\); last report still_working accepted/)
      // Complete raw records come along.
      expect(planned.fields).toMatchObject({ event: 'nudge_planned', teamName: 'forge', memberName: 'jack', source: 'nudge_planner' })

      const since = await sync.explain({ teamName: 'forge', memberName: 'jack', sinceMs: NOW + 60_000 })
      expect(since.since).toBe('2026-11-22T10:01:00.000Z')
      expect(since.entries.length).toBeGreaterThan(0)
      expect(since.entries.every((e) => e.atMs >= NOW + 60_000)).toBe(true)
      expect(since.entries.some((e) => e.kind === 'nudge_delivered')).toBe(false)

      // An unknown member has an empty timeline, and nothing is created for it.
      expect(await sync.explain({ teamName: 'forge', memberName: 'nobody' })).toMatchObject({ entries: [], diagnostics: [] })
      await expect(sync.explain({ teamName: '../x', memberName: 'jack' })).rejects.toMatchObject({ code: 'MWS_INVALID_ARGUMENT' })
      await expect(sync.explain({ teamName: 'forge', memberName: 'jack', sinceMs: 'soon' as any })).rejects.toMatchObject({ code: 'MWS_INVALID_ARGUMENT' })
    } finally {
      await sync.dispose()
    }
    expect(treeFingerprint(root)).toBe(before)
  })

  it('leaves bad store files where they are and says what it could not read', async () => {
    const root = copyExampleRoot()
    const store = path.join(root, 'teams/forge/members/jill/.member-work-sync')
    fs.mkdirSync(store, { recursive: true })
    fs.writeFileSync(path.join(store, 'outbox.json'), '{broken')
    fs.writeFileSync(path.join(store, 'status.json'), JSON.stringify({ schemaVersion: 99 }))
    // A FIFO would block a plain open forever.
    expect(spawnSync('mkfifo', [path.join(store, 'journal.jsonl')]).status).toBe(0)
    fs.writeFileSync(path.join(store, 'journal.jsonl.1'), '{"event":"brand_new_kind","timestamp":"2026-11-22T09:00:00.000Z","metadata":{"n":3}}\nnot json\n')
    const before = treeFingerprint(root)
    const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW }, autoStart: false })
    try {
      const explanation = await sync.explain({ teamName: 'forge', memberName: 'jill' })
      expect(explanation.diagnostics).toEqual([
        'journal_unreadable_lines:1',
        'journal_skipped:journal.jsonl:not_a_file',
        'outbox_unusable:invalid_json',
        'status_unusable:future_schema_version:99',
      ])
      expect(explanation.entries.map((e) => e.sentence)).toEqual(['brand_new_kind: n=3'])
    } finally {
      await sync.dispose()
    }
    expect(treeFingerprint(root)).toBe(before)
  })
})
