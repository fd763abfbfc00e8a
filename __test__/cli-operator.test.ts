import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { exampleWithHistory } from './explain-fixture'
import { copyExampleRoot, treeFingerprint } from './helpers'

const CLI = path.join(__dirname, '..', 'bin', 'member-work-sync.js')

/** Text with its line wrapping undone (every run of white space one space). */
function flat(text: string): string {
  return text.replace(/\s+/g, ' ')
}

function run(...args: string[]) {
  const result = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

describe('member-work-sync explain, metrics, drain, hook-settings', () => {
  it('explain prints a header and one dated line per entry within 100 columns, or the complete entries as JSON, and writes nothing', async () => {
    const root = await exampleWithHistory()
    const before = treeFingerprint(root)
    const text = run('explain', '--claude-root', root, '--team', 'forge', '--member', 'jack')
    expect(text).toMatchObject({ code: 0, stderr: '' })
    const [header, ...lines] = text.stdout.trimEnd().split('\n')
    expect(header).toBe('Timeline of jack in team forge, oldest first (times UTC):')
    // Each entry starts with its date and time; a long one continues indented under its sentence.
    expect(lines.every((l) => /^2026-11-22 \d\d:\d\d:\d\d {2}\S/.test(l) || /^ {21}\S/.test(l))).toBe(true)
    expect(lines.every((l) => l.length <= 100)).toBe(true)
    expect(lines.some((l) => l.length > 90)).toBe(true)
    expect(lines[0]).toBe('2026-11-22 10:00:00  reconcile queued (member_spawned)')
    expect(lines).toContain('2026-11-22 10:01:00  report accepted')
    expect(text.stdout).toMatch(/\n2026-11-22 10:00:30 {2}nudge \S+\s+\S*\s*delivered to the inbox \(attempt 1; tasks #1; #2\)\n/)
    expect(lines.filter((l) => !l.startsWith(' ')).at(-1)).toMatch(/^2026-11-22 10:01:00 {2}stored status: still_working/)

    const json = run('explain', `--claude-root=${root}`, '--team=forge', '--member=jack', '--json')
    expect(json).toMatchObject({ code: 0, stderr: '' })
    const parsed = JSON.parse(json.stdout)
    expect(parsed.entries).toHaveLength(lines.filter((l) => !l.startsWith(' ')).length)
    expect(parsed.entries[0]).toMatchObject({ origin: 'journal', kind: 'queue_enqueued', at: '2026-11-22T10:00:00.000Z' })
    expect(parsed.entries[0].fields).toMatchObject({ event: 'queue_enqueued', teamName: 'forge', memberName: 'jack' })
    // The stored status is embedded without its report token.
    const stored = parsed.entries.find((e: any) => e.origin === 'status')
    expect(stored.fields).toMatchObject({ memberName: 'jack', state: 'still_working' })
    expect(stored.fields).not.toHaveProperty('reportToken')

    // The fixture's times are in the past: a recent window is empty and says where the data ends; an ISO bound cuts.
    const recent = run('explain', '--claude-root', root, '--team', 'forge', '--member', 'jack', '--since', '2h')
    expect(recent).toMatchObject({ code: 0, stderr: '' })
    expect(flat(recent.stdout)).toMatch(/^No entries for jack in team forge since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC; the newest is from 2026-11-22 10:01:00 UTC\. $/)
    const since = run('explain', '--claude-root', root, '--team', 'forge', '--member', 'jack', '--since', '2026-11-22T10:01:00Z', '--json')
    expect(since.code).toBe(0)
    expect(JSON.parse(since.stdout).entries.every((e: any) => e.at >= '2026-11-22T10:01:00.000Z')).toBe(true)
    expect(treeFingerprint(root)).toBe(before)
  })

  it('explain names why there is nothing to show: not on the roster, broken config, nothing recorded yet', () => {
    const root = copyExampleRoot()
    // A fresh install: no app has run, so nothing is recorded; exit 0 saying who records it.
    const fresh = run('explain', '--claude-root', root, '--team', 'forge', '--member', 'jack')
    expect(fresh).toMatchObject({ code: 0, stderr: '' })
    expect(flat(fresh.stdout)).toMatch(/^No entries for jack in team forge: nothing recorded yet\. The journal, outbox, status and metrics are recorded by a running app/)
    const freshSince = run('explain', '--claude-root', root, '--team', 'forge', '--member', 'jack', '--since', '1d')
    expect(freshSince).toMatchObject({ code: 0, stderr: '' })
    expect(flat(freshSince.stdout)).toMatch(/^No entries for jack in team forge since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: nothing recorded yet\./)

    // --json keeps stdout JSON and says why on stderr.
    const freshJson = run('explain', '--claude-root', root, '--team', 'forge', '--member', 'jack', '--json')
    expect(freshJson.code).toBe(0)
    expect(JSON.parse(freshJson.stdout).entries).toEqual([])
    expect(flat(freshJson.stderr)).toMatch(/^member-work-sync: note: No entries for jack in team forge: nothing recorded yet\. /)
    // The addon keys members trimmed and lower-cased, as the app does: JACK is jack, on the roster.
    const upper = run('explain', '--claude-root', root, '--team', 'forge', '--member', ' JACK ')
    expect(upper).toMatchObject({ code: 0, stderr: '' })
    expect(flat(upper.stdout)).toMatch(/^No entries for jack in team forge: nothing recorded yet\./)

    // A name not on the roster (and with no history): exit 1, the roster and a guess.
    const typo = run('explain', '--claude-root', root, '--team', 'forge', '--member', 'jakc')
    expect(typo).toMatchObject({ code: 1, stdout: '' })
    expect(typo.stderr).toBe('member-work-sync: jakc is not on the roster of team forge; did you mean jack? (members: bob, jack, jill, kim, team-lead)\n')
    expect(run('explain', '--claude-root', root, '--team', 'forge', '--member', 'zed')).toMatchObject({
      code: 1,
      stderr: 'member-work-sync: zed is not on the roster of team forge (members: bob, jack, jill, kim, team-lead)\n',
    })

    // A broken config.json: exit 1 naming the file, for explain and metrics alike.
    const config = path.join(root, 'teams/forge/config.json')
    fs.writeFileSync(config, '{broken')
    for (const args of [['explain', '--team', 'forge', '--member', 'jack'], ['metrics', '--team', 'forge'], ['metrics', '--team', 'forge', '--json']]) {
      const broken = run(...args, '--claude-root', root)
      expect(broken).toMatchObject({ code: 1, stdout: '' })
      expect(broken.stderr).toBe(`member-work-sync: team forge: ${config} is unusable (team_config_invalid)\n`)
    }
  })

  it('explain still shows a member that left the roster but has history, with a note', async () => {
    const root = await exampleWithHistory()
    const configFile = path.join(root, 'teams/forge/config.json')
    const config = JSON.parse(fs.readFileSync(configFile, 'utf8'))
    config.members = config.members.filter((m: any) => m.name !== 'jack')
    fs.writeFileSync(configFile, JSON.stringify(config))
    const result = run('explain', '--claude-root', root, '--team', 'forge', '--member', 'jack')
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^Timeline of jack in team forge, oldest first \(times UTC\):\n2026-11-22 10:00:00 {2}reconcile queued/)
    expect(result.stderr).toBe('member-work-sync: note: jack is not on the roster of team forge (any more); showing what was recorded for it\n')
  })

  it('metrics prints counts and readiness against thresholds within 100 columns, says when nothing is recorded yet, read-only', async () => {
    const root = copyExampleRoot()
    const before = treeFingerprint(root)
    const text = run('metrics', '--claude-root', root, '--team', 'forge')
    expect(text).toMatchObject({ code: 0, stderr: '' })
    expect(text.stdout).toMatch(/^Team forge: 0 observed member\(s\) \(blocked 0, caught_up 0/)
    expect(text.stdout).toMatch(/phase 2 readiness: collecting_shadow_data/)
    expect(text.stdout).toMatch(/would-nudges per member-hour \S+ \(max \S+\)/)
    expect(flat(text.stdout)).toMatch(/ No status events recorded yet for team forge\. The journal, outbox, status and metrics are recorded by a running app/)
    expect(text.stdout.split('\n').filter((l) => l.length > 100)).toEqual([])
    const json = JSON.parse(run('metrics', '--claude-root', root, '--team', 'forge', '--json').stdout)
    expect(json).toMatchObject({ teamName: 'forge', phase2Readiness: { state: 'collecting_shadow_data' } })
    expect(json.phase2Readiness.thresholds.maxReportRejectionRate).toEqual(expect.any(Number))
    expect(treeFingerprint(root)).toBe(before)

    const recorded = run('metrics', '--claude-root', await exampleWithHistory(), '--team', 'forge')
    expect(recorded).toMatchObject({ code: 0, stderr: '' })
    expect(recorded.stdout).not.toMatch(/No status events recorded yet/)
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

    // opencode takes no hook settings: said in words, pointing at env.
    expect(run('hook-settings', '--claude-root', root, '--provider=opencode')).toMatchObject({
      code: 2,
      stdout: '',
      stderr:
        'member-work-sync: hook-settings: opencode takes no hook settings: its plugin reads the spool folder from the environment; see member-work-sync env --help\n',
    })
  })

  it('env prints the runtime environment of codex and opencode, as shell lines or JSON', () => {
    const root = copyExampleRoot()
    const spool = path.join(root, 'teams', '.member-work-sync', 'runtime-hooks')
    for (const provider of ['codex', 'opencode']) {
      const text = run('env', '--claude-root', root, '--provider', provider)
      expect(text).toMatchObject({ code: 0, stderr: '', stdout: `AGENT_TEAMS_RUNTIME_TURN_SETTLED_SPOOL_ROOT=${spool}\n` })
      const json = run('env', '--claude-root', root, `--provider=${provider}`, '--json')
      expect(json).toMatchObject({ code: 0, stderr: '' })
      expect(JSON.parse(json.stdout)).toEqual({ AGENT_TEAMS_RUNTIME_TURN_SETTLED_SPOOL_ROOT: spool })
    }
    expect(fs.statSync(path.join(spool, 'incoming')).isDirectory()).toBe(true)
    // A folder a shell would split is quoted.
    const spaced = path.join(copyExampleRoot(), "it's here")
    fs.cpSync(root, spaced, { recursive: true })
    const quoted = run('env', '--claude-root', spaced, '--provider', 'codex')
    expect(quoted.code).toBe(0)
    const sh = spawnSync('sh', ['-c', `${quoted.stdout.trim()}; printf %s "$AGENT_TEAMS_RUNTIME_TURN_SETTLED_SPOOL_ROOT"`], { encoding: 'utf8' })
    expect(sh.stdout).toBe(path.join(spaced, 'teams', '.member-work-sync', 'runtime-hooks'))
    expect(run('env', '--claude-root', root, '--provider', 'claude')).toMatchObject({
      code: 2,
      stdout: '',
      stderr: 'member-work-sync: env: claude takes no environment: its Stop hook is in its settings; see member-work-sync hook-settings --help\n',
    })
  })

  // (arguments, exit code, stderr pattern)
  const argumentCases: [string[], number, RegExp][] = [
    [['explain', '--team', 'forge'], 2, /^member-work-sync: explain needs --member; see member-work-sync explain --help\n$/],
    [['explain'], 2, /explain needs --team and --member/],
    [['explain', '--team', 'forge', '--member', 'jack', '--since', 'yesterday'], 2, /--since must be an age like 30s, 15m, 2h, 1d or an ISO-8601 time \(got yesterday\); see member-work-sync explain --help/],
    [['explain', '--team', 'forge', '--member'], 2, /--member needs a value/],
    [['explain', '--team', 'forge', '--membr', 'jack'], 2, /unknown option --membr; did you mean --member\? \(see member-work-sync explain --help\)/],
    [['metrics'], 2, /metrics needs --team/],
    [['metrics', '--team', 'forge', '--member', 'jack'], 2, /^member-work-sync: --member does not apply to metrics; see member-work-sync metrics --help\n$/],
    [['hook-settings'], 2, /hook-settings needs --provider/],
    [['hook-settings', '--provider', 'vim'], 2, /^member-work-sync: --provider must be claude or codex \(got vim\); see member-work-sync hook-settings --help\n$/],
    [['hook-settings', '--provider', 'cladue'], 2, /--provider must be claude or codex \(got cladue\); did you mean claude\?/],
    [['env'], 2, /env needs --provider/],
    [['drain', '--team', 'forge'], 2, /--team does not apply to drain/],
    [['status', '--since', '1h'], 2, /--since does not apply to status/],
    [['drain', 'explain'], 2, /^member-work-sync: unexpected argument explain after drain; see member-work-sync drain --help\n$/],
  ]
  it.each(argumentCases)('arguments %j exit %i', (args, code, stderr) => {
    const result = run(...args)
    expect(result.code).toBe(code)
    expect(result.stdout).toBe('')
    expect(result.stderr).toMatch(stderr)
    expect(result.stderr.split('\n')).toHaveLength(2)
  })

  it('help names every command and says which ones write', () => {
    const help = run('--help')
    expect(help.code).toBe(0)
    for (const command of ['explain', 'metrics', 'drain', 'hook-settings', 'env']) expect(help.stdout).toMatch(new RegExp(`\\n  ${command} +\\S`))
    expect(help.stdout).toMatch(/\n  drain +.*\(writes\)/)
    expect(help.stdout).toMatch(/\n  hook-settings +.*\(writes\)/)
    expect(help.stdout).toMatch(/\n  env +.*\(writes\)/)
    expect(help.stdout).toMatch(/\n  status +.*\(read-only\)/)
  })

  it('a missing root or team exits 1 naming it, and creates nothing', () => {
    const root = copyExampleRoot()
    const missing = path.join(root, 'no-such-root')
    for (const args of [['explain', '--team', 'forge', '--member', 'jack'], ['metrics', '--team', 'forge'], ['drain'], ['hook-settings', '--provider', 'claude'], ['env', '--provider', 'codex']]) {
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
