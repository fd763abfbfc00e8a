import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { MemberWorkSync } from '../index.js'
import { copyExampleRoot, readJson, until, writeShadowHistory } from './helpers'

const NOW = Date.parse('2026-11-22T10:00:00.000Z')

describe('options.hostTimeoutMs', () => {
  const message = 'options.hostTimeoutMs must be an integer from 10 to 120000'

  it.each([null, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 9, 120_001, 10.5, '5000'].map((v) => [String(v), v]))(
    '%s is rejected with MWS_INVALID_ARGUMENT naming the option',
    (_label, hostTimeoutMs) => {
      let error: any
      try {
        new MemberWorkSync({ claudeRoot: copyExampleRoot(), autoStart: false, hostTimeoutMs } as any)
      } catch (e) {
        error = e
      }
      expect(error).toMatchObject({ code: 'MWS_INVALID_ARGUMENT' })
      expect(error.message).toBe(message)
    },
  )

  it.each([[undefined], [10], [120_000]])('%j is accepted', async (hostTimeoutMs) => {
    const sync = new MemberWorkSync({ claudeRoot: copyExampleRoot(), autoStart: false, hostTimeoutMs })
    await sync.dispose()
  })
})

describe('options.tuning', () => {
  it.each([
    [{ tuning: 5 }, 'options.tuning must be an object'],
    [{ tuning: [] }, 'options.tuning must be an object'],
    [{ tuning: null }, 'options.tuning must be an object'],
    [{ tuning: { drainIntervalMs: null } }, 'options.tuning.drainIntervalMs must be an integer from 100 to 86400000'],
    [{ tuning: { drainIntervalMs: 99 } }, 'options.tuning.drainIntervalMs must be an integer from 100 to 86400000'],
    [{ tuning: { drainIntervalMs: 86_400_001 } }, 'options.tuning.drainIntervalMs must be an integer from 100 to 86400000'],
    [{ tuning: { drainIntervalMs: '1000' } }, 'options.tuning.drainIntervalMs must be an integer from 100 to 86400000'],
    [{ tuning: { dispatchIntervalMs: 1500.5 } }, 'options.tuning.dispatchIntervalMs must be an integer from 100 to 86400000'],
    [{ tuning: { dispatchIntervalMs: Number.NaN } }, 'options.tuning.dispatchIntervalMs must be an integer from 100 to 86400000'],
    [{ tuning: { dispatchIntervalMs: -1 } }, 'options.tuning.dispatchIntervalMs must be an integer from 100 to 86400000'],
    [{ tuning: { queueConcurrency: 0 } }, 'options.tuning.queueConcurrency must be an integer from 1 to 8'],
    [{ tuning: { queueConcurrency: 9 } }, 'options.tuning.queueConcurrency must be an integer from 1 to 8'],
    [{ tuning: { queueConcurrency: true } }, 'options.tuning.queueConcurrency must be an integer from 1 to 8'],
    [{ tuning: { journalRotateBytes: 65_535 } }, 'options.tuning.journalRotateBytes must be an integer from 65536 to 5242880'],
    [{ tuning: { journalRotateBytes: 5_242_881 } }, 'options.tuning.journalRotateBytes must be an integer from 65536 to 5242880'],
    [{ tuning: { journalRotations: 0 } }, 'options.tuning.journalRotations must be an integer from 1 to 20'],
    [{ tuning: { outboxFinishedMaxAgeMs: 60_000 } }, 'options.tuning.outboxFinishedMaxAgeMs must be an integer from 3600000 to 7776000000'],
    [{ tuning: { outboxFinishedMaxItems: 9 } }, 'options.tuning.outboxFinishedMaxItems must be an integer from 10 to 10000'],
    [{ tuning: { spoolProcessedMaxFiles: -1 } }, 'options.tuning.spoolProcessedMaxFiles must be an integer from 0 to 100000'],
    [{ tuning: { spoolProcessedMaxAgeMs: 2.5 } }, 'options.tuning.spoolProcessedMaxAgeMs must be an integer from 0 to 2592000000'],
    [{ tuning: { spoolInvalidMaxFiles: 100_001 } }, 'options.tuning.spoolInvalidMaxFiles must be an integer from 0 to 100000'],
    [{ tuning: { spoolInvalidMaxAgeMs: '1' } }, 'options.tuning.spoolInvalidMaxAgeMs must be an integer from 0 to 2592000000'],
  ])('%j is rejected with MWS_INVALID_ARGUMENT naming the option', (options, message) => {
    let error: any
    try {
      new MemberWorkSync({ claudeRoot: copyExampleRoot(), autoStart: false, ...(options as any) })
    } catch (e) {
      error = e
    }
    expect(error).toMatchObject({ code: 'MWS_INVALID_ARGUMENT' })
    expect(error.message).toContain(message)
  })

  it.each([
    [{}],
    [{ tuning: undefined }],
    [{ tuning: {} }],
    [{ tuning: { drainIntervalMs: 100, dispatchIntervalMs: 86_400_000, queueConcurrency: 1 } }],
    [{ tuning: { dispatchIntervalMs: undefined, queueConcurrency: 8 } }],
    [
      {
        tuning: {
          journalRotateBytes: 65_536,
          journalRotations: 20,
          outboxFinishedMaxAgeMs: 3_600_000,
          outboxFinishedMaxItems: 10_000,
          spoolProcessedMaxFiles: 0,
          spoolProcessedMaxAgeMs: 0,
          spoolInvalidMaxFiles: 100_000,
          spoolInvalidMaxAgeMs: 2_592_000_000,
        },
      },
    ],
  ])('%j is accepted', async (options) => {
    const sync = new MemberWorkSync({ claudeRoot: copyExampleRoot(), autoStart: false, ...(options as any) })
    await sync.dispose()
  })

  it('a short dispatchIntervalMs delivers a planned nudge without a dispatchDueNudges call', async () => {
    // The default interval is 60 s: without the option nothing would be
    // delivered within until()'s 5 s.
    const root = copyExampleRoot()
    writeShadowHistory(root, NOW)
    const sync = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW }, tuning: { dispatchIntervalMs: 100 } })
    const inbox = path.join(root, 'teams/forge/inboxes/jack.json')
    const outbox = path.join(root, 'teams/forge/members/jack/.member-work-sync/outbox.json')
    try {
      sync.noteTeamChange({ type: 'member-spawn', teamName: 'forge', detail: 'jack' })
      await until(() => (sync.getQueueDiagnostics().queued === 1 ? true : undefined))
      sync.setClockForTesting(NOW + 30_000)
      const planned = await until(() => (fs.existsSync(outbox) ? readJson(outbox) : undefined))
      const [item] = Object.values(planned.items) as any[]
      const rows = await until(() => (fs.existsSync(inbox) ? readJson(inbox) : undefined))
      expect(rows).toHaveLength(1)
      expect(rows[0]).toMatchObject({ to: 'jack', messageKind: 'member_work_sync_nudge', messageId: item.id })
    } finally {
      await sync.dispose()
    }
  })

  it('journalRotateBytes and journalRotations rotate member journals by the setting', async () => {
    const root = copyExampleRoot()
    const dir = path.join(root, 'teams/forge/members/jack/.member-work-sync')
    const journal = path.join(dir, 'journal.jsonl')
    const sync = new MemberWorkSync({
      claudeRoot: root,
      clock: { nowMs: NOW },
      autoStart: false,
      tuning: { journalRotateBytes: 65_536, journalRotations: 1 },
    })
    try {
      for (const round of [1, 2]) {
        fs.mkdirSync(dir, { recursive: true })
        fs.writeFileSync(journal, `{"round":${round}}\n`.padEnd(70_000, ' ') + '\n')
        await sync.refreshStatus({ teamName: 'forge', memberName: 'jack' })
        // Past 64 KiB the journal moved to .1 (the default rotates at 5 MiB).
        expect(fs.readFileSync(`${journal}.1`, 'utf8')).toContain(`{"round":${round}}`)
        expect(fs.statSync(journal).size).toBeLessThan(65_536)
      }
      // One generation only: the first round's file is gone, not kept as .2.
      expect(fs.existsSync(`${journal}.2`)).toBe(false)
    } finally {
      await sync.dispose()
    }
  })
})
