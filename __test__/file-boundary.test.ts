import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { MemberWorkSync } from '../index.js'
import { copyExampleRoot, listFiles } from './helpers'

const NOW = Date.parse('2026-11-22T10:00:00.000Z')

function instance(root: string) {
  return new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW }, autoStart: false })
}

/** A folder outside the team with one file an attacker would like changed. */
function outsideFolder(root: string): string {
  const outside = path.join(root, 'outside')
  fs.mkdirSync(outside, { recursive: true })
  fs.writeFileSync(path.join(outside, 'keep.txt'), 'precious')
  return outside
}

const team = (root: string, rel: string) => path.join(root, 'teams/forge', rel)

describe('store folders replaced by links are never written through', () => {
  // Each folder the store writes below, replaced by a link to a folder outside,
  // and how the call tells: it rejects, or it records why in the member journal.
  const cases: [string, 'rejects' | 'journals'][] = [
    ['members', 'rejects'],
    ['members/jack', 'rejects'],
    ['members/jack/.member-work-sync', 'rejects'],
    // The team store holds the token secret and the metrics index: without it
    // the status carries no token (report_token_unavailable) and the journal
    // says why metrics are missing.
    ['.member-work-sync', 'journals'],
    ['.member-work-sync/indexes', 'journals'],
  ]
  for (const [rel, outcome] of cases) {
    it(`${rel} (${outcome})`, async () => {
      const root = copyExampleRoot()
      // Make the real folders first, as a previous run would have.
      await instance(root).refreshStatus({ teamName: 'forge', memberName: 'jack' })
      const outside = outsideFolder(root)
      fs.rmSync(team(root, rel), { recursive: true, force: true })
      fs.symlinkSync(outside, team(root, rel))

      const sync = instance(root)
      const result = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' }).then(
        (status) => ({ status, error: undefined }),
        (error) => ({ status: undefined, error }),
      )
      if (outcome === 'rejects') {
        expect(result.error?.code).toBe('MWS_IO')
        expect(result.error.message).toContain(path.basename(rel))
      } else {
        expect(result.error).toBeUndefined()
        const journal = fs.readFileSync(team(root, 'members/jack/.member-work-sync/journal.jsonl'), 'utf8')
        const unavailable = journal
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line))
          .filter((event) => event.event === 'metrics_unavailable')
        expect(unavailable).toHaveLength(1)
        expect(unavailable[0].diagnostics[0]).toContain(path.basename(rel))
        if (rel === '.member-work-sync') expect(result.status!.diagnostics).toContain('report_token_unavailable')
      }
      expect(listFiles(outside)).toEqual(['keep.txt'])
      expect(fs.lstatSync(team(root, rel)).isSymbolicLink()).toBe(true)
    })
  }
})

describe('a FIFO in place of a store file never blocks a call', () => {
  const cases = [
    'members/jack/.member-work-sync/status.json',
    'members/jack/.member-work-sync/reports.json',
    '.member-work-sync/indexes/metrics.json',
    '.member-work-sync/report-token-secret.json',
  ]
  for (const rel of cases) {
    it(rel, async () => {
      const root = copyExampleRoot()
      const first = await instance(root).refreshStatus({ teamName: 'forge', memberName: 'jack' })
      fs.rmSync(team(root, rel), { force: true })
      execFileSync('mkfifo', [team(root, rel)])
      // A new instance (another app start): nothing cached from before.
      const sync = instance(root)

      // Every call returns; the FIFO is moved aside unopened and rebuilt.
      const status = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
      expect(status.agenda.fingerprint).toBe(first.agenda.fingerprint)
      await sync.report({
        teamName: 'forge',
        memberName: 'jack',
        state: 'still_working',
        agendaFingerprint: status.agenda.fingerprint,
        reportToken: status.reportToken,
      })
      await sync.getMetrics({ teamName: 'forge' })
      await sync.replayPendingReports(['forge'])
      const dir = path.dirname(team(root, rel))
      const kept = fs.readdirSync(dir).filter((f) => f.startsWith(`${path.basename(rel)}.invalid.`))
      expect(kept).toHaveLength(1)
      expect(fs.lstatSync(path.join(dir, kept[0])).isFIFO()).toBe(true)
    })
  }
})

describe('the turn-settled drain reports a reconcile it could not do', () => {
  it('counts it in failed instead of enqueued-and-done', async () => {
    const root = copyExampleRoot()
    const sync = instance(root)
    const incoming = path.join(root, 'teams/.member-work-sync/runtime-hooks/incoming')
    await sync.buildRuntimeTurnSettledEnvironment({ provider: 'codex' })
    fs.writeFileSync(
      path.join(incoming, '20261122T100000Z-1-0.codex.json'),
      JSON.stringify({
        provider: 'codex',
        source: 'agent-teams-orchestrator-codex-native',
        eventName: 'runtime_turn_settled',
        sessionId: 'c1',
        teamName: 'forge',
        memberName: 'jack',
      }),
    )
    // jack's store folder cannot be created: a file stands where it goes.
    fs.mkdirSync(team(root, 'members'), { recursive: true })
    fs.writeFileSync(team(root, 'members/jack'), 'not a folder')
    const summary = await sync.drainRuntimeTurnSettledEvents()
    expect(summary).toMatchObject({ claimed: 1, enqueued: 1, failed: 1 })
  })
})

describe('crash leftovers are swept', () => {
  it('a killed hook’s temp file goes to invalid/ even when a drain claims nothing', async () => {
    const root = copyExampleRoot()
    const sync = instance(root)
    await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
    const incoming = path.join(root, 'teams/.member-work-sync/runtime-hooks/incoming')
    // pid 2147483632 runs nowhere; the file is two hours old on the addon's clock.
    const temp = path.join(incoming, '.turn-settled.2147483632.0')
    fs.writeFileSync(temp, '{"half')
    const twoHoursBefore = new Date(NOW - 2 * 3600_000)
    fs.utimesSync(temp, twoHoursBefore, twoHoursBefore)
    expect(await sync.drainRuntimeTurnSettledEvents()).toMatchObject({ claimed: 0, failed: 0 })
    expect(fs.existsSync(temp)).toBe(false)
    const invalid = fs.readdirSync(path.join(root, 'teams/.member-work-sync/runtime-hooks/invalid'))
    expect(invalid.some((name) => name.includes('turn-settled.2147483632.0'))).toBe(true)
  })
})

describe('a team secret that cannot be read', () => {
  it('rejects report() with MWS_IO instead of answering invalid_report_token', async () => {
    const root = copyExampleRoot()
    const status = await instance(root).refreshStatus({ teamName: 'forge', memberName: 'jack' })
    // The team store folder becomes a file: the secret cannot be read or made.
    fs.rmSync(team(root, '.member-work-sync'), { recursive: true, force: true })
    fs.writeFileSync(team(root, '.member-work-sync'), 'not a folder')
    const error = await instance(root)
      .report({
        teamName: 'forge',
        memberName: 'jack',
        state: 'still_working',
        agendaFingerprint: status.agenda.fingerprint,
        reportToken: status.reportToken,
      })
      .then(
        () => undefined,
        (e) => e,
      )
    expect(error?.code).toBe('MWS_IO')
    expect(error.message).toContain('.member-work-sync')
  })
})
