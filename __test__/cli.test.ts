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
    [['--help'], 0, /^usage: member-work-sync status/, /^$/],
    [['-h'], 0, /^usage: member-work-sync status/, /^$/],
    [['status', '--help'], 0, /--claude-root DIR/, /^$/],
    [['--version'], 0, new RegExp(`^${VERSION.replace(/\./g, '\\.')}\\n$`), /^$/],
    [['-V'], 0, new RegExp(`^${VERSION.replace(/\./g, '\\.')}\\n$`), /^$/],
    [['status', '--team'], 2, /^$/, /--team needs a value\nusage:/],
    [['status', '--team='], 2, /^$/, /--team needs a value/],
    [['status', '--team', '--json'], 2, /^$/, /--team needs a value/],
    [['status', '--claude-root'], 2, /^$/, /--claude-root needs a value/],
    [['status', '--bogus'], 2, /^$/, /unknown argument --bogus/],
    [['--json=1', 'status'], 2, /^$/, /unknown argument --json=1/],
    [['watch', '--json'], 2, /^$/, /watch does not take --json/],
    [['watch', '--team'], 2, /^$/, /--team needs a value/],
    [['--help'], 0, /\n {7}member-work-sync watch \[--claude-root DIR\] \[--team NAME\]/, /^$/],
    [[], 2, /^$/, /missing command \(status, explain, metrics, drain, hook-settings, watch\)/],
  ]
  it.each(argumentCases)('arguments %j exit %i', (args, code, stdout, stderr) => {
    const result = run(...args)
    expect(result.code).toBe(code)
    expect(result.stdout).toMatch(stdout)
    expect(result.stderr).toMatch(stderr)
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
