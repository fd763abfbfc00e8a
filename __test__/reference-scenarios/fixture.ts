// A small Claude root built per scenario: one team, its roster, its task
// files and an empty kanban board, plus readers for what the addon writes
// (statuses, journals, outboxes, inboxes, spool metadata) and the metric
// histories the app's scenarios start from. Everything goes through real files.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import { MemberWorkSync } from '../../index.js'
import type { MemberWorkSyncOptions } from '../../index.js'
import { readJson, tempDir, writeJson } from '../helpers'

/** The fixed instant every scenario starts at. */
export const NOW = Date.parse('2026-11-22T10:00:00.000Z')
export const MINUTE = 60_000
export const HOUR = 60 * MINUTE

export interface MemberSpec {
  name: string
  providerId?: 'anthropic' | 'codex' | 'gemini' | 'opencode'
  agentType?: string
}

export interface TaskSpec {
  id: string
  displayId?: string
  subject: string
  status: string
  owner?: string
  [field: string]: unknown
}

/** One team on disk and the helpers to read back what the addon did to it. */
export class Team {
  constructor(
    readonly root: string,
    readonly name: string,
  ) {}

  get teamDir(): string {
    return path.join(this.root, 'teams', this.name)
  }

  get spoolDir(): string {
    return path.join(this.root, 'teams/.member-work-sync/runtime-hooks')
  }

  storeDir(member: string): string {
    return path.join(this.teamDir, 'members', member, '.member-work-sync')
  }

  writeConfig(members: MemberSpec[]): void {
    writeJson(path.join(this.teamDir, 'config.json'), { name: this.name, members })
  }

  writeTasks(tasks: TaskSpec[]): void {
    const dir = path.join(this.root, 'tasks', this.name)
    fs.rmSync(dir, { recursive: true, force: true })
    fs.mkdirSync(dir, { recursive: true })
    for (const task of tasks) {
      writeJson(path.join(dir, `${task.id}.json`), { blocks: [], blockedBy: [], description: '', ...task })
    }
  }

  /** The stored status (the `status` field of `status.json`), or undefined. */
  status(member: string): any {
    const file = path.join(this.storeDir(member), 'status.json')
    return fs.existsSync(file) ? readJson(file).status : undefined
  }

  /** Rewrites the stored status (`status.json`'s `status`) with `change`, as an older writer or an operator would. */
  editStatus(member: string, change: (status: any) => any): void {
    const file = path.join(this.storeDir(member), 'status.json')
    const stored = readJson(file)
    writeJson(file, { ...stored, status: change(stored.status) })
  }

  journal(member: string): any[] {
    const file = path.join(this.storeDir(member), 'journal.jsonl')
    if (!fs.existsSync(file)) return []
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line))
  }

  events(member: string): string[] {
    return this.journal(member).map((line) => line.event)
  }

  outbox(member: string): Record<string, any> {
    const file = path.join(this.storeDir(member), 'outbox.json')
    return fs.existsSync(file) ? (readJson(file).items ?? {}) : {}
  }

  outboxItems(member: string): any[] {
    return Object.values(this.outbox(member))
  }

  inbox(member: string): any[] {
    const file = path.join(this.teamDir, 'inboxes', `${member}.json`)
    return fs.existsSync(file) ? readJson(file) : []
  }

  nudges(member: string): any[] {
    return this.inbox(member).filter((row) => row.messageKind === 'member_work_sync_nudge')
  }

  metricsFile(): string {
    return path.join(this.teamDir, '.member-work-sync/indexes/metrics.json')
  }

  writeMetrics(members: Record<string, unknown>, recentEvents: unknown[]): void {
    writeJson(this.metricsFile(), { schemaVersion: 2, members, recentEvents })
  }

  /** Writes a turn-settled payload into the spool's `incoming/` folder. */
  spoolEvent(fileName: string, payload: Record<string, unknown>): void {
    const incoming = path.join(this.spoolDir, 'incoming')
    fs.mkdirSync(incoming, { recursive: true })
    fs.writeFileSync(path.join(incoming, fileName), `${JSON.stringify(payload)}\n`)
  }

  /**
   * Makes every `failed_retryable` item of the member due at `atIso` and
   * drops the team's outbox index, as an operator editing the files would.
   */
  makeRetriesDue(member: string, atIso: string): void {
    const file = path.join(this.storeDir(member), 'outbox.json')
    const outbox = readJson(file)
    let touched = 0
    for (const item of Object.values(outbox.items) as any[]) {
      if (item.status !== 'failed_retryable') continue
      item.nextAttemptAt = atIso
      item.updatedAt = atIso
      touched++
    }
    if (touched === 0) throw new Error(`no failed_retryable item in ${file}`)
    writeJson(file, outbox)
    fs.rmSync(path.join(this.teamDir, '.member-work-sync/indexes/outbox-index.json'), { force: true })
  }

  processedMeta(fileName: string): any {
    return readJson(path.join(this.spoolDir, 'processed', `${fileName}.meta.json`))
  }
}

/** A team with `members` and `tasks` in a fresh temp Claude root, or beside others in `root`. */
export function makeTeam(name: string, members: MemberSpec[], tasks: TaskSpec[], root = tempDir('mws-ref-')): Team {
  const team = new Team(root, name)
  team.writeConfig(members)
  team.writeTasks(tasks)
  writeJson(path.join(team.teamDir, 'kanban-state.json'), { teamName: name, reviewers: [], tasks: {} })
  return team
}

/** An instance on the team's root with the fixed clock; nothing runs on its own unless asked. */
export function open(team: Team, options: Partial<MemberWorkSyncOptions> = {}): MemberWorkSync {
  return new MemberWorkSync({ claudeRoot: team.root, clock: { nowMs: NOW }, autoStart: false, ...options })
}

/** One pending task owned by `owner`. */
export function pendingTask(owner: string, subject = 'Ship sync', id = 'task-1', displayId = '11111111'): TaskSpec {
  return { id, displayId, subject, status: 'pending', owner }
}

/** Twenty calm hourly samples of one member, long before NOW: readiness is `shadow_ready`. */
export function seedShadowReady(team: Team, member: string): void {
  team.writeMetrics(
    { [member]: { memberName: member, state: 'caught_up', agendaFingerprint: 'agenda:v1:seed', actionableCount: 0, evaluatedAt: '2026-01-01T00:00:00.000Z' } },
    Array.from({ length: 20 }, (_, hour) => ({
      id: `calm-${hour}`,
      teamName: team.name,
      memberName: member,
      kind: 'status_evaluated',
      state: 'caught_up',
      agendaFingerprint: `agenda:v1:seed-${hour}`,
      recordedAt: new Date(Date.UTC(2026, 0, 1, hour)).toISOString(),
      actionableCount: 0,
    })),
  )
}

/** A one-second history of one member with would-nudge (or other) samples: collecting, with a blocking rate. */
export function seedYoungNoisy(team: Team, member: string, kinds: string[] = ['would_nudge'], nowMs = NOW): void {
  const sample = (id: string, kind: string, at: number) => ({
    id,
    teamName: team.name,
    memberName: member,
    kind,
    state: 'needs_sync',
    agendaFingerprint: 'agenda:v1:seed',
    recordedAt: new Date(at).toISOString(),
    actionableCount: 1,
  })
  team.writeMetrics(
    { [member]: { memberName: member, state: 'needs_sync', agendaFingerprint: 'agenda:v1:seed', actionableCount: 1, evaluatedAt: new Date(nowMs - 1000).toISOString() } },
    [sample('young-status', 'status_evaluated', nowMs - 1000), ...kinds.map((kind, i) => sample(`young-${kind}-${i}`, kind, nowMs))],
  )
}

/**
 * Two hours of calm samples spread over `members`, then a burst of the given
 * kinds for `noisyMember` just before `nowMs` (12 would-nudges, 6 fingerprint
 * changes, 6 rejections per kind): a mature history whose readiness is `blocked`.
 */
export function seedMatureNoisy(team: Team, noisyMember: string, kinds: string[], members = [noisyMember], nowMs = NOW): void {
  const start = nowMs - 2 * HOUR
  const burst: Record<string, number> = { would_nudge: 12, fingerprint_changed: 6, report_rejected: 6 }
  const calm = Array.from({ length: 24 }, (_, i) => {
    const member = members[i % members.length]
    return {
      id: `calm-${i}`,
      teamName: team.name,
      memberName: member,
      kind: 'status_evaluated',
      state: 'caught_up',
      agendaFingerprint: `agenda:v1:calm:${member}:${i}`,
      recordedAt: new Date(start + Math.round((2 * HOUR * i) / 23)).toISOString(),
      actionableCount: 0,
      providerId: 'codex',
    }
  })
  const noisy = kinds.flatMap((kind) =>
    Array.from({ length: burst[kind] }, (_, i) => ({
      id: `burst-${kind}-${i}`,
      teamName: team.name,
      memberName: noisyMember,
      kind,
      state: 'needs_sync',
      agendaFingerprint: 'agenda:v1:noisy',
      recordedAt: new Date(nowMs - i * 1000).toISOString(),
      actionableCount: 1,
      providerId: 'codex',
    })),
  )
  const latest = Object.fromEntries(
    members.map((member) => [
      member,
      { memberName: member, state: 'caught_up', agendaFingerprint: `agenda:v1:calm:${member}`, actionableCount: 0, evaluatedAt: new Date(start).toISOString(), providerId: 'codex' },
    ]),
  )
  team.writeMetrics(latest, [...calm, ...noisy])
}

/** Polls `probe` until it stops throwing (the reference's waitFor); rethrows the last failure after 5 s. */
export async function eventually(probe: () => void | Promise<void>): Promise<void> {
  // A bound against a hang, not a measure of speed: a loaded two-core CI
  // machine ran past 5 s once, so it stays just under the 20 s test timeout.
  const deadline = Date.now() + 15000
  for (;;) {
    try {
      await probe()
      return
    } catch (error) {
      if (Date.now() > deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
}

/** Waits until the instance's queue has nothing queued or running. */
export async function queueIdle(sync: MemberWorkSync): Promise<void> {
  await eventually(() => {
    const diagnostics = sync.getQueueDiagnostics()
    if (diagnostics.queued !== 0 || diagnostics.running !== 0) throw new Error('queue busy')
  })
}

/**
 * The fixed clock of one instance, moved only forward. `runQueue` moves it
 * to each queued item's due time until the queue is idle (the app's scenarios
 * shorten the queue's quiet window instead; the addon keeps its delays).
 */
export class Clock {
  now = NOW

  constructor(private readonly sync: MemberWorkSync) {}

  set(nowMs: number): void {
    this.now = Math.max(this.now, nowMs)
    this.sync.setClockForTesting(this.now)
  }

  advance(ms: number): void {
    this.set(this.now + ms)
  }

  /** Waits for something to be queued (when `expectWork`), then runs the queue dry. */
  async runQueue(expectWork = true): Promise<void> {
    if (expectWork) {
      await eventually(() => {
        const d = this.sync.getQueueDiagnostics()
        if (d.queued + d.running === 0) throw new Error('nothing queued yet')
      })
    }
    await eventually(() => {
      const d = this.sync.getQueueDiagnostics()
      if (d.queued > 0 && d.nextRunAt) this.set(Date.parse(d.nextRunAt))
      if (d.queued !== 0 || d.running !== 0) throw new Error('queue busy')
    })
  }
}
