import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { exampleWithHistory } from './explain-fixture'
import { copyExampleRoot, treeFingerprint } from './helpers'

const CLI = path.join(__dirname, '..', 'bin', 'member-work-sync.js')

function run(...args: string[]) {
  const result = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

describe('member-work-sync explain, metrics, drain, hook-settings', () => {
  it('explain prints one HH:MM:SS line per entry, or the complete entries as JSON, and writes nothing', async () => {
    const root = await exampleWithHistory()
    const before = treeFingerprint(root)
    const text = run('explain', '--claude-root', root, '--team', 'forge', '--member', 'jack')
    expect(text).toMatchObject({ code: 0, stderr: '' })
    const lines = text.stdout.trimEnd().split('\n')
    expect(lines.every((l) => /^\d\d:\d\d:\d\d {2}\S/.test(l))).toBe(true)
    expect(lines[0]).toBe('10:00:00  reconcile queued (member_spawned)')
    expect(lines).toContain('10:01:00  report accepted')
    expect(lines.some((l) => /^10:00:30 {2}nudge \S+ delivered to the inbox \(attempt 1; tasks #1; #2\)$/.test(l))).toBe(true)
    expect(lines.at(-1)).toMatch(/^10:01:00 {2}stored status: still_working/)

    const json = run('explain', `--claude-root=${root}`, '--team=forge', '--member=jack', '--json')
    expect(json).toMatchObject({ code: 0, stderr: '' })
    const parsed = JSON.parse(json.stdout)
    expect(parsed.entries).toHaveLength(lines.length)
    expect(parsed.entries[0]).toMatchObject({ origin: 'journal', kind: 'queue_enqueued', at: '2026-11-22T10:00:00.000Z' })
    expect(parsed.entries[0].fields).toMatchObject({ event: 'queue_enqueued', teamName: 'forge', memberName: 'jack' })

    // The fixture's times are in the past: a recent window is empty; an ISO bound cuts.
    const recent = run('explain', '--claude-root', root, '--team', 'forge', '--member', 'jack', '--since', '2h')
    expect(recent).toMatchObject({ code: 0, stderr: '', stdout: 'No entries for jack in team forge.\n' })
    const since = run('explain', '--claude-root', root, '--team', 'forge', '--member', 'jack', '--since', '2026-11-22T10:01:00Z', '--json')
    expect(since.code).toBe(0)
    expect(JSON.parse(since.stdout).entries.every((e: any) => e.at >= '2026-11-22T10:01:00.000Z')).toBe(true)
    expect(treeFingerprint(root)).toBe(before)
  })

  it('metrics prints counts and readiness against thresholds, read-only', () => {
    const root = copyExampleRoot()
    const before = treeFingerprint(root)
    const text = run('metrics', '--claude-root', root, '--team', 'forge')
    expect(text).toMatchObject({ code: 0, stderr: '' })
    expect(text.stdout).toMatch(/^Team forge: 0 observed member\(s\) \(blocked 0, caught_up 0/)
    expect(text.stdout).toMatch(/phase 2 readiness: collecting_shadow_data/)
    expect(text.stdout).toMatch(/would-nudges per member-hour \S+ \(max \S+\)/)
    const json = JSON.parse(run('metrics', '--claude-root', root, '--team', 'forge', '--json').stdout)
    expect(json).toMatchObject({ teamName: 'forge', phase2Readiness: { state: 'collecting_shadow_data' } })
    expect(json.phase2Readiness.thresholds.maxReportRejectionRate).toEqual(expect.any(Number))
    expect(treeFingerprint(root)).toBe(before)
  })

  it('hook-settings installs the spool and prints the hook; drain then claims what the hook spooled', () => {
    const root = copyExampleRoot()
    const hook = run('hook-settings', '--claude-root', root, '--provider', 'claude')
    expect(hook).toMatchObject({ code: 0, stderr: '' })
    const settings = JSON.parse(hook.stdout)
    const command = settings.hooks.Stop[0].hooks[0].command
    expect(command).toContain(path.join(root, 'teams'))
    const spooled = spawnSync('sh', ['-c', command], { input: JSON.stringify({ hook_event_name: 'Stop', session_id: 'nobody', cwd: '/nowhere' }) })
    expect(spooled.status).toBe(0)

    const drain = run('drain', '--claude-root', root)
    expect(drain).toMatchObject({ code: 0, stderr: '', stdout: 'claimed 1, enqueued 0, unresolved 1, ignored 0, invalid 0, failed 0\n' })
    const again = JSON.parse(run('drain', '--claude-root', root, '--json').stdout)
    expect(again).toEqual({ claimed: 0, enqueued: 0, unresolved: 0, ignored: 0, invalid: 0, failed: 0 })

    // opencode takes no hook settings: `null`, not a failure.
    expect(run('hook-settings', '--claude-root', root, '--provider=opencode')).toMatchObject({ code: 0, stdout: 'null\n', stderr: '' })
  })

  // (arguments, exit code, stderr pattern)
  const argumentCases: [string[], number, RegExp][] = [
    [['explain', '--team', 'forge'], 2, /^member-work-sync: explain needs --member\nusage:/],
    [['explain'], 2, /explain needs --team and --member/],
    [['explain', '--team', 'forge', '--member', 'jack', '--since', 'yesterday'], 2, /--since must be an age like 30s, 15m, 2h, 1d or an ISO-8601 time \(got yesterday\)/],
    [['explain', '--team', 'forge', '--member'], 2, /--member needs a value/],
    [['metrics'], 2, /metrics needs --team/],
    [['metrics', '--team', 'forge', '--member', 'jack'], 2, /--member does not apply to metrics/],
    [['hook-settings'], 2, /hook-settings needs --provider/],
    [['hook-settings', '--provider', 'vim'], 2, /--provider must be one of claude, codex, opencode \(got vim\)/],
    [['drain', '--team', 'forge'], 2, /--team does not apply to drain/],
    [['status', '--since', '1h'], 2, /--since does not apply to status/],
    [['drain', 'explain'], 2, /unknown argument explain/],
  ]
  it.each(argumentCases)('arguments %j exit %i', (args, code, stderr) => {
    const result = run(...args)
    expect(result.code).toBe(code)
    expect(result.stdout).toBe('')
    expect(result.stderr).toMatch(stderr)
  })

  it('help names every command and says which ones write', () => {
    const help = run('--help')
    expect(help.code).toBe(0)
    for (const command of ['explain', 'metrics', 'drain', 'hook-settings']) expect(help.stdout).toContain(`member-work-sync ${command}`)
    expect(help.stdout).toMatch(/drain .*\n.*\(WRITES: installs the spool/)
    expect(help.stdout).toMatch(/hook-settings .*\n.*\(WRITES: installs the spool/)
  })

  it('a missing root or team exits 1 naming it, and creates nothing', () => {
    const root = copyExampleRoot()
    const missing = path.join(root, 'no-such-root')
    for (const args of [['explain', '--team', 'forge', '--member', 'jack'], ['metrics', '--team', 'forge'], ['drain'], ['hook-settings', '--provider', 'claude']]) {
      const result = run(...args, '--claude-root', missing)
      expect(result).toMatchObject({ code: 1, stdout: '' })
      expect(result.stderr).toContain(`Claude root ${missing} cannot be read: ENOENT`)
    }
    expect(fs.existsSync(missing)).toBe(false)
    const team = run('explain', '--claude-root', root, '--team', 'froge', '--member', 'jack')
    expect(team).toMatchObject({ code: 1, stdout: '' })
    expect(team.stderr).toContain(`team froge not found in ${path.join(root, 'teams')}`)
  })
})
