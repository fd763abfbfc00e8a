import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { copyExampleRoot, treeFingerprint } from './helpers'

const CLI = path.join(__dirname, '..', 'bin', 'member-work-sync.js')
const VERSION = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')).version

function run(...args: string[]) {
  const result = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

describe('member-work-sync CLI', () => {
  it('status is read-only and prints no token, in both output forms', () => {
    const root = copyExampleRoot()
    const before = treeFingerprint(root)
    for (let i = 0; i < 3; i++) {
      const text = run('status', '--claude-root', root)
      expect(text).toMatchObject({ code: 0, stderr: '' })
      expect(text.stdout).toContain('Team forge: 5 member(s)')
      expect(text.stdout).toMatch(/jill \(opencode\): needs_sync, \d+ actionable item\(s\)/)
      const json = run('status', `--claude-root=${root}`, '--team=forge', '--json')
      expect(json).toMatchObject({ code: 0, stderr: '' })
      const parsed = JSON.parse(json.stdout)
      expect(parsed.problems).toEqual([])
      expect(parsed.teams.map((t: any) => t.teamName)).toEqual(['forge'])
      expect(parsed.teams[0].statuses).toHaveLength(5)
      expect(json.stdout).not.toMatch(/reportToken|report_token_issued/)
    }
    expect(treeFingerprint(root)).toBe(before)
  })

  // (arguments, exit code, stdout pattern, stderr pattern)
  const argumentCases: [string[], number, RegExp, RegExp][] = [
    [['--help'], 0, /^usage: member-work-sync <command> \[options\]/, /^$/],
    [['-h'], 0, /^usage: member-work-sync <command> \[options\]/, /^$/],
    [['status', '--help'], 0, /^usage: member-work-sync status \[--claude-root DIR\] \[--sqlite PATH\] \[--team NAME\] \[--json\]\n/, /^$/],
    [['--version'], 0, new RegExp(`^${VERSION.replace(/\./g, '\\.')}\\n$`), /^$/],
    [['-V'], 0, new RegExp(`^${VERSION.replace(/\./g, '\\.')}\\n$`), /^$/],
    [['status', '--team'], 2, /^$/, /^member-work-sync: --team needs a value \(--team NAME\); see member-work-sync status --help\n$/],
    [['status', '--team='], 2, /^$/, /--team needs a value/],
    [['status', '--team', '--json'], 2, /^$/, /--team needs a value/],
    [['status', '--claude-root'], 2, /^$/, /--claude-root needs a value/],
    [['status', '--bogus'], 2, /^$/, /^member-work-sync: unknown option --bogus; see member-work-sync status --help\n$/],
    [['status', '--tema', 'forge'], 2, /^$/, /^member-work-sync: unknown option --tema; did you mean --team\? \(see member-work-sync status --help\)\n$/],
    [['stauts'], 2, /^$/, /^member-work-sync: unknown command stauts; did you mean status\? \(see member-work-sync --help\)\n$/],
    [['wacth', '--team', 'forge'], 2, /^$/, /unknown command wacth; did you mean watch\?/],
    [['frobnicate'], 2, /^$/, /^member-work-sync: unknown command frobnicate; see member-work-sync --help\n$/],
    [['--json=1', 'status'], 2, /^$/, /--json takes no value \(got --json=1\); see member-work-sync status --help/],
    [['watch', '--json'], 2, /^$/, /^member-work-sync: --json does not apply to watch; see member-work-sync watch --help\n$/],
    [['watch', '--team'], 2, /^$/, /--team needs a value/],
    [['status', 'forge'], 2, /^$/, /^member-work-sync: unexpected argument forge after status; see member-work-sync status --help\n$/],
    [[], 2, /^$/, /^member-work-sync: missing command \(status, explain, metrics, drain, hook-settings, env, watch\); see member-work-sync --help\n$/],
  ]
  it.each(argumentCases)('arguments %j exit %i', (args, code, stdout, stderr) => {
    const result = run(...args)
    expect(result.code).toBe(code)
    expect(result.stdout).toMatch(stdout)
    expect(result.stderr).toMatch(stderr)
    // A usage error is one line: the problem and a hint, never the whole help.
    if (code === 2) expect(result.stderr.split('\n')).toHaveLength(2)
  })

  it('every command has its own --help, and the help fits 100 columns', () => {
    const commands = ['status', 'explain', 'metrics', 'drain', 'hook-settings', 'env', 'watch']
    const global = run('--help')
    for (const command of commands) expect(global.stdout).toMatch(new RegExp(`\\n  ${command} +\\S`))
    for (const args of [['--help'], ...commands.flatMap((c) => [[c, '--help'], ['-h', c]])]) {
      const help = run(...args)
      expect(help).toMatchObject({ code: 0, stderr: '' })
      if (args.length === 2) expect(help.stdout).toMatch(new RegExp(`^usage: member-work-sync ${args.find((a) => a !== '--help' && a !== '-h')} `))
      expect(help.stdout.split('\n').filter((line) => line.length > 100)).toEqual([])
    }
  })

  it("--help says what each command really does: watch shows the app's queue, drain installs nothing", () => {
    const watch = run('watch', '--help').stdout
    expect(watch).toMatch(/reconcile queue \(as a running app\s+publishes it to DIR\/teams\/\.member-work-sync\/activity\.json\)/)
    expect(watch).not.toMatch(/not shown/)
    const drain = run('drain', '--help').stdout
    expect(drain).toMatch(/no hook was ever\s+installed \(hook-settings installs it\) there is no spool: it claims nothing and\s+creates nothing/)
    // ... and so it does: a drain on a fresh root writes, moves and creates nothing.
    const root = copyExampleRoot()
    const before = treeFingerprint(root)
    expect(run('drain', '--claude-root', root)).toMatchObject({ code: 0, stderr: '' })
    expect(treeFingerprint(root)).toBe(before)
    for (const command of ['hook-settings', 'env']) expect(run(command, '--help').stdout).toMatch(/WRITES: installs the\s+spool/)
  })

  it('a missing root exits 1 naming it', () => {
    const missing = path.join(copyExampleRoot(), 'no-such-root')
    const result = run('status', '--claude-root', missing)
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain(`Claude root ${missing} cannot be read: ENOENT`)
    expect(fs.existsSync(missing)).toBe(false)
  })

  it('a misspelled team exits 1 naming it and where it was looked for', () => {
    const root = copyExampleRoot()
    const result = run('status', '--claude-root', root, '--team', 'froge')
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain(`team froge not found in ${path.join(root, 'teams')}`)
  })

  it('a corrupt config.json is reported with its path, alone or among other teams', () => {
    const root = copyExampleRoot()
    fs.cpSync(path.join(root, 'teams/forge'), path.join(root, 'teams/anvil'), { recursive: true })
    const config = path.join(root, 'teams/anvil/config.json')
    fs.writeFileSync(config, '{broken')
    const expected = `team anvil: ${config} is unusable (team_config_invalid)`

    const alone = run('status', '--claude-root', root, '--team', 'anvil')
    expect(alone).toMatchObject({ code: 1, stdout: '' })
    expect(alone.stderr).toContain(expected)

    const all = run('status', '--claude-root', root)
    expect(all.code).toBe(1)
    expect(all.stdout).toContain('Team forge: 5 member(s)')
    expect(all.stdout).not.toContain('Team anvil')
    expect(all.stderr).toContain(expected)

    const json = run('status', '--claude-root', root, '--json')
    expect(json.code).toBe(1)
    expect(JSON.parse(json.stdout).problems).toEqual([expected])
  })

  it('an empty root says where it looked and exits 0', () => {
    const root = fs.mkdtempSync(path.join(copyExampleRoot(), 'empty-'))
    const result = run('status', '--claude-root', root)
    expect(result).toMatchObject({ code: 0, stderr: '' })
    expect(result.stdout).toBe(`No teams found in ${path.join(root, 'teams')}.\n`)
  })
})
