import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { MemberWorkSync } from '../index.js'
import { copyExampleRoot, listFiles, readJson, writeJson } from './helpers'

const NOW = Date.parse('2026-11-22T10:00:00.000Z')

function instance(root: string) {
  return new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW }, autoStart: false })
}

describe('report()', () => {
  it('refresh → report with the token → lease → clock past the lease → needs_sync', async () => {
    const sync = instance(copyExampleRoot())
    const status = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
    expect(status.reportToken).toMatch(/^wrs:v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
    expect(status.reportTokenExpiresAt).toBe('2026-11-22T10:15:00.000Z')

    const result = await sync.report({
      teamName: 'forge',
      memberName: 'jack',
      state: 'still_working',
      agendaFingerprint: status.agenda.fingerprint,
      reportToken: status.reportToken,
      taskIds: ['#2'],
      source: 'test',
    })
    expect(result).toMatchObject({ accepted: true, code: 'accepted', message: 'Member work sync report accepted.' })
    expect(result.status.state).toBe('still_working')
    expect(result.status.report).toMatchObject({ accepted: true, source: 'test', expiresAt: '2026-11-22T10:15:00.000Z' })

    sync.setClockForTesting(NOW + 10 * 60_000)
    expect((await sync.getStatus({ teamName: 'forge', memberName: 'jack' })).state).toBe('still_working')

    sync.setClockForTesting(NOW + 16 * 60_000)
    const after = await sync.getStatus({ teamName: 'forge', memberName: 'jack' })
    expect(after.state).toBe('needs_sync')
    expect(after.diagnostics).toContain('report_lease_expired')
  })

  it('a report against an old fingerprint is rejected with stale_fingerprint', async () => {
    const root = copyExampleRoot()
    const sync = instance(root)
    const old = await sync.refreshStatus({ teamName: 'forge', memberName: 'jill' })
    const task = path.join(root, 'tasks/forge/14.json')
    writeJson(task, { ...readJson(task), status: 'in_progress' })
    const result = await sync.report({
      teamName: 'forge',
      memberName: 'jill',
      state: 'still_working',
      agendaFingerprint: old.agenda.fingerprint,
      reportToken: old.reportToken,
    })
    expect(result.accepted).toBe(false)
    expect(result.code).toBe('stale_fingerprint')
    expect(result.status.report).toMatchObject({ accepted: false, rejectionCode: 'stale_fingerprint' })
    expect(result.status.agenda.fingerprint).not.toBe(old.agenda.fingerprint)
  })

  // The app's token verifier treats an empty token as missing (`identity_untrusted`)
  // and anything not split by '.' into exactly `wrs:v1`, a payload and a signature as
  // invalid (`invalid_report_token`); the rejection code is appended to the
  // reconciled status's diagnostics. These are the behaviour driver's malformed tokens.
  it.each([
    ['', 'identity_untrusted'],
    ['garbage', 'invalid_report_token'],
    ['wrs:v1:e30.AAAA', 'invalid_report_token'],
    ['wrs:v1:' + 'A'.repeat(40), 'invalid_report_token'],
  ])('a malformed token %j is rejected as %s', async (reportToken, code) => {
    const sync = instance(copyExampleRoot())
    const status = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
    const result = await sync.report({
      teamName: 'forge',
      memberName: 'jack',
      state: 'still_working',
      agendaFingerprint: status.agenda.fingerprint,
      reportToken,
    })
    expect(result).toMatchObject({ accepted: false, code })
    expect(result.status.report).toMatchObject({ accepted: false, rejectionCode: code })
    expect(result.status.diagnostics.at(-1)).toBe(`report_rejected:${code}`)
    expect(result.status.diagnostics.filter((d) => d.startsWith('report_rejected:'))).toEqual([`report_rejected:${code}`])
  })

  it('malformed requests and hostile names reject with MWS_INVALID_ARGUMENT before anything runs', async () => {
    const sync = instance(copyExampleRoot())
    const status = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
    const base = { teamName: 'forge', memberName: 'jack', agendaFingerprint: status.agenda.fingerprint }
    for (const bad of [
      { ...base, state: 'done' },
      { ...base, state: 'blocked', taskIds: Array.from({ length: 21 }, (_, i) => String(i)) },
      { ...base, state: 'blocked', note: 'x'.repeat(1001) },
      { ...base, state: 'blocked', taskIds: [42] },
    ]) {
      // As the app's report route: refused before the feature, naming the field.
      await expect(sync.report(bad as any)).rejects.toMatchObject({
        code: 'MWS_INVALID_ARGUMENT',
        message: expect.stringMatching(/state|taskIds|note/),
      })
    }
    await expect(sync.report({ ...base, memberName: '../x', state: 'caught_up' } as any)).rejects.toMatchObject({
      code: 'MWS_INVALID_ARGUMENT',
    })
  })
})

describe('metrics, replay and the agent brief', () => {
  it('getMetrics reports counts and readiness', async () => {
    const sync = instance(copyExampleRoot())
    for (const memberName of ['jack', 'jill', 'bob']) await sync.refreshStatus({ teamName: 'forge', memberName })
    const metrics = await sync.getMetrics({ teamName: 'forge' })
    expect(metrics.memberCount).toBe(3)
    expect(metrics.stateCounts).toEqual({ caught_up: 0, needs_sync: 3, still_working: 0, blocked: 0, inactive: 0, unknown: 0 })
    expect(metrics.wouldNudgeCount).toBe(3)
    expect(metrics.recentEvents.filter((e) => e.kind === 'status_evaluated')).toHaveLength(3)
    expect(metrics.phase2Readiness.state).toBe('collecting_shadow_data')
    expect(metrics.phase2Readiness.thresholds.minStatusEvents).toBe(20)
  })

  it('replayPendingReports validates the controller fallback file', async () => {
    const root = copyExampleRoot()
    const sync = instance(root)
    const jack = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
    writeJson(path.join(root, 'teams/forge/.member-work-sync/pending-reports.json'), {
      schemaVersion: 1,
      intents: {
        a: {
          id: 'a',
          teamName: 'forge',
          memberName: 'jack',
          reason: 'control_api_unavailable',
          status: 'pending',
          recordedAt: '2026-11-22T09:59:00.000Z',
          request: {
            teamName: 'forge',
            memberName: 'jack',
            state: 'still_working',
            agendaFingerprint: jack.agenda.fingerprint,
            reportToken: jack.reportToken,
            source: 'mcp',
          },
        },
      },
    })
    expect(await sync.replayPendingReports(['forge'])).toEqual({ processed: 1, accepted: 1, rejected: 0, superseded: 0 })
    expect(await sync.replayPendingReports(['forge'])).toEqual({ processed: 0, accepted: 0, rejected: 0, superseded: 0 })
    expect((await sync.getStatus({ teamName: 'forge', memberName: 'jack' })).state).toBe('still_working')
    await expect(sync.replayPendingReports(['..'])).rejects.toMatchObject({ code: 'MWS_INVALID_ARGUMENT' })
  })

  it('getAgentBrief carries the same fingerprint and token as the status', async () => {
    const sync = instance(copyExampleRoot())
    const status = await sync.refreshStatus({ teamName: 'forge', memberName: 'jill' })
    const brief = await sync.getAgentBrief({ teamName: 'forge', memberName: 'jill' })
    expect(brief.agendaFingerprint).toBe(status.agenda.fingerprint)
    expect(brief.reportToken).toBe(status.reportToken)
    expect(brief.actionableCount).toBe(4)
    // The agenda's first item, in the app's task list order (`#3` before `#6`).
    expect(brief.items[0]).toEqual({
      taskRef: { taskId: '3', displayId: '#3' },
      kind: 'work',
      reason: 'owned_in_progress_task',
      subject: 'Write API client',
    })
    expect(fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8')).toContain('getAgentBrief')
  })
})

describe('bounded input', () => {
  it('an oversized fingerprint is refused with MWS_INVALID_ARGUMENT and writes nothing', async () => {
    const root = copyExampleRoot()
    const sync = instance(root)
    const status = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
    const store = path.join(root, 'teams/forge/members/jack/.member-work-sync')
    const before = Object.fromEntries(listFiles(store).map((f) => [f, fs.readFileSync(path.join(store, f))]))
    await expect(
      sync.report({
        teamName: 'forge',
        memberName: 'jack',
        state: 'still_working',
        agendaFingerprint: 'f'.repeat(10 << 20),
        reportToken: status.reportToken,
      }),
    ).rejects.toMatchObject({ code: 'MWS_INVALID_ARGUMENT', message: expect.stringContaining('agendaFingerprint') })
    const after = Object.fromEntries(listFiles(store).map((f) => [f, fs.readFileSync(path.join(store, f))]))
    expect(after).toEqual(before)
    expect(listFiles(store).filter((f) => f.includes('.invalid.'))).toEqual([])
  })

  it('setClockForTesting with a non-number throws MWS_INVALID_ARGUMENT', () => {
    const sync = instance(copyExampleRoot())
    for (const bad of ['x', NaN, Infinity, {}, null]) {
      expect(() => sync.setClockForTesting(bad as unknown as number)).toThrow(
        expect.objectContaining({ code: 'MWS_INVALID_ARGUMENT' }),
      )
    }
    expect(() => sync.setClockForTesting(NOW + 1)).not.toThrow()
  })

  it('a clock the addon cannot store is refused, never run as 1970', async () => {
    const sync = instance(copyExampleRoot())
    // JavaScript's Date range ends at ±8.64e15; stored times have four-digit years.
    for (const bad of [8.64e15, -8.64e15, -1, 253_370_764_800_000]) {
      expect(() => sync.setClockForTesting(bad)).toThrow(
        expect.objectContaining({ code: 'MWS_INVALID_ARGUMENT', message: expect.stringContaining('nowMs') }),
      )
      expect(() => new MemberWorkSync({ autoStart: false, clock: { nowMs: bad } })).toThrow(
        expect.objectContaining({ code: 'MWS_INVALID_ARGUMENT', message: expect.stringContaining('options.clock.nowMs') }),
      )
    }
    expect(() => sync.setClockForTesting(253_370_764_799_999)).not.toThrow()
    const status = await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
    expect(status.evaluatedAt).toBe('9998-12-31T23:59:59.999Z')
  })
})
