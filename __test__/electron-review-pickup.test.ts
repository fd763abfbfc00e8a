// Review pickup through member-work-sync/electron with the app's callbacks:
// our versions of the app's review-pickup delivery and escalation rules
// (planner asks canDeliver; the dispatcher writes the inbox row, then asks
// deliver; a refused or undeliverable pickup is escalated to the lead), with
// a delivering, a failing, a throwing and a never-settling callback.
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { createMemberWorkSyncFeature, type MemberWorkSyncFeatureDeps } from 'member-work-sync/electron'
import { copyExampleRoot, readJson, until } from './helpers'

const NOW = Date.parse('2026-11-22T10:00:00.000Z')
/** The host wait bound these tests run with (a configuration, not an assertion). */
const TIMEOUT_MS = 300

type Logged = { message: string; meta?: Record<string, unknown> }

/** bob's only agenda item in the example root is a review he was asked for: a clean pickup. */
function start(deps: Partial<MemberWorkSyncFeatureDeps>) {
  const root = copyExampleRoot()
  const logged: Logged[] = []
  const escalations: any[] = []
  const record = (message: string, meta?: Record<string, unknown>) => void logged.push({ message, meta })
  const feature = createMemberWorkSyncFeature({
    teamsBasePath: path.join(root, 'teams'),
    autoStart: false,
    clock: { nowMs: NOW },
    hostTimeoutMs: TIMEOUT_MS,
    logger: { debug: record, warn: record, error: record },
    reviewPickupEscalation: { escalate: (input) => void escalations.push(input) },
    ...deps,
  } as MemberWorkSyncFeatureDeps)
  const dir = path.join(root, 'teams/forge')
  const inbox = (): any[] => {
    const file = path.join(dir, 'inboxes/bob.json')
    return fs.existsSync(file) ? readJson(file) : []
  }
  const outbox = (): any[] => {
    const file = path.join(dir, 'members/bob/.member-work-sync/outbox.json')
    return fs.existsSync(file) ? Object.values(readJson(file).items) : []
  }
  const journal = (source: string): [string, string][] => {
    const file = path.join(dir, 'members/bob/.member-work-sync/journal.jsonl')
    if (!fs.existsSync(file)) return []
    return fs
      .readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((line) => line.source === source)
      .map((line) => [line.event, line.reason])
  }
  const loggedWith = (code: string, callback: string) =>
    logged.find((entry) => entry.meta?.code === code && entry.meta?.callback === callback)
  return { feature, inbox, outbox, journal, escalations, loggedWith }
}

const canDeliver = async () => ({ ok: true as const })

describe('review pickup through member-work-sync/electron', () => {
  it('a delivering callback: the inbox row is written, then handed to the app, and the item is delivered without escalation', async () => {
    const calls: any[] = []
    const h = start({
      reviewPickupDelivery: {
        canDeliver,
        deliver: async (input) => {
          calls.push(input)
          return { ok: true, state: 'prompt_accepted', messageId: input.messageId }
        },
      },
    })
    try {
      await h.feature.dispatchDueNudges(['forge'])
      const rows = h.inbox()
      expect(rows).toHaveLength(1)
      expect(calls).toHaveLength(1)
      expect(calls[0]).toMatchObject({ teamName: 'forge', memberName: 'bob', messageId: rows[0].messageId, inserted: true })
      expect(calls[0].payload.workSyncIntent).toBe('review_pickup')
      expect(h.outbox().map((item) => item.status)).toEqual(['delivered'])
      expect(h.journal('nudge_dispatcher')).toEqual([
        ['review_pickup_member_nudge_delivered', 'prompt_accepted'],
        ['nudge_delivered', 'review_pickup:prompt_accepted'],
      ])
      expect(h.escalations).toEqual([])
    } finally {
      await h.feature.dispose()
    }
  })

  it('a refusing canDeliver: nothing is planned; the refusal is journaled and escalated with its reason', async () => {
    const h = start({
      reviewPickupDelivery: {
        canDeliver: () => ({ ok: false, reason: 'runtime_not_opencode' }),
        deliver: async () => {
          throw new Error('not asked')
        },
      },
    })
    try {
      await h.feature.dispatchDueNudges(['forge'])
      expect(h.outbox()).toEqual([])
      expect(h.inbox()).toEqual([])
      expect(h.journal('nudge_planner')).toEqual(
        expect.arrayContaining([
          ['review_pickup_delivery_unavailable', 'runtime_not_opencode'],
          ['review_pickup_escalated', 'runtime_not_opencode'],
          ['nudge_skipped', 'review_pickup_delivery_unavailable'],
        ]),
      )
      expect(h.escalations.length).toBeGreaterThan(0)
      expect(h.escalations[0]).toMatchObject({ teamName: 'forge', memberName: 'bob', reason: 'runtime_not_opencode' })
      expect(h.escalations[0].reviewRequestEventIds.length).toBeGreaterThan(0)
    } finally {
      await h.feature.dispose()
    }
  })

  it('a failing deliver: capability absent supersedes and escalates; a terminal failure fails the item for good', async () => {
    const absent = start({
      reviewPickupDelivery: {
        canDeliver,
        deliver: async () => ({ ok: false, reason: 'capability_absent', message: 'no_opencode_session' }),
      },
    })
    try {
      await absent.feature.dispatchDueNudges(['forge'])
      expect(absent.outbox()).toEqual([expect.objectContaining({ status: 'superseded', lastError: 'no_opencode_session' })])
      expect(absent.journal('nudge_dispatcher')).toEqual([
        ['review_pickup_delivery_unavailable', 'no_opencode_session'],
        ['review_pickup_escalated', 'no_opencode_session'],
      ])
      expect(absent.escalations).toEqual([expect.objectContaining({ memberName: 'bob', reason: 'no_opencode_session' })])
      expect(absent.inbox()).toHaveLength(1)
    } finally {
      await absent.feature.dispose()
    }
    const terminal = start({
      reviewPickupDelivery: {
        canDeliver,
        deliver: async () => ({ ok: false, reason: 'terminal_failure', message: 'member_removed' }),
      },
    })
    try {
      await terminal.feature.dispatchDueNudges(['forge'])
      expect(terminal.outbox()).toEqual([expect.objectContaining({ status: 'failed_terminal', lastError: 'member_removed' })])
      expect(terminal.journal('nudge_dispatcher')).toEqual([['nudge_skipped', 'member_removed']])
      expect(terminal.escalations).toEqual([])
    } finally {
      await terminal.feature.dispose()
    }
  })

  it('a throwing or never-settling deliver: the item is retried (nudge_retryable), logged, and dispose does not wait for it', async () => {
    for (const behaviour of ['throw', 'never'] as const) {
      const h = start({
        reviewPickupDelivery: {
          canDeliver,
          deliver: () => (behaviour === 'throw' ? Promise.reject(new Error('bridge down')) : new Promise(() => {})),
        },
      })
      try {
        await h.feature.dispatchDueNudges(['forge'])
        expect(h.outbox()).toEqual([expect.objectContaining({ status: 'failed_retryable' })])
        const [[event, reason]] = h.journal('nudge_dispatcher')
        expect(event).toBe('nudge_retryable')
        expect(reason).toContain(behaviour === 'throw' ? 'bridge down' : 'timed out')
        expect(h.escalations).toEqual([])
        const code = behaviour === 'throw' ? 'MWS_LOG_HOST_CALLBACK_FAILED' : 'MWS_LOG_HOST_CALLBACK_TIMED_OUT'
        await until(() => h.loggedWith(code, 'reviewPickupDelivery.deliver'))
      } finally {
        await h.feature.dispose()
      }
    }
  })

  it('a throwing or never-settling canDeliver counts as a refusal: escalated, logged, nothing planned', async () => {
    for (const behaviour of ['throw', 'never'] as const) {
      const h = start({
        reviewPickupDelivery: {
          canDeliver: () => (behaviour === 'throw' ? Promise.reject(new Error('bridge down')) : new Promise(() => {})),
          deliver: async () => ({ ok: true, state: 'prompt_accepted', messageId: 'x' }),
        },
      })
      try {
        await h.feature.dispatchDueNudges(['forge'])
        expect(h.outbox()).toEqual([])
        expect(h.journal('nudge_planner')).toEqual(
          expect.arrayContaining([['review_pickup_escalated', 'review_pickup_delivery_check_failed']]),
        )
        const code = behaviour === 'throw' ? 'MWS_LOG_HOST_CALLBACK_FAILED' : 'MWS_LOG_HOST_CALLBACK_TIMED_OUT'
        await until(() => h.loggedWith(code, 'reviewPickupDelivery.canDeliver'))
      } finally {
        await h.feature.dispose()
      }
    }
  })
})
