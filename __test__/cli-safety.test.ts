import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { exampleWithHistory } from './explain-fixture'
import { copyExampleRoot, listFiles, readJson, writeJson } from './helpers'

const CLI = path.join(__dirname, '..', 'bin', 'member-work-sync.js')

function run(...args: string[]) {
  const result = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' })
  return { code: result.status, stdout: result.stdout, stderr: result.stderr }
}

/** C0 controls but tab and newline, DEL and C1 controls: what must never reach the terminal raw. */
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/

/** Every command, in text and JSON where it has both, against `root`. */
function everyCommand(root: string): string[][] {
  const at = ['--claude-root', root]
  return [
    ['status', ...at],
    ['status', ...at, '--json'],
    ['explain', ...at, '--team', 'forge', '--member', 'jack'],
    ['explain', ...at, '--team', 'forge', '--member', 'jack', '--json'],
    ['explain', ...at, '--team', 'forge', '--member', 'jack', '--since', '2026-11-22T10:00:30Z'],
    ['metrics', ...at, '--team', 'forge'],
    ['metrics', ...at, '--team', 'forge', '--json'],
    ['drain', ...at],
    ['drain', ...at, '--json'],
    ['hook-settings', ...at, '--provider', 'claude'],
    ['hook-settings', ...at, '--provider', 'codex'],
    ['env', ...at, '--provider', 'codex'],
    ['env', ...at, '--provider', 'opencode', '--json'],
  ]
}

describe('member-work-sync CLI output safety', () => {
  it('no command prints a report token or the token secret, in text or JSON, on a live example', async () => {
    const root = await exampleWithHistory()
    const secretFile = path.join(root, 'teams/forge/.member-work-sync/report-token-secret.json')
    const secret: string = readJson(secretFile).secret
    expect(secret.length).toBeGreaterThan(20)
    // The example is live: a token was issued and is stored where explain reads the status.
    const stored = listFiles(root).filter((f) => fs.readFileSync(path.join(root, f), 'utf8').includes('"reportToken": "wrs:v1.'))
    expect(stored.length).toBeGreaterThan(0)

    for (const args of everyCommand(root)) {
      const result = run(...args)
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0)
      expect(result.stdout.length).toBeGreaterThan(0)
      for (const output of [result.stdout, result.stderr]) {
        expect(output, args.join(' ')).not.toMatch(/wrs:v\d/)
        expect(output, args.join(' ')).not.toContain(secret)
      }
    }
  })

  it('escapes control characters from task subjects, roster names and task file names in every output', () => {
    const root = copyExampleRoot()
    const evil = 'ev\u001b[2Kil\u0007'
    const config = readJson(path.join(root, 'teams/forge/config.json'))
    config.members.push({ name: evil, agentType: 'general-purpose', model: 'sonnet' })
    writeJson(path.join(root, 'teams/forge/config.json'), config)
    // OSC 52 writes the clipboard; CSI 2K clears a line; U+009B is an 8-bit CSI; CR returns to the line start.
    const subject = 'clip \u001b]52;c;aGVsbG8=\u0007 then \u001b[2K\rwipe \u009b31m red\u007f'
    const task = readJson(path.join(root, 'tasks/forge/1.json'))
    writeJson(path.join(root, 'tasks/forge/1.json'), { ...task, subject })
    const badFile = '\u001b]52;c;aGk=\u0007bad.json'
    fs.writeFileSync(path.join(root, 'tasks/forge', badFile), '{broken')

    const outputs: string[] = []
    for (const args of [
      ['status', '--claude-root', root],
      ['status', '--claude-root', root, '--json'],
      ['explain', '--claude-root', root, '--team', 'forge', '--member', evil],
      ['explain', '--claude-root', root, '--team', 'forge', '--member', `${evil}x`],
      ['explain', '--claude-root', root, '--team', `forge\u001b[2J`, '--member', 'jack'],
      ['metrics', '--claude-root', root, '--team', 'forge'],
      ['status', '--claude-root', root, `--tem\u001b[2J`],
      [`stat\u009bus`],
    ]) {
      const result = run(...args)
      for (const output of [result.stdout, result.stderr]) {
        expect(output, args.join(' ')).not.toMatch(RAW_CONTROL)
        outputs.push(output)
      }
    }
    const all = outputs.join('\n')
    // Shown, not obeyed: each control as \xHH.
    expect(all.replace(/\n +/g, ' ')).toContain('clip \\x1b]52;c;aGVsbG8=\\x07 then \\x1b[2K\\x0dwipe \\x9b31m red\\x7f')
    expect(all).toMatch(/ev\\x1b\[2[kK]il\\x07 \(anthropic\): /)
    expect(all).toContain('task_file_invalid:\\x1b]52;c;aGk=\\x07bad.json')
    expect(all).toContain('team forge\\x1b[2J not found')
    expect(all).toContain('unknown option --tem\\x1b[2J')
    expect(all).toContain('unknown command stat\\x9bus')
    // JSON output stays JSON with the same values (C1 and DEL as \u escapes).
    const json = JSON.parse(run('status', '--claude-root', root, '--json').stdout)
    const subjects = json.teams[0].statuses.flatMap((s: any) => s.agenda.items.map((i: any) => i.subject))
    expect(subjects).toContain(subject)
  })
})
