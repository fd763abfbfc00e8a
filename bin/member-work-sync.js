#!/usr/bin/env node
'use strict'
// CLI: `member-work-sync <command> ...` (see USAGE).
// `status`, `explain` and `metrics` only read: they go through the addon's
// side-effect-free `previewTeam`, `explain` and `previewMetrics` and write, move
// or create nothing under the Claude root (no journal line, no metric event,
// no report token). `drain` and `hook-settings` write: they install the
// turn-settled spool and drain it. `watch` shows the same as `status`, live,
// with phase-2 readiness and the app's queue, read-only too (bin/watch.js).

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const USAGE = `usage: member-work-sync status [--claude-root DIR] [--team NAME] [--json]
       member-work-sync explain --team NAME --member NAME [--since AGE] [--claude-root DIR] [--json]
       member-work-sync metrics --team NAME [--claude-root DIR] [--json]
       member-work-sync drain [--claude-root DIR] [--json]
       member-work-sync hook-settings --provider claude|codex|opencode [--claude-root DIR]
       member-work-sync watch [--claude-root DIR] [--team NAME]
       member-work-sync --help | --version

commands:
  status         each member's current work-sync status and agenda (read-only)
  explain        one member's timeline, oldest first, one line per entry
                 "HH:MM:SS  <what happened>" (UTC): reconciles and their
                 triggers, nudges planned, delivered, skipped or suppressed and
                 why, reports accepted or rejected (read-only)
  metrics        a team's counts and phase-2 readiness (read-only)
  drain          drains the runtime turn-settled spool once and prints the
                 summary (WRITES: installs the spool under DIR/teams, claims and
                 files its events, records journal lines)
  hook-settings  prints the turn-settled hook settings JSON for a provider
                 (WRITES: installs the spool and its hook script under DIR/teams)
  watch          a live terminal view of every member's state, the turn-settled
                 spool backlog and recent changes; q or Ctrl-C quits. Read-only
                 like status: it runs the addon with autoStart false, so it
                 drains no spool, sends no nudge and writes nothing; it re-reads
                 once a second and on file changes. The app's reconcile queue
                 lives in the app's own process and is not shown. Needs a
                 terminal.

options:
  --claude-root DIR  Claude home (default: $CLAUDE_CONFIG_DIR, else ~/.claude)
  --team NAME        the team (status, watch: default every team under DIR/teams)
  --member NAME      the member (explain)
  --since AGE        explain: only entries of the last AGE (30s, 15m, 2h, 1d)
                     or since an ISO-8601 time
  --provider NAME    hook-settings: claude, codex or opencode
  --json             machine-readable output (explain: the complete entries)
  -h, --help         this help
  -V, --version      the package version

Options also take the --name=value form.
Exit status: 0 success (watch: quit by q or Ctrl-C), 1 a root or team could not
be read, 2 bad arguments or watch without a terminal.`

/** A usage mistake: reported with the usage text, exit status 2. */
class UsageError extends Error {}

/** A root or team that cannot be shown: exit status 1. */
class TargetError extends Error {}

const VALUE_OPTIONS = {
  '--claude-root': 'claudeRoot',
  '--team': 'team',
  '--member': 'member',
  '--since': 'since',
  '--provider': 'provider',
}

/**
 * Each command's options beyond `--claude-root` and `--json`: `required`
 * ones must be given, `optional` ones may be; any other is a usage error.
 */
const COMMANDS = {
  status: { required: [], optional: ['team'] },
  explain: { required: ['team', 'member'], optional: ['since'] },
  metrics: { required: ['team'], optional: [] },
  drain: { required: [], optional: [] },
  'hook-settings': { required: ['provider'], optional: [] },
  watch: { required: [], optional: ['team'] },
}

const PROVIDERS = ['claude', 'codex', 'opencode']

/** The option flag of an options key (`member` -> `--member`). */
function flagOf(key) {
  return Object.keys(VALUE_OPTIONS).find((flag) => VALUE_OPTIONS[flag] === key)
}

/** Parses argv (without node and script); returns `{ action, claudeRoot, team, member, since, provider, json }`. */
function parseArgs(argv) {
  const options = { action: undefined, claudeRoot: undefined, team: undefined, json: false }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1
    const name = eq === -1 ? arg : arg.slice(0, eq)
    if (name === '-h' || name === '--help') return { ...options, action: 'help' }
    if (name === '-V' || name === '--version') return { ...options, action: 'version' }
    if (name in VALUE_OPTIONS) {
      let value
      if (eq !== -1) value = arg.slice(eq + 1)
      else if (i + 1 < argv.length && !argv[i + 1].startsWith('-')) value = argv[++i]
      if (!value) throw new UsageError(`${name} needs a value`)
      options[VALUE_OPTIONS[name]] = value
    } else if (name === '--json' && eq === -1) {
      options.json = true
    } else if (Object.hasOwn(COMMANDS, arg) && options.action === undefined) {
      options.action = arg
    } else {
      throw new UsageError(`unknown argument ${arg}`)
    }
  }
  if (options.action === undefined) throw new UsageError(`missing command (${Object.keys(COMMANDS).join(', ')})`)
  if (options.action === 'watch' && options.json) throw new UsageError('watch does not take --json')
  checkCommandOptions(options)
  return options
}

/** Rejects missing required and inapplicable options of the chosen command. */
function checkCommandOptions(options) {
  const { required, optional } = COMMANDS[options.action]
  const missing = required.filter((key) => options[key] === undefined).map(flagOf)
  if (missing.length > 0) throw new UsageError(`${options.action} needs ${missing.join(' and ')}`)
  for (const key of Object.values(VALUE_OPTIONS)) {
    if (key === 'claudeRoot' || options[key] === undefined) continue
    if (!required.includes(key) && !optional.includes(key)) {
      throw new UsageError(`${flagOf(key)} does not apply to ${options.action}`)
    }
  }
  if (options.provider !== undefined && !PROVIDERS.includes(options.provider)) {
    throw new UsageError(`--provider must be one of ${PROVIDERS.join(', ')} (got ${options.provider})`)
  }
  if (options.since !== undefined) options.sinceMs = parseSince(options.since, Date.now())
}

const AGE_UNITS_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `--since`: an age (`90s`, `15m`, `2h`, `1d`) before `nowMs`, or an ISO-8601 time; epoch ms. */
function parseSince(value, nowMs) {
  const age = /^(\d+)([smhd])$/.exec(value)
  if (age) return nowMs - Number(age[1]) * AGE_UNITS_MS[age[2]]
  const at = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : NaN
  if (Number.isFinite(at)) return at
  throw new UsageError(`--since must be an age like 30s, 15m, 2h, 1d or an ISO-8601 time (got ${value})`)
}

function defaultClaudeRoot() {
  return process.env.CLAUDE_CONFIG_DIR || path.join(os.homedir(), '.claude')
}

/** The Claude root to use; a TargetError naming it when it is not a readable folder. */
function checkedRoot(claudeRoot) {
  const root = claudeRoot || defaultClaudeRoot()
  let stat
  try {
    stat = fs.statSync(root)
  } catch (error) {
    throw new TargetError(`Claude root ${root} cannot be read: ${error.code || error.message}`)
  }
  if (!stat.isDirectory()) throw new TargetError(`Claude root ${root} is not a folder`)
  return root
}

/** Team folders (real folders with a `config.json` entry), sorted. */
function listTeams(teamsDir) {
  let entries
  try {
    entries = fs.readdirSync(teamsDir, { withFileTypes: true })
  } catch (error) {
    if (error.code === 'ENOENT') return []
    throw new TargetError(`cannot list teams in ${teamsDir}: ${error.message}`)
  }
  return entries
    .filter((d) => d.isDirectory() && !d.name.startsWith('.'))
    .filter((d) => fs.existsSync(path.join(teamsDir, d.name, 'config.json')))
    .map((d) => d.name)
    .sort()
}

/** Why a team preview cannot be shown, or undefined when it can. */
function teamProblem(preview, teamsDir) {
  if (preview.configFound) return undefined
  const configFile = path.join(teamsDir, preview.teamName, 'config.json')
  const configNotes = preview.diagnostics.filter((d) => d.startsWith('team_config'))
  if (configNotes.length > 0) return `team ${preview.teamName}: ${configFile} is unusable (${configNotes.join(', ')})`
  if (fs.existsSync(path.join(teamsDir, preview.teamName))) {
    return `team ${preview.teamName}: ${configFile} is missing or has no team name`
  }
  return `team ${preview.teamName} not found in ${teamsDir}`
}

function formatTeam(preview) {
  const statuses = preview.statuses
  const lines = [`Team ${preview.teamName}: ${statuses.length} member(s)`]
  if (preview.diagnostics.length > 0) lines.push(`  team diagnostics: ${preview.diagnostics.join(', ')}`)
  for (const s of statuses) {
    const provider = s.providerId ? ` (${s.providerId})` : ''
    lines.push('')
    lines.push(`  ${s.memberName}${provider}: ${s.state}, ${s.agenda.items.length} actionable item(s)`)
    lines.push(`    fingerprint ${s.agenda.fingerprint}`)
    for (const item of s.agenda.items) {
      const task = (item.displayId || item.taskId).padEnd(6)
      lines.push(`    ${item.kind.padEnd(18)} ${task} ${item.reason.padEnd(30)} ${item.subject}`)
    }
    const notes = s.diagnostics.filter((d) => d !== 'agenda_empty' && d !== 'status_snapshot_not_persisted')
    if (notes.length > 0) lines.push(`    diagnostics: ${notes.join(', ')}`)
  }
  return lines.join('\n')
}

/** The Claude root to show and its teams folder; a TargetError when the root is not a readable folder. */
function openRoot(claudeRoot) {
  const root = checkedRoot(claudeRoot)
  return { root, teamsDir: path.join(root, 'teams') }
}

/**
 * Previews every member of the chosen teams without side effects; returns
 * `{ teams: MemberWorkSyncTeamPreview[], problems: string[] }`. A missing root
 * throws a TargetError naming it.
 */
async function collectStatus({ claudeRoot, team }) {
  const root = checkedRoot(claudeRoot)
  const teamsDir = path.join(root, 'teams')
  const { MemberWorkSync } = require('..')
  const sync = new MemberWorkSync({ claudeRoot: root, autoStart: false })
  try {
    const names = team ? [team] : listTeams(teamsDir)
    const teams = []
    const problems = []
    for (const teamName of names) {
      const preview = await sync.previewTeam({ teamName })
      const problem = teamProblem(preview, teamsDir)
      if (problem) problems.push(problem)
      else teams.push(preview)
    }
    return { teams, problems, teamsDir }
  } finally {
    await sync.dispose()
  }
}

/** Runs `status`; resolves `{ stdout, stderr, exitCode }`. */
async function runStatus(options) {
  const { teams, problems, teamsDir } = await collectStatus(options)
  const exitCode = problems.length > 0 ? 1 : 0
  const stderr = problems.map((p) => `member-work-sync: ${p}`).join('\n')
  if (options.json) return { stdout: JSON.stringify({ teams, problems }, null, 2), stderr, exitCode }
  if (teams.length === 0 && problems.length === 0) return { stdout: `No teams found in ${teamsDir}.`, stderr, exitCode }
  return { stdout: teams.map(formatTeam).join('\n\n'), stderr, exitCode }
}

// ---- watch ---------------------------------------------------------------

/**
 * Runs `watch` (bin/watch.js) until the user quits; resolves the exit status.
 * Refuses before touching the screen when there is no terminal, the root
 * cannot be read or the one team asked for cannot be shown.
 */
async function runWatchCommand({ claudeRoot, team }) {
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    throw new UsageError('watch needs a terminal (stdin and stdout must be a TTY); use status for a one-off view')
  }
  const { root, teamsDir } = openRoot(claudeRoot)
  const inspect = async (sync, teamName) => {
    const preview = await sync.previewTeam({ teamName })
    return { preview, problem: teamProblem(preview, teamsDir) }
  }
  if (team) {
    const { MemberWorkSync } = require('..')
    const sync = new MemberWorkSync({ claudeRoot: root, autoStart: false })
    try {
      const { problem } = await inspect(sync, team)
      if (problem) throw new TargetError(problem)
    } finally {
      await sync.dispose()
    }
  }
  const target = {
    root,
    teamsDir,
    tasksDir: path.join(root, 'tasks'),
    teamNames: () => (team ? [team] : listTeams(teamsDir)),
  }
  return require('./watch').runWatch(target, inspect)
}

// ---- end of watch --------------------------------------------------------

// --- explain, metrics, drain, hook-settings ---------------------------------

/** Runs `work(sync, root)` on an instance over the checked root that starts no background work. */
async function withInstance(claudeRoot, work) {
  const root = checkedRoot(claudeRoot)
  const { MemberWorkSync } = require('..')
  const sync = new MemberWorkSync({ claudeRoot: root, autoStart: false })
  try {
    return await work(sync, root)
  } finally {
    await sync.dispose()
  }
}

/** A TargetError when `team` has no folder under the root's teams folder. */
function requireTeamFolder(root, team) {
  const teamsDir = path.join(root, 'teams')
  if (!fs.existsSync(path.join(teamsDir, team))) throw new TargetError(`team ${team} not found in ${teamsDir}`)
}

/** One explain entry as `HH:MM:SS  sentence` (UTC). */
function formatExplainEntry(entry) {
  return `${entry.at.slice(11, 19)}  ${entry.sentence}`
}

/** Runs `explain` (read-only); resolves `{ stdout, stderr, exitCode }`. */
async function runExplain({ claudeRoot, team, member, sinceMs, json }) {
  return withInstance(claudeRoot, async (sync, root) => {
    requireTeamFolder(root, team)
    const explanation = await sync.explain({ teamName: team, memberName: member, sinceMs })
    const stderr = explanation.diagnostics.map((d) => `member-work-sync: note: ${d}`).join('\n')
    if (json) return { stdout: JSON.stringify(explanation, null, 2), stderr, exitCode: 0 }
    const lines = explanation.entries.map(formatExplainEntry)
    const stdout = lines.length > 0 ? lines.join('\n') : `No entries for ${member} in team ${team}.`
    return { stdout, stderr, exitCode: 0 }
  })
}

/** `metrics` as text: counts, then phase-2 readiness with each rate against its threshold. */
function formatMetrics(m) {
  const r = m.phase2Readiness
  const states = Object.entries(m.stateCounts)
    .map(([state, n]) => `${state} ${n}`)
    .join(', ')
  return [
    `Team ${m.teamName}: ${m.memberCount} observed member(s) (${states})`,
    `  actionable items ${m.actionableItemCount}, would-nudges ${m.wouldNudgeCount}, agenda changes ${m.fingerprintChangeCount}`,
    `  reports accepted ${m.reportAcceptedCount}, rejected ${m.reportRejectedCount}`,
    `  phase 2 readiness: ${r.state}${r.reasons.length > 0 ? ` (${r.reasons.join(', ')})` : ''}`,
    `    observed ${r.rates.observationHours} h of ${r.thresholds.minObservationHours} h, ${r.rates.statusEventCount} of ${r.thresholds.minStatusEvents} status events`,
    `    would-nudges per member-hour ${r.rates.wouldNudgesPerMemberHour} (max ${r.thresholds.maxWouldNudgesPerMemberHour})`,
    `    agenda changes per member-hour ${r.rates.fingerprintChangesPerMemberHour} (max ${r.thresholds.maxFingerprintChangesPerMemberHour})`,
    `    report rejection rate ${r.rates.reportRejectionRate} (max ${r.thresholds.maxReportRejectionRate})`,
  ].join('\n')
}

/** Runs `metrics` (read-only); resolves `{ stdout, stderr, exitCode }`. */
async function runMetrics({ claudeRoot, team, json }) {
  return withInstance(claudeRoot, async (sync, root) => {
    requireTeamFolder(root, team)
    const metrics = await sync.previewMetrics({ teamName: team })
    return { stdout: json ? JSON.stringify(metrics, null, 2) : formatMetrics(metrics), stderr: '', exitCode: 0 }
  })
}

/** Runs `drain` (writes: installs and drains the spool); resolves `{ stdout, stderr, exitCode }`. */
async function runDrain({ claudeRoot, json }) {
  return withInstance(claudeRoot, async (sync) => {
    const s = await sync.drainRuntimeTurnSettledEvents()
    const text = `claimed ${s.claimed}, enqueued ${s.enqueued}, unresolved ${s.unresolved}, ignored ${s.ignored}, invalid ${s.invalid}, failed ${s.failed}`
    return { stdout: json ? JSON.stringify(s, null, 2) : text, stderr: '', exitCode: s.failed > 0 ? 1 : 0 }
  })
}

/** Runs `hook-settings` (writes: installs the spool); resolves `{ stdout, stderr, exitCode }`. */
async function runHookSettings({ claudeRoot, provider }) {
  return withInstance(claudeRoot, async (sync) => {
    const settings = await sync.buildRuntimeTurnSettledHookSettings({ provider })
    // opencode takes no hook settings (its plugin reads the spool root); for
    // claude and codex `null` means the hook could not be installed.
    if (settings === null && provider !== 'opencode') {
      return { stdout: '', stderr: `member-work-sync: the ${provider} hook could not be installed`, exitCode: 1 }
    }
    return { stdout: JSON.stringify(settings, null, 2), stderr: '', exitCode: 0 }
  })
}

/** The runner of each command. */
const RUNNERS = {
  status: runStatus,
  explain: runExplain,
  metrics: runMetrics,
  drain: runDrain,
  'hook-settings': runHookSettings,
}

module.exports = {
  parseArgs,
  parseSince,
  runStatus,
  collectStatus,
  formatTeam,
  runExplain,
  runMetrics,
  runDrain,
  runHookSettings,
}

if (require.main === module) {
  let options
  try {
    options = parseArgs(process.argv.slice(2))
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    console.error(`member-work-sync: ${error.message}\n${USAGE}`)
    process.exit(2)
  }
  if (options.action === 'help') {
    console.log(USAGE)
  } else if (options.action === 'version') {
    console.log(require('../package.json').version)
  } else if (options.action === 'watch') {
    runWatchCommand(options).then(
      (exitCode) => {
        process.exitCode = exitCode
        // The addon and the terminal are released; nothing else should keep Node.
        process.exit(exitCode)
      },
      (error) => {
        console.error(`member-work-sync: ${error.code ? `${error.code}: ` : ''}${error.message}`)
        process.exit(error instanceof UsageError ? 2 : 1)
      },
    )
  } else {
    RUNNERS[options.action](options).then(
      ({ stdout, stderr, exitCode }) => {
        if (stdout) console.log(stdout)
        if (stderr) console.error(stderr)
        process.exitCode = exitCode
      },
      (error) => {
        console.error(`member-work-sync: ${error.code ? `${error.code}: ` : ''}${error.message}`)
        process.exitCode = 1
      },
    )
  }
}
