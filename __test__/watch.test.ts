import { execFileSync, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'

import { diffMembers, queueLines, readActivity, renderFrame } from '../bin/watch.js'
import { MemberWorkSync } from '../index.js'
import { copyExampleRoot, listFiles, writeJson } from './helpers'

// `member-work-sync watch` driven through a real terminal: tmux runs it in a
// detached pane whose screen the test reads with capture-pane.

const CLI = path.join(__dirname, '..', 'bin', 'member-work-sync.js')
const HAS_TMUX = spawnSync('which', ['tmux']).status === 0
if (!HAS_TMUX) console.warn('watch.test: tmux not found on PATH; the terminal tests of `watch` are skipped')

/** Upper bound of every wait for the pane (a hang fails the test instead of blocking it). */
const WAIT_MS = 20000

const sessions: string[] = []

function tmux(...args: string[]): string {
  return execFileSync('tmux', args, { encoding: 'utf8' })
}

function quote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`
}

/**
 * Starts `command` in a fresh 120x40 tmux session; after it ends the shell
 * prints its exit status and terminal modes and stays for capture-pane.
 */
function startPane(command: string): string {
  const name = `mws-watch-${process.pid}-${sessions.length}-${Date.now()}`
  sessions.push(name)
  const script = `${command}; echo "exit=$?"; echo "modes: $(stty -a | tr ' ;' '\\n\\n' | grep -E '^-?(icanon|echo)$' | tr '\\n' ' ')"; echo done-marker; sleep 600`
  tmux('new-session', '-d', '-s', name, '-x', '120', '-y', '40', `sh -c ${quote(script)}`)
  return name
}

function screen(name: string): string {
  return tmux('capture-pane', '-p', '-t', name)
}

function paneFlags(name: string): { alternate: string; cursor: string } {
  const [alternate, cursor] = tmux('display-message', '-p', '-t', name, '#{alternate_on} #{cursor_flag}').trim().split(' ')
  return { alternate, cursor }
}

async function waitForScreen(name: string, matches: (text: string) => boolean): Promise<string> {
  const started = Date.now()
  let text = ''
  while (Date.now() - started < WAIT_MS) {
    text = screen(name)
    if (matches(text)) return text
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`timed out waiting for the pane; it shows:\n${text}`)
}

function memberLine(text: string, member: string): string | undefined {
  return text.split('\n').find((line) => line.trimStart().startsWith(`${member} `))
}

afterEach(() => {
  for (const name of sessions.splice(0)) spawnSync('tmux', ['kill-session', '-t', name])
})

describe.skipIf(!HAS_TMUX)('member-work-sync watch in a terminal', () => {
  it('shows the members, follows a task change, quits on q and restores the terminal', async () => {
    const root = copyExampleRoot()
    const filesBefore = listFiles(root)
    const pane = startPane(`${quote(process.execPath)} ${quote(CLI)} watch --claude-root ${quote(root)} --team=forge`)

    const first = await waitForScreen(pane, (text) => /^\s+jill\s/m.test(text))
    expect(first).toContain('Team forge: 5 member(s)')
    expect(first).toMatch(/MEMBER\s+PROVIDER\s+STATE\s+ITEMS\s+FINGERPRINT\s+DIAGNOSTICS/)
    expect(paneFlags(pane)).toEqual({ alternate: '1', cursor: '0' })
    const jillBefore = memberLine(first, 'jill')!
    const itemsBefore = Number(jillBefore.trim().split(/\s+/)[3])
    expect(Number.isInteger(itemsBefore)).toBe(true)

    // A new pending task for jill: her line shows one more item and a new
    // fingerprint, and the event list records the change.
    writeJson(path.join(root, 'tasks/forge/99.json'), {
      id: '99',
      subject: 'Watch me',
      status: 'pending',
      owner: 'jill',
      description: '',
      blocks: [],
      blockedBy: [],
      displayId: '#99',
    })
    const updated = await waitForScreen(pane, (text) => {
      const line = memberLine(text, 'jill')
      return line !== undefined && Number(line.trim().split(/\s+/)[3]) === itemsBefore + 1
    })
    const jillAfter = memberLine(updated, 'jill')!
    expect(jillAfter.trim().split(/\s+/)[4]).not.toBe(jillBefore.trim().split(/\s+/)[4])
    expect(updated).toMatch(new RegExp(`forge/jill: .*items ${itemsBefore} -> ${itemsBefore + 1}`))
    expect(updated).not.toMatch(/token/i)

    tmux('send-keys', '-t', pane, 'q')
    const after = await waitForScreen(pane, (text) => text.includes('done-marker'))
    expect(after).toContain('exit=0')
    // Raw mode is off again (canonical input and echo), the cursor shows and
    // the alternate screen is gone: the table is no longer on screen.
    expect(after).toMatch(/^modes: icanon echo\s*$/m)
    expect(after).not.toContain('MEMBER')
    expect(paneFlags(pane)).toEqual({ alternate: '0', cursor: '1' })

    // Watching wrote nothing under the root: only the test's own task file is new.
    expect(listFiles(root)).toEqual([...filesBefore, path.join('tasks', 'forge', '99.json')].sort())
  })

  it('Ctrl-C quits with status 0 and restores the terminal', async () => {
    const root = copyExampleRoot()
    const pane = startPane(`${quote(process.execPath)} ${quote(CLI)} watch --claude-root=${quote(root)}`)
    await waitForScreen(pane, (text) => /^\s+kim\s/m.test(text))
    tmux('send-keys', '-t', pane, 'C-c')
    const after = await waitForScreen(pane, (text) => text.includes('done-marker'))
    expect(after).toContain('exit=0')
    expect(after).toMatch(/^modes: icanon echo\s*$/m)
    expect(paneFlags(pane)).toEqual({ alternate: '0', cursor: '1' })
  })

  it("shows the app's queue from a running instance and each team's phase-2 readiness", async () => {
    const root = copyExampleRoot()
    const now = Date.parse('2026-11-22T10:00:00.000Z')
    // The "app": an instance driving its queue, in this process.
    const app = new MemberWorkSync({ claudeRoot: root, clock: { nowMs: now } })
    const pane = startPane(`${quote(process.execPath)} ${quote(CLI)} watch --claude-root ${quote(root)}`)
    try {
      app.noteTeamChange({ type: 'member-spawn', teamName: 'forge', detail: 'jack' })
      const shown = await waitForScreen(pane, (text) => text.includes('forge/jack due'))
      expect(shown).toContain(`app queue (pid ${process.pid}`)
      expect(shown).toMatch(/1 queued, 0 running; since start 1 enqueued/)
      expect(shown).toContain('forge/jack due 10:00:30 (member_spawned)')
      expect(shown).toMatch(/phase 2: collecting_shadow_data \(.*insufficient_status_events/)
      expect(shown).toMatch(/observed 0\/\d+ h, 0\/20 events, would-nudges 0\/\d+ per member-hour/)
      await app.dispose()
      const after = await waitForScreen(pane, (text) => text.includes('app queue: no running addon'))
      expect(after).not.toContain('forge/jack due')
    } finally {
      await app.dispose()
    }
    tmux('send-keys', '-t', pane, 'q')
    expect(await waitForScreen(pane, (text) => text.includes('done-marker'))).toContain('exit=0')
  })

  it('a misspelled team exits 1 naming it, before taking over the screen', async () => {
    const root = copyExampleRoot()
    const pane = startPane(`${quote(process.execPath)} ${quote(CLI)} watch --claude-root ${quote(root)} --team froge`)
    const after = await waitForScreen(pane, (text) => text.includes('done-marker'))
    expect(after).toContain(`team froge not found in ${path.join(root, 'teams')}`)
    expect(after).toContain('exit=1')
    expect(paneFlags(pane)).toEqual({ alternate: '0', cursor: '1' })
  })
})

describe('member-work-sync watch without a terminal', () => {
  it('exits 2 saying it needs a terminal', () => {
    const root = copyExampleRoot()
    const result = spawnSync(process.execPath, [CLI, 'watch', '--claude-root', root], { encoding: 'utf8', stdio: 'pipe' })
    expect(result.status).toBe(2)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain('watch needs a terminal')
    expect(fs.readdirSync(root).sort()).toEqual(['tasks', 'teams'])
  })
})

describe('watch event lines', () => {
  const a = { state: 'needs_sync', items: 2, fingerprint: 'aaaa' }
  // (before, after, expected lines)
  const cases: [string, Record<string, typeof a>, Record<string, typeof a>, string[]][] = [
    ['no change', { 'f/jill': a }, { 'f/jill': a }, []],
    ['items and fingerprint', { 'f/jill': a }, { 'f/jill': { ...a, items: 3, fingerprint: 'bbbb' } }, ['t f/jill: items 2 -> 3, fingerprint aaaa -> bbbb']],
    ['state', { 'f/jill': a }, { 'f/jill': { ...a, state: 'caught_up' } }, ['t f/jill: needs_sync -> caught_up']],
    ['appeared', {}, { 'f/kim': a }, ['t f/kim appeared: needs_sync, 2 item(s)']],
    ['left', { 'f/kim': a }, {}, ['t f/kim left the roster']],
  ]
  it.each(cases)('%s', (_name, before, after, expected) => {
    expect(diffMembers(before, after, 't')).toEqual(expected)
  })
})

describe('watch frame', () => {
  const status = (memberName: string, diagnostics: string[]) => ({
    memberName,
    providerId: 'codex',
    state: 'needs_sync',
    agenda: { fingerprint: `agenda:v1:${'ab'.repeat(32)}`, items: [{}, {}] },
    diagnostics,
  })
  const view = (events: string[]) => ({
    root: '/r',
    teamsDir: '/r/teams',
    updatedAt: '10:00:00',
    spool: { incoming: 2, processing: undefined },
    activity: undefined,
    metrics: {},
    problems: [],
    teams: [{ teamName: 'forge', diagnostics: [], statuses: [status('ev\x1b[2Jil', ['agenda_empty', 'odd\x07note'])] }],
    events,
  })
  /** The frame without its own escapes (home, clear to end of line, clear below). */
  const text = (frame: string) => frame.replace(/\x1b\[(H|K|J)/g, '')

  it('shows control characters from names and diagnostics as ?', () => {
    const frame = text(renderFrame(view(['10:00:00 forge/ev\x1b]0;x\x07il: items 1 -> 2']), 120, 40))
    expect(frame).not.toMatch(/[\x00-\x09\x0b\x0c\x0e-\x1f\x7f]/)
    expect(frame).toContain('  ev?[2Jil         codex     needs_sync         2  abababababab  odd?note')
    expect(frame).toContain('incoming 2, processing -')
    expect(frame).toContain('forge/ev?]0;x?il: items 1 -> 2')
  })

  // (columns, rows, events, the lines below "Recent events": the newest that fit)
  const sizeCases: [number, number, string[], string[]][] = [
    [120, 40, [], ['  (none yet)']],
    [120, 40, ['e1', 'e2', 'e3'], ['  e1', '  e2', '  e3']],
    [120, 12, ['e1', 'e2', 'e3'], ['  e2', '  e3']],
    [20, 40, ['a long event line that does not fit'], ['  a long event line~']],
  ]
  it.each(sizeCases)('%i x %i with %j shows %j', (columns, rows, events, shown) => {
    const lines = text(renderFrame(view(events), columns, rows)).split('\r\n')
    expect(lines.length).toBeLessThanOrEqual(rows)
    expect(lines.every((line) => line.length <= columns)).toBe(true)
    expect(lines.slice(lines.indexOf('Recent events') + 1)).toEqual(shown)
  })
})

describe('watch queue lines', () => {
  const queue = (items: number) => ({
    queued: items,
    running: 1,
    enqueued: 9,
    coalesced: 3,
    reconciled: 5,
    failed: 0,
    dropped: 0,
    queuedItems: Array.from({ length: items }, (_, n) => ({
      teamName: 'forge',
      memberName: `m${n}`,
      runAt: '2026-11-22T10:00:15.000Z',
      triggerReasons: ['task_changed', 'turn_settled'],
    })),
  })
  const updatedAt = '2026-11-22T10:00:01.000Z'
  // (case, activity, expected lines)
  const cases: [string, unknown, string[]][] = [
    ['no file', undefined, ['app queue: no running addon has published one (autoStart instances write activity.json)']],
    ['unusable', { problem: 'activity.json is not a regular file' }, ['app queue: activity.json is not a regular file']],
    [
      'a pid that is gone',
      { pid: 4242, alive: false, updatedAt, queue: queue(1) },
      [`app queue: last published by pid 4242 at ${updatedAt}, which is no longer running`],
    ],
    [
      'running',
      { pid: 7, alive: true, updatedAt, queue: queue(1) },
      [
        'app queue (pid 7, updated 10:00:01): 1 queued, 1 running; since start 9 enqueued, 3 coalesced, 5 reconciled, 0 failed, 0 dropped',
        '  forge/m0 due 10:00:15 (task_changed, turn_settled)',
      ],
    ],
  ]
  it.each(cases)('%s', (_name, activity, expected) => {
    expect(queueLines(activity)).toEqual(expected)
  })

  it('lists at most 8 queued items', () => {
    const lines = queueLines({ pid: 7, alive: true, updatedAt, queue: queue(11) })
    expect(lines).toHaveLength(1 + 8 + 1)
    expect(lines[9]).toBe('  ... 3 more')
  })
})

describe('readActivity', () => {
  function teamsDir(): string {
    const dir = path.join(copyExampleRoot(), 'teams')
    fs.mkdirSync(path.join(dir, '.member-work-sync'), { recursive: true })
    return dir
  }
  const file = (dir: string) => path.join(dir, '.member-work-sync', 'activity.json')

  it('reads a published queue and tells whether its pid still runs', () => {
    const dir = teamsDir()
    expect(readActivity(dir)).toBeUndefined()
    writeJson(file(dir), { schemaVersion: 1, pid: process.pid, updatedAt: 'x', queue: { queuedItems: [] } })
    expect(readActivity(dir)).toMatchObject({ pid: process.pid, alive: true })
    // 0 and negative pids name process groups, which kill(pid, 0) would answer for.
    for (const pid of [0, -1]) {
      writeJson(file(dir), { schemaVersion: 1, pid, updatedAt: 'x', queue: { queuedItems: [] } })
      expect(readActivity(dir)).toMatchObject({ pid, alive: false })
    }
  })

  it.each([
    ['a link', (dir: string) => fs.symlinkSync('/etc/hostname', file(dir)), 'activity.json is not a regular file'],
    ['a FIFO', (dir: string) => execFileSync('mkfifo', [file(dir)]), 'activity.json is not a regular file'],
    ['not JSON', (dir: string) => fs.writeFileSync(file(dir), '{'), 'activity.json unreadable'],
    ['another shape', (dir: string) => fs.writeFileSync(file(dir), '{"pid":"1"}'), 'activity.json has an unexpected shape'],
  ])('%s is a problem, not read through', (_name, plant, problem) => {
    const dir = teamsDir()
    plant(dir)
    expect(readActivity(dir).problem).toContain(problem)
  })
})
