'use strict'
// `npm start`: the product working on the bundled example team, step by step.
// Copies examples/claude-root into a temp dir (the example stays pristine),
// prints every member's status and agenda (the read-only
// `member-work-sync status`), then walks one member through the whole loop:
// Stop hook installed and run as Claude Code runs it, its payload drained and
// attributed, enough shadow history on a test clock for phase 2, a nudge
// planned and delivered into the member's inbox, the member's report accepted,
// and `explain`'s timeline of the member. Exits non-zero when a step
// does not produce what it should.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { formatExplainEntry, runStatus } = require('../../bin/member-work-sync.js')

const TEAM = 'forge'
/** The member whose turn settles: bob runs Claude Code (model `sonnet`). */
const MEMBER = 'bob'
/** The project folder bob's Claude session works in. */
const PROJECT = '/home/demo/forge-app'
/** The session id of bob's Claude Code session. */
const SESSION = 'demo-session-bob'
/** How far the test clock moves per shadow round (inside the 15 min still_working lease). */
const ROUND_MS = 10 * 60_000
/** Shadow rounds after which the demo gives up waiting for phase 2. */
const MAX_ROUNDS = 12

/** A step that did not produce what it should: the demo stops with exit 1. */
class StepFailed extends Error {}

function expectThat(condition, message) {
  if (!condition) throw new StepFailed(message)
}

let stepNumber = 0
function step(title) {
  stepNumber += 1
  console.log(`\n== Step ${stepNumber}: ${title}`)
}

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'))
}

/** Claude Code's project folder name: the cwd with every `/` and `.` as `-`. */
function encodeProjectDir(cwd) {
  return cwd.replace(/[/.]/g, '-')
}

/**
 * bob's session transcript, the file the hook payload points at, and the
 * team's project folder in its config (Claude Code records both when the team
 * is launched): the session is attributed by its transcript naming the team
 * and member, inside the team's project.
 */
function writeTranscript(claudeRoot) {
  const configFile = path.join(claudeRoot, 'teams', TEAM, 'config.json')
  fs.writeFileSync(configFile, JSON.stringify({ ...readJson(configFile), projectPath: PROJECT }, null, 2))
  const projectDir = path.join(claudeRoot, 'projects', encodeProjectDir(PROJECT))
  fs.mkdirSync(projectDir, { recursive: true })
  const transcript = path.join(projectDir, `${SESSION}.jsonl`)
  const line = { type: 'user', sessionId: SESSION, teamName: TEAM, agentName: MEMBER, cwd: PROJECT, message: { role: 'user', content: 'Start task 3' } }
  fs.writeFileSync(transcript, JSON.stringify(line) + '\n')
  return transcript
}

/** Runs the hook command exactly as Claude Code does: `sh -c "<command>"`, the Stop payload on stdin. */
function runStopHook(command, transcript, turn) {
  const payload = { hook_event_name: 'Stop', session_id: SESSION, transcript_path: transcript, cwd: PROJECT, stop_hook_active: false, last_assistant_message: `turn ${turn} done` }
  const out = spawnSync('sh', ['-c', command], { input: JSON.stringify(payload), timeout: 10_000 })
  expectThat(out.status === 0, `the Stop hook exited with ${out.status}: ${String(out.stderr)}`)
}

async function until(probe, what) {
  for (let i = 0; i < 400; i++) {
    const value = probe()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new StepFailed(`timed out waiting for ${what}`)
}

/** Drains the spool and waits for the `member-turn-settled` event it announces. */
async function drainOne(sync, events) {
  const before = events.length
  const summary = await sync.drainRuntimeTurnSettledEvents()
  expectThat(summary.claimed === 1 && summary.enqueued === 1, `the drain should claim and attribute 1 payload: ${JSON.stringify(summary)}`)
  const event = await until(() => events[before], 'the member-turn-settled event')
  return { summary, detail: JSON.parse(event.detail) }
}

function memberStore(claudeRoot) {
  return path.join(claudeRoot, 'teams', TEAM, 'members', MEMBER, '.member-work-sync')
}

/**
 * `explain`: bob's timeline as `member-work-sync explain` prints it (date and
 * time, UTC; lines of at most 100 columns); a reconcile's steps collapse into
 * its outcome, repeats into a count.
 */
async function printExplanation(sync) {
  const explanation = await sync.explain({ teamName: TEAM, memberName: MEMBER })
  console.log(`explain ${TEAM}/${MEMBER}: ${explanation.entries.length} entries (journal, outbox, status), oldest first, UTC:`)
  const quiet = new Set(['reconcile_started', 'agenda_loaded', 'decision_made'])
  let repeated = 0
  let previous = ''
  const flush = () => {
    if (repeated > 0) console.log(`${''.padEnd(21)}(${repeated} more like it)`)
    repeated = 0
  }
  for (const entry of explanation.entries) {
    if (quiet.has(entry.kind)) continue
    const text = `${entry.kind} ${entry.sentence}`
    if (text === previous) {
      repeated += 1
      continue
    }
    flush()
    previous = text
    console.log(formatExplainEntry(entry))
  }
  flush()
  if (explanation.diagnostics.length > 0) console.log(`  diagnostics: ${explanation.diagnostics.join(', ')}`)
}

async function main() {
  const started = Date.now()
  const claudeRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'member-work-sync-example-'))
  fs.cpSync(path.join(__dirname, '..', '..', 'examples', 'claude-root'), claudeRoot, { recursive: true })
  console.log(`Example Claude root copied to ${claudeRoot}\n`)
  const { stdout, stderr, exitCode } = await runStatus({ claudeRoot, json: false })
  console.log(stdout)
  if (stderr) console.error(stderr)
  if (exitCode !== 0) {
    process.exitCode = exitCode
    return
  }

  const { MemberWorkSync } = require('../..')
  let nowMs = Date.parse('2026-11-22T10:00:00.000Z')
  const events = []
  const sync = new MemberWorkSync({ claudeRoot, clock: { nowMs }, autoStart: false, onTeamChange: (e) => events.push(e) })
  try {
    step('install the Claude Code Stop hook')
    const settings = await sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
    const command = settings.hooks.Stop[0].hooks[0].command
    const settingsFile = path.join(claudeRoot, 'settings.json')
    fs.writeFileSync(settingsFile, JSON.stringify(settings, null, 2) + '\n')
    console.log(`hook installed: ${path.relative(claudeRoot, settingsFile)} runs on every Stop:`)
    console.log(`  ${command}`)

    step(`${MEMBER}'s turn ends: Claude Code runs the hook`)
    const roster = readJson(path.join(claudeRoot, 'teams', TEAM, 'config.json')).members.map((m) => m.name)
    sync.setTeamRuntimeState(TEAM, { active: true, activeMembers: roster })
    console.log(`team ${TEAM} marked running with ${roster.join(', ')}`)
    // A plain work item next to bob's review pickup: review pickups may be
    // nudged before phase 2, ordinary agenda syncs only after it.
    const taskFile = path.join(claudeRoot, 'tasks', TEAM, '12.json')
    fs.writeFileSync(taskFile, JSON.stringify({ ...readJson(taskFile), owner: MEMBER }, null, 2))
    console.log(`board change: task #12 handed from kim to ${MEMBER}`)
    const transcript = writeTranscript(claudeRoot)
    runStopHook(command, transcript, 1)
    const incoming = path.join(claudeRoot, 'teams', '.member-work-sync', 'runtime-hooks', 'incoming')
    console.log(`Stop payload for session ${SESSION} spooled (${fs.readdirSync(incoming).length} file in incoming/)`)

    step('drain the spool and reconcile the member')
    const first = await drainOne(sync, events)
    console.log(`event drained and attributed: session ${SESSION} -> ${TEAM}/${first.detail.memberName} (${first.detail.provider}), ${JSON.stringify(first.summary)}`)
    const reconciled = readJson(path.join(memberStore(claudeRoot), 'status.json')).status
    console.log(`${MEMBER} reconciled by ${reconciled.shadow.triggerReasons.join(', ')}: ${reconciled.state}, ${reconciled.agenda.items.length} actionable item(s), would nudge: ${reconciled.shadow.wouldNudge}`)

    step('collect shadow history on a test clock until phase 2 is ready')
    let readiness = (await sync.getMetrics({ teamName: TEAM })).phase2Readiness
    console.log(`phase 2: ${readiness.state} (${readiness.reasons.join(', ')})`)
    for (let round = 1; readiness.state !== 'shadow_ready'; round++) {
      expectThat(round <= MAX_ROUNDS, `phase 2 not ready after ${MAX_ROUNDS} rounds: ${JSON.stringify(readiness)}`)
      nowMs += ROUND_MS
      sync.setClockForTesting(nowMs)
      // Everyone but bob answers every status with a report, as working
      // members do (renewing the still_working lease); bob stays silent, so
      // his agenda keeps waiting for him.
      const reported = []
      for (const status of await sync.refreshTeam({ teamName: TEAM })) {
        if (status.memberName === MEMBER || status.agenda.items.length === 0 || !status.reportToken) continue
        const answer = await sync.report({ teamName: TEAM, memberName: status.memberName, state: 'still_working', agendaFingerprint: status.agenda.fingerprint, reportToken: status.reportToken })
        if (answer.accepted) reported.push(status.memberName)
      }
      readiness = (await sync.getMetrics({ teamName: TEAM })).phase2Readiness
      const why = readiness.reasons.length > 0 ? ` (${readiness.reasons.join(', ')})` : ''
      const answered = reported.length > 0 ? `, ${reported.join(', ')} reported still_working` : ''
      console.log(`  +${(round * ROUND_MS) / 60_000} min: every member reconciled${answered}; phase 2: ${readiness.state}${why}`)
    }
    console.log('phase 2 ready: nudges may now be delivered')

    step(`${MEMBER}'s next turn ends: a nudge is planned and delivered`)
    runStopHook(command, transcript, 2)
    const second = await drainOne(sync, events)
    console.log(`event drained and attributed: ${TEAM}/${second.detail.memberName}`)
    const outbox = readJson(path.join(memberStore(claudeRoot), 'outbox.json'))
    const planned = Object.values(outbox.items)
    expectThat(planned.length === 1, `one nudge should be planned: ${JSON.stringify(outbox)}`)
    console.log(`nudge planned: ${planned[0].id} (${planned[0].status})`)
    const dispatch = await sync.dispatchDueNudges([TEAM])
    expectThat(dispatch.delivered === 1, `one nudge should be delivered: ${JSON.stringify(dispatch)}`)
    const inbox = readJson(path.join(claudeRoot, 'teams', TEAM, 'inboxes', `${MEMBER}.json`))
    const nudge = inbox.find((row) => row.messageKind === 'member_work_sync_nudge')
    expectThat(nudge, `the nudge should be in ${MEMBER}'s inbox`)
    console.log(`nudge delivered to teams/${TEAM}/inboxes/${MEMBER}.json (tasks ${nudge.taskRefs.map((r) => r.taskId).join(', ')}):`)
    for (const line of String(nudge.text).split('\n').slice(0, 6)) console.log(`  | ${line}`)

    step(`${MEMBER} reports back with the issued token`)
    const status = await sync.getStatus({ teamName: TEAM, memberName: MEMBER })
    const result = await sync.report({ teamName: TEAM, memberName: MEMBER, state: 'still_working', agendaFingerprint: status.agenda.fingerprint, reportToken: status.reportToken, note: 'on it' })
    expectThat(result.accepted, `the report should be accepted: ${JSON.stringify(result)}`)
    const after = await sync.getStatus({ teamName: TEAM, memberName: MEMBER })
    console.log(`report accepted: ${MEMBER} is ${after.state} until ${after.report.expiresAt}`)

    step(`what happened to ${MEMBER}`)
    await printExplanation(sync)
    console.log(`\nDone in ${((Date.now() - started) / 1000).toFixed(1)} s. Files left in ${claudeRoot}`)
  } finally {
    await sync.dispose()
  }
}

main().catch((error) => {
  console.error(error instanceof StepFailed ? `npm start: step ${stepNumber} failed: ${error.message}` : error)
  process.exit(1)
})
