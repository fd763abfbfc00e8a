import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { MemberWorkSync, mergeRuntimeHookSettings, TURN_SETTLED_HOOK_MARKER } from '../index.js'
import type { TeamChangeEvent } from '../index.js'
import { copyExampleRoot, readJson, tempDir, writeJson } from './helpers'

const NOW = Date.parse('2026-11-22T10:00:00.000Z')
const PROJECT = '/home/u/proj'

/** The example team plus a Claude project with a transcript attributed to bob. */
function claudeRoot(): string {
  const root = copyExampleRoot()
  const configFile = path.join(root, 'teams/forge/config.json')
  writeJson(configFile, { ...readJson(configFile), projectPath: PROJECT, leadSessionId: 'L1' })
  const projectDir = path.join(root, 'projects/-home-u-proj')
  fs.mkdirSync(projectDir, { recursive: true })
  fs.writeFileSync(path.join(projectDir, 'L1.jsonl'), '{"teamName":"forge","agentName":"team-lead"}\n')
  const line = {
    type: 'user',
    sessionId: 'B1',
    teamName: 'forge',
    agentName: 'bob',
    cwd: PROJECT,
    message: { role: 'user', content: 'Start task 3' },
  }
  fs.writeFileSync(path.join(projectDir, 'B1.jsonl'), JSON.stringify(line) + '\n')
  return root
}

function instance(root: string, onTeamChange?: (event: TeamChangeEvent) => void) {
  return new MemberWorkSync({ claudeRoot: root, clock: { nowMs: NOW }, autoStart: false, onTeamChange })
}

function spool(root: string): string {
  return path.join(root, 'teams/.member-work-sync/runtime-hooks')
}

/** Runs a hook command exactly as Claude Code does: `sh -c "<command>"`, payload on stdin. */
function runHookCommand(command: string, payload: string | Buffer) {
  const out = spawnSync('sh', ['-c', command], { input: payload })
  expect(out.status).toBe(0)
  expect(out.stdout.length + out.stderr.length).toBe(0)
}

async function until(check: () => boolean) {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 5))
}

function mode(file: string): number {
  return fs.statSync(file).mode & 0o777
}

describe('runtime turn-settled pipeline', () => {
  it('settings -> the Stop hook as Claude runs it -> drain -> member reconciled and event emitted', async () => {
    const root = claudeRoot()
    const events: TeamChangeEvent[] = []
    const sync = instance(root, (e) => events.push(e))

    const settings: any = await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
    const stop = settings.hooks.Stop
    expect(stop).toHaveLength(1)
    expect(stop[0].matcher).toBe('')
    const command: string = stop[0].hooks[0].command
    expect(stop[0].hooks[0].type).toBe('command')
    expect(command.endsWith(`# ${TURN_SETTLED_HOOK_MARKER}`)).toBe(true)
    expect(command).toContain(`'${spool(root)}' 'claude' '262144'`)
    expect(command).not.toMatch(/forge|bob/)
    const script = path.join(spool(root), 'bin/turn-settled-hook-v1.sh')
    expect(fs.readFileSync(script, 'utf8')).toBe(
      fs.readFileSync(path.join(__dirname, '..', 'hooks/turn-settled-hook-v1.sh'), 'utf8'),
    )
    expect(mode(script)).toBe(0o755)
    // `npm run build` puts the native hook beside the addon: the command runs
    // the copy installed beside the script, directly, with the same arguments.
    const executable = path.join(spool(root), 'bin/turn-settled-hook-v1')
    expect(command).toBe(`'${executable}' '${spool(root)}' 'claude' '262144' # ${TURN_SETTLED_HOOK_MARKER}`)
    expect(fs.readFileSync(executable)).toEqual(fs.readFileSync(path.join(__dirname, '..', 'turn-settled-hook-v1')))
    expect(mode(executable)).toBe(0o755)
    for (const dir of ['incoming', 'processing', 'processed', 'invalid']) {
      expect(mode(path.join(spool(root), dir))).toBe(0o700)
    }

    const payload = {
      hook_event_name: 'Stop',
      session_id: 'B1',
      transcript_path: path.join(root, 'projects/-home-u-proj/B1.jsonl'),
      cwd: PROJECT,
      last_assistant_message: 'PRIVATE ASSISTANT TEXT',
    }
    runHookCommand(command, JSON.stringify(payload))
    expect(fs.readdirSync(path.join(spool(root), 'incoming'))).toHaveLength(1)

    const summary = await sync.drainRuntimeTurnSettledEvents()
    expect(summary).toEqual({ claimed: 1, enqueued: 1, unresolved: 0, ignored: 0, invalid: 0, failed: 0 })

    const status = readJson(path.join(root, 'teams/forge/members/bob/.member-work-sync/status.json')).status
    expect(status.shadow.reconciledBy).toBe('queue')
    expect(status.shadow.triggerReasons).toEqual(['turn_settled'])

    await until(() => events.length > 0)
    expect(events).toHaveLength(1)
    expect(events[0].type).toBe('member-turn-settled')
    expect(events[0].teamName).toBe('forge')
    const detail = JSON.parse(events[0].detail!)
    expect(detail.memberName).toBe('bob')
    expect(detail.provider).toBe('claude')
    expect(detail.sourceId).toMatch(/^runtime-turn-settled:claude:B1:no-turn:.*B1\.jsonl:[0-9a-f]{64}$/)

    const processed = fs.readdirSync(path.join(spool(root), 'processed')).sort()
    expect(processed).toHaveLength(2)
    const meta = readJson(path.join(spool(root), 'processed', processed[1]))
    expect(meta).toMatchObject({ outcome: 'enqueued', teamName: 'forge', memberName: 'bob' })
    expect(meta.event.sourceId).toBe(detail.sourceId)
    expect(JSON.stringify(meta)).not.toContain('PRIVATE')

    // Relaunch: the same settings again; nothing left to drain.
    expect(await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })).toEqual(settings)
    expect((await sync.drainRuntimeTurnSettledEvents()).claimed).toBe(0)
  })

  it('a real Stop payload with an answer over 256 KiB still wakes its member, marked truncated, without the text', async () => {
    const root = claudeRoot()
    const real = readJson(path.join(__dirname, '..', 'tests/fixtures/payloads/real-claude-stop-payload.json'))
    // The real session, attributed to bob by his transcript.
    const line = { type: 'user', sessionId: real.session_id, teamName: 'forge', agentName: 'bob', cwd: PROJECT }
    fs.writeFileSync(path.join(root, `projects/-home-u-proj/${real.session_id}.jsonl`), JSON.stringify(line) + '\n')
    const events: TeamChangeEvent[] = []
    const sync = instance(root, (e) => events.push(e))
    const settings: any = await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
    const long = { ...real, last_assistant_message: 'PRIVATE ANSWER ' + 'x'.repeat(300 * 1024) }
    runHookCommand(settings.hooks.Stop[0].hooks[0].command, JSON.stringify(long))
    const [spooled] = fs.readdirSync(path.join(spool(root), 'incoming'))
    // At least 256 KiB + 1 byte is kept (the drainer reads that much): exactly
    // that by the executable, up to whole 512-byte blocks of the file size
    // limit by the script.
    const kept = fs.statSync(path.join(spool(root), 'incoming', spooled)).size
    expect(kept).toBeGreaterThanOrEqual(262_145)
    expect(kept).toBeLessThanOrEqual(262_656)

    expect(await sync.drainRuntimeTurnSettledEvents()).toEqual({ claimed: 1, enqueued: 1, unresolved: 0, ignored: 0, invalid: 0, failed: 0 })
    await until(() => events.length > 0)
    expect(JSON.parse(events[0].detail!).memberName).toBe('bob')
    const meta = readJson(path.join(spool(root), 'processed', `${spooled}.meta.json`))
    expect(meta).toMatchObject({ outcome: 'enqueued', memberName: 'bob' })
    expect(meta.event).toMatchObject({ truncated: true, sessionId: real.session_id, transcriptPath: real.transcript_path, cwd: real.cwd })
    expect(JSON.stringify(meta)).not.toContain('PRIVATE')
  })

  it('native codex Stop payloads: hook overrides, then attribution by launch state or session log', async () => {
    const root = claudeRoot()
    const codexHome = tempDir('mws-codex-home-')
    const previous = process.env.CODEX_HOME
    process.env.CODEX_HOME = codexHome
    const sync = instance(root)
    if (previous === undefined) delete process.env.CODEX_HOME
    else process.env.CODEX_HOME = previous

    const settings: any = await sync.buildRuntimeTurnSettledHookSettings({ provider: 'codex' })
    const [stop, trust] = settings.config_overrides
    expect(settings.config_overrides).toHaveLength(2)
    const command = JSON.parse(/command=("(?:[^"\\]|\\.)*")/.exec(stop)![1])
    expect(command).toContain(`'${spool(root)}' 'codex' '262144' # ${TURN_SETTLED_HOOK_MARKER}`)
    expect(stop).toBe(`hooks.Stop=[{hooks=[{type="command",command=${JSON.stringify(command)},timeout=30}]}]`)
    const identity = JSON.stringify({ event_name: 'stop', hooks: [{ async: false, command, timeout: 30, type: 'command' }] })
    const hash = createHash('sha256').update(identity).digest('hex')
    expect(trust).toBe(`hooks.state={"/<session-flags>/config.toml:stop:0:0"={trusted_hash="sha256:${hash}"}}`)
    // Relaunching with the merge keeps one managed hook and the user's overrides.
    // An older managed hook (another program path) gives way to this one.
    const older = stop.replace('command="', 'command="/usr/bin/env sh /old')
    expect(older).not.toBe(stop)
    const merged: any = mergeRuntimeHookSettings({ config_overrides: ['model="o3"', older] }, settings)
    expect(merged.config_overrides).toEqual(['model="o3"', stop, trust])

    // The real payload and session log shapes (tests/fixtures).
    const fixtures = path.join(__dirname, '..', 'tests/fixtures')
    const realPayload = readJson(path.join(fixtures, 'payloads/real-codex-stop-payload.json'))
    const logName = 'rollout-2026-11-23T15-50-35-01a2091a-18f5-7b02-aa65-a14af49b3513.jsonl'
    const realLog = fs.readFileSync(path.join(fixtures, 'codex', logName), 'utf8')
    const logDir = path.join(codexHome, 'sessions/2026/11/23')
    fs.mkdirSync(logDir, { recursive: true })
    // jack's launch prompt names him in his session log.
    const jackSession = '01a2091a-18f5-7b02-aa65-a14af49b3513'
    fs.writeFileSync(path.join(logDir, logName), realLog.replace('You are alice, a developer on team \\"Forge Team\\" (forge)', 'You are jack, a developer on team \\"Forge Team\\" (forge)'))
    // A second codex member, found by its launch-state session id.
    const configFile = path.join(root, 'teams/forge/config.json')
    const config = readJson(configFile)
    writeJson(configFile, { ...config, members: [...config.members, { name: 'nia', model: 'gpt-5-codex' }] })
    writeJson(path.join(root, 'teams/forge/launch-state.json'), { teamName: 'forge', members: { nia: { runtimeSessionId: 'N1' } } })
    // A log outside CODEX_HOME/sessions is never read, whatever it says.
    const outside = path.join(root, logName)
    fs.writeFileSync(outside, realLog.replace('alice', 'jack'))

    const payload = (fields: object) => JSON.stringify({ ...realPayload, ...fields })
    const hook = (body: string) => runHookCommand(command, body)
    hook(payload({ session_id: jackSession, transcript_path: path.join(logDir, logName) }))
    hook(payload({ session_id: 'N1', transcript_path: path.join(logDir, 'rollout-x-N1.jsonl') }))
    hook(payload({ session_id: jackSession, transcript_path: outside }))
    hook(payload({ session_id: 'Z9', transcript_path: path.join(logDir, logName) }))

    const summary = await sync.drainRuntimeTurnSettledEvents()
    expect(summary).toEqual({ claimed: 4, enqueued: 2, unresolved: 2, ignored: 0, invalid: 0, failed: 0 })
    const processed = path.join(spool(root), 'processed')
    const metas = fs
      .readdirSync(processed)
      .filter((n) => n.endsWith('.meta.json'))
      .map((n) => readJson(path.join(processed, n)))
    const outcomes = metas.map((m) => [m.event.sessionId, m.outcome, m.memberName ?? m.reason]).sort()
    expect(outcomes).toEqual([
      [jackSession, 'enqueued', 'jack'],
      [jackSession, 'unresolved', 'no_matching_member_session'],
      ['N1', 'enqueued', 'nia'],
      ['Z9', 'unresolved', 'no_matching_member_session'],
    ])
    expect(JSON.stringify(metas)).not.toContain('hi from fake openai')
    expect(metas.every((m) => m.event.provider === 'codex' && m.event.teamName === undefined)).toBe(true)
    const journal = fs.readFileSync(path.join(root, 'teams/forge/members/nia/.member-work-sync/journal.jsonl'), 'utf8')
    expect(journal).toContain('turn_settled_resolved')
  })

  it('codex and opencode identities are checked against the roster; bad payloads go to invalid/', async () => {
    const root = claudeRoot()
    const events: TeamChangeEvent[] = []
    const sync = instance(root, (e) => events.push(e))
    const env: any = await sync.buildRuntimeTurnSettledEnvironment({ provider: 'codex' })
    expect(env).toEqual({ AGENT_TEAMS_RUNTIME_TURN_SETTLED_SPOOL_ROOT: spool(root) })
    expect(await sync.buildRuntimeTurnSettledEnvironment({ provider: 'claude' })).toBeNull()
    expect(await sync.buildRuntimeTurnSettledHookSettings({ provider: 'opencode' })).toBeNull()

    const script = path.join(env.AGENT_TEAMS_RUNTIME_TURN_SETTLED_SPOOL_ROOT, 'bin/turn-settled-hook-v1.sh')
    const hook = (provider: string, payload: string | Buffer) => {
      const out = spawnSync('sh', [script, spool(root), provider, '262144'], { input: payload })
      expect(out.status).toBe(0)
    }
    const codex = { provider: 'codex', source: 'agent-teams-orchestrator-codex-native', eventName: 'runtime_turn_settled' }
    hook('codex', JSON.stringify({ ...codex, sessionId: 'c1', teamName: 'forge', memberName: 'jack', threadId: 'th' }))
    const opencode = { provider: 'opencode', source: 'agent-teams-orchestrator-opencode', eventName: 'runtime_turn_settled' }
    hook('opencode', JSON.stringify({ ...opencode, sessionId: 'o1', teamName: 'forge', memberName: 'team-lead', promptMessageId: 'm1' }))
    hook('opencode', JSON.stringify({ ...opencode, sessionId: 'o2', teamName: 'forge', memberName: 'old-timer', promptMessageId: 'm2' }))
    hook('codex', JSON.stringify({ ...codex, sessionId: 'c2', teamName: 'forge', memberName: 'bob' }))
    // The lead's own Claude turn, and a session no member has.
    hook('claude', JSON.stringify({ hook_event_name: 'Stop', session_id: 'L1' }))
    hook('claude', JSON.stringify({ hook_event_name: 'Stop', session_id: 'Z9' }))
    hook('claude', Buffer.alloc(300 * 1024, 0x61))
    hook('codex', '{"provider": "codex"')

    const summary = await sync.drainRuntimeTurnSettledEvents()
    // As the app's resolver: a lead's provider-owned turn is checked like any
    // member's (the lead here runs Claude: a mismatch), a removed member is
    // not active; only the lead's own Claude turn is ignored.
    expect(summary).toEqual({ claimed: 8, enqueued: 1, unresolved: 4, ignored: 1, invalid: 2, failed: 0 })
    const reasons = (dir: string) =>
      fs
        .readdirSync(path.join(spool(root), dir))
        .filter((n) => n.endsWith('.meta.json'))
        .map((n) => readJson(path.join(spool(root), dir, n)))
        .map((m) => m.reason ?? m.outcome)
        .sort()
    expect(reasons('invalid')).toEqual(['invalid_json', 'payload_too_large'])
    expect(reasons('processed')).toEqual([
      'enqueued',
      'ignored_lead_turn_settled',
      'member_not_active',
      'no_matching_member_session',
      'provider_mismatch',
      'provider_mismatch',
    ])
    expect(fs.existsSync(path.join(root, 'teams/forge/members/jack/.member-work-sync/status.json'))).toBe(true)
    // The member's journal shows the claim, then the outcome; outcomes that
    // queue nothing are journaled too, for the named member of an existing team.
    const journal = (member: string) =>
      fs
        .readFileSync(path.join(root, `teams/forge/members/${member}/.member-work-sync/journal.jsonl`), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
        .filter((e) => e.event.startsWith('turn_settled_'))
    const outcomes = (member: string) => journal(member).map((e) => [e.event, e.reason])
    // The claim's reason is the provider, and so is a resolved outcome's.
    expect(outcomes('jack')).toEqual([
      ['turn_settled_claimed', 'codex'],
      ['turn_settled_resolved', 'codex'],
    ])
    expect(journal('jack')[0].metadata.spoolFile).toMatch(/^\d{8}T\d{6}Z-\d+-\d+\.codex\.json$/)
    expect(outcomes('bob')).toEqual([
      ['turn_settled_claimed', 'codex'],
      ['turn_settled_unresolved', 'provider_mismatch'],
    ])
    // (in spool name order, whatever the order of the pids: compared sorted)
    expect(outcomes('team-lead').map((o) => o.join(' ')).sort()).toEqual([
      'turn_settled_claimed claude',
      'turn_settled_claimed opencode',
      'turn_settled_ignored ignored_lead_turn_settled',
      'turn_settled_unresolved provider_mismatch',
    ])
    // (in spool name order; the providers, whatever the order of the pids)
    expect(journal('team-lead').map((e) => e.metadata.provider).sort()).toEqual(['claude', 'claude', 'opencode', 'opencode'])
    expect(outcomes('old-timer')).toEqual([
      ['turn_settled_claimed', 'opencode'],
      ['turn_settled_unresolved', 'member_not_active'],
    ])
    await until(() => events.length > 0)
    expect(events.map((e) => JSON.parse(e.detail!).memberName)).toEqual(['jack'])
  })

  it('a Claude turn attributed to a member it cannot be queued for is journaled for that member', async () => {
    const root = claudeRoot()
    // jack runs Codex (gpt-5-codex), yet a Claude transcript names him.
    const line = { type: 'user', sessionId: 'J1', teamName: 'forge', agentName: 'jack', cwd: PROJECT }
    fs.writeFileSync(path.join(root, 'projects/-home-u-proj/J1.jsonl'), JSON.stringify(line) + '\n')
    const sync = instance(root)
    const settings: any = await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
    runHookCommand(settings.hooks.Stop[0].hooks[0].command, JSON.stringify({ hook_event_name: 'Stop', session_id: 'J1', cwd: PROJECT }))

    expect(await sync.drainRuntimeTurnSettledEvents()).toEqual({ claimed: 1, enqueued: 0, unresolved: 1, ignored: 0, invalid: 0, failed: 0 })
    const journal = fs
      .readFileSync(path.join(root, 'teams/forge/members/jack/.member-work-sync/journal.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(journal.map((e) => [e.event, e.reason])).toEqual([
      ['turn_settled_claimed', 'claude'],
      ['turn_settled_unresolved', 'provider_mismatch'],
    ])
    expect(fs.existsSync(path.join(root, 'teams/forge/members/jack/.member-work-sync/status.json'))).toBe(false)
  })

  it('a member-turn-settled event the app forwards back into noteTeamChange queues nothing more', async () => {
    const root = claudeRoot()
    const forwarded: TeamChangeEvent[] = []
    const sync: MemberWorkSync = instance(root, (e) => {
      forwarded.push(e)
      // As the reference app does with every team change.
      sync.noteTeamChange(e)
    })
    const settings: any = await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
    runHookCommand(settings.hooks.Stop[0].hooks[0].command, JSON.stringify({ hook_event_name: 'Stop', session_id: 'B1' }))
    // autoStart: false, so the drain has reconciled bob already.
    expect((await sync.drainRuntimeTurnSettledEvents()).enqueued).toBe(1)
    await until(() => forwarded.length > 0)
    expect(forwarded.map((e) => e.type)).toEqual(['member-turn-settled'])

    // Events are routed one by one in order: once this later one is queued,
    // the forwarded one has been routed too.
    const queuedMembers = () => sync.getQueueDiagnostics().queuedItems.map((i) => [i.memberName, i.triggerReasons])
    sync.noteTeamChange({ type: 'member-spawn', teamName: 'forge', detail: 'jack' })
    for (let i = 0; i < 2000 && queuedMembers().length === 0; i++) await new Promise((r) => setTimeout(r, 5))
    expect(queuedMembers()).toEqual([['jack', ['member_spawned']]])
    expect(sync.getQueueDiagnostics()).toMatchObject({ enqueued: 1, coalesced: 0 })

    // A turn the addon did not announce is still routed.
    const foreign = JSON.stringify({ memberName: 'bob', provider: 'claude', sourceId: 'runtime-turn-settled:other' })
    sync.noteTeamChange({ type: 'member-turn-settled', teamName: 'forge', detail: foreign })
    for (let i = 0; i < 2000 && queuedMembers().length === 1; i++) await new Promise((r) => setTimeout(r, 5))
    expect(queuedMembers()).toContainEqual(['bob', ['turn_settled']])
    await sync.dispose()
  })

  it('a throwing onTeamChange listener breaks neither the drain nor the process', async () => {
    const root = claudeRoot()
    let calls = 0
    const uncaught: unknown[] = []
    const onUncaught = (e: unknown) => uncaught.push(e)
    process.on('uncaughtException', onUncaught)
    try {
      const sync = instance(root, () => {
        calls++
        throw new Error('listener bug')
      })
      const settings: any = await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
      const payload = JSON.stringify({ hook_event_name: 'Stop', session_id: 'B1' })
      runHookCommand(settings.hooks.Stop[0].hooks[0].command, payload)
      expect((await sync.drainRuntimeTurnSettledEvents()).enqueued).toBe(1)
      await until(() => calls === 1)
      runHookCommand(settings.hooks.Stop[0].hooks[0].command, payload.replace('}', ',"turn_id":"t2"}'))
      expect((await sync.drainRuntimeTurnSettledEvents()).enqueued).toBe(1)
      await until(() => calls === 2)
      expect(calls).toBe(2)
      expect(uncaught).toEqual([])
    } finally {
      process.off('uncaughtException', onUncaught)
    }
  })

  it('installs the script 0755 and the spool dirs 0700 under a strict umask', async () => {
    const root = claudeRoot()
    const previous = process.umask(0o077)
    try {
      await instance(root).buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
    } finally {
      process.umask(previous)
    }
    expect(mode(path.join(spool(root), 'bin/turn-settled-hook-v1.sh'))).toBe(0o755)
    for (const dir of ['incoming', 'processing', 'processed', 'invalid']) {
      expect(mode(path.join(spool(root), dir))).toBe(0o700)
    }
  })

  it('launch goes on without the hook when the spool cannot be installed', async () => {
    const dir = tempDir('mws-ts-')
    const notADir = path.join(dir, 'file')
    fs.writeFileSync(notADir, '')
    const sync = new MemberWorkSync({ claudeRoot: dir, teamsBasePath: notADir, autoStart: false })
    expect(await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })).toBeNull()
    expect(await sync.buildRuntimeTurnSettledEnvironment({ provider: 'opencode' })).toBeNull()
    await expect(sync.buildRuntimeTurnSettledHookSettings({ provider: 'gemini' } as any)).rejects.toMatchObject({
      code: 'MWS_INVALID_ARGUMENT',
    })
  })
})

describe('mergeRuntimeHookSettings', () => {
  const ours = (script: string) => ({
    hooks: {
      Stop: [
        {
          matcher: '',
          hooks: [{ type: 'command', command: `/bin/sh '${script}' '/s' 'claude' '262144' # ${TURN_SETTLED_HOOK_MARKER}` }],
        },
      ],
    },
  })
  const user = { matcher: '', hooks: [{ type: 'command', command: 'echo mine' }] }

  it('keeps user hooks and fast mode, holds exactly one managed hook, and is idempotent', () => {
    const base = { fastMode: true, hooks: { Stop: [user], PreToolUse: [user] } }
    const once = mergeRuntimeHookSettings(base, ours('/v1.sh')) as any
    const again = mergeRuntimeHookSettings(once, ours('/v2.sh')) as any
    expect(mergeRuntimeHookSettings(again, ours('/v2.sh'))).toEqual(again)
    expect(again.fastMode).toBe(true)
    expect(again.hooks.PreToolUse).toEqual([user])
    expect(again.hooks.Stop).toHaveLength(2)
    expect(again.hooks.Stop[0]).toEqual(user)
    expect(again.hooks.Stop[1].hooks[0].command).toContain('/v2.sh')
    expect(base.hooks.Stop).toEqual([user])
  })

  it('rejects non-objects with MWS_INVALID_ARGUMENT and never throws on odd objects', () => {
    for (const bad of [null, [], 'x', 1]) {
      expect(() => mergeRuntimeHookSettings(bad as any, {})).toThrow(expect.objectContaining({ code: 'MWS_INVALID_ARGUMENT' }))
    }
    const odd = [{ hooks: 'x' }, { hooks: { Stop: 5 } }, { hooks: { Stop: [null, 1, { hooks: 'no' }] } }, { a: { b: [1, { c: null }] } }]
    for (const base of odd) {
      for (const patch of odd) {
        const once = mergeRuntimeHookSettings(base, patch)
        expect(mergeRuntimeHookSettings(once, patch)).toEqual(once)
      }
      const merged = mergeRuntimeHookSettings(base, ours('/x.sh')) as any
      if (Array.isArray(base.hooks?.Stop)) expect(merged.hooks.Stop.slice(0, 3)).toEqual(base.hooks.Stop)
      // A `hooks` or Stop value of the wrong type gives way: the managed hook is installed.
      else expect(merged.hooks.Stop).toEqual(ours('/x.sh').hooks.Stop)
    }
  })

  it("keeps the user's key order and joins config_overrides without duplicates", () => {
    const base = { zeta: 1, hooks: { PreToolUse: [user] }, config_overrides: ['b="1"', 'a="2"'], alpha: true }
    const merged = mergeRuntimeHookSettings(base, { ...ours('/x.sh'), config_overrides: ['a="2"', 'c="3"'], beta: 2 }) as any
    expect(Object.keys(merged)).toEqual(['zeta', 'hooks', 'config_overrides', 'alpha', 'beta'])
    expect(Object.keys(merged.hooks)).toEqual(['PreToolUse', 'Stop'])
    expect(merged.config_overrides).toEqual(['b="1"', 'a="2"', 'c="3"'])
  })
})
