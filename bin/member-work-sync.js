#!/usr/bin/env node
'use strict'
// CLI: `member-work-sync <command> ...` (COMMANDS below; `--help`, `<command> --help`).
// `status`, `explain` and `metrics` only read: they go through the addon's
// side-effect-free `previewTeam`, `explain` and `previewMetrics` and write, move
// or create nothing under the Claude root (no journal line, no metric event,
// no report token). `drain`, `hook-settings` and `env` write: `drain` drains
// an installed turn-settled spool, the other two install it. `watch` shows the
// same as `status`, live, with phase-2 readiness and the app's queue,
// read-only too (bin/watch.js). No command prints a report token, and every
// text it prints has its control characters escaped (bin/text.js): names,
// subjects and file names come from files agents write.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const { closest, escapeControls, escapeJson, field, wrapLine, wrapText, MAX_COLUMNS } = require('./text')

const PROGRAM = 'member-work-sync'

/**
 * Every command: its synopsis, what it does (the help text), and the options
 * it takes beyond `--claude-root` (`required` ones must be given).
 */
const COMMANDS = {
  status: {
    synopsis: 'status [--claude-root DIR] [--sqlite PATH] [--team NAME] [--json]',
    summary: "each member's current state and agenda (read-only)",
    help: `Prints each member's state (caught_up, needs_sync, still_working, blocked,
inactive), actionable items and agenda fingerprint, computed from the board now.
Read-only: it writes, moves and creates nothing under the root and prints no
report token.`,
    required: [],
    optional: ['team', 'sqlite', 'json'],
  },
  explain: {
    synopsis: 'explain --team NAME --member NAME [--since AGE] [--claude-root DIR] [--sqlite PATH] [--json]',
    summary: "one member's timeline: reconciles, nudges, reports (read-only)",
    help: `Prints one member's timeline, oldest first, one entry per line
("YYYY-MM-DD HH:MM:SS  <what happened>", UTC): reconciles and their triggers,
nudges planned, delivered, skipped or suppressed and why, reports accepted or
rejected, the stored status. The timeline is what a running app recorded (an
instance with autoStart writes the journal, outbox and status as it works);
says so when there is none yet. A member not on the roster or a team whose
config.json cannot be read exits 1. Read-only; --json prints the complete
entries (without report tokens).`,
    required: ['team', 'member'],
    optional: ['since', 'sqlite', 'json'],
  },
  metrics: {
    synopsis: 'metrics --team NAME [--claude-root DIR] [--sqlite PATH] [--json]',
    summary: "a team's counts and phase-2 readiness (read-only)",
    help: `Prints a team's status counts and its phase-2 readiness, each rate against its
threshold, from the metric events a running app recorded; says so when there
are none yet. A team whose config.json cannot be read exits 1. Read-only.`,
    required: ['team'],
    optional: ['sqlite', 'json'],
  },
  drain: {
    synopsis: 'drain [--claude-root DIR] [--json]',
    summary: 'drains the turn-settled spool once (writes)',
    help: `Claims the Stop events the installed hooks spooled (at most 50), attributes
each to its member, records it and prints the summary. WRITES: moves the spool
files it claims and appends journal lines. On a root where no hook was ever
installed (hook-settings installs it) there is no spool: it claims nothing and
creates nothing.`,
    required: [],
    optional: ['json'],
  },
  'hook-settings': {
    synopsis: 'hook-settings --provider claude|codex [--claude-root DIR]',
    summary: "the Stop hook settings JSON for a runtime (writes)",
    help: `Prints the turn-settled Stop hook settings JSON: for claude the --settings
fragment, for codex {config_overrides: [...]} (pass each as -c <item>).
WRITES: installs the spool folders and the hook program under DIR/teams.
opencode takes no hook settings (its plugin reads the spool folder from the
environment: see env).`,
    required: ['provider'],
    optional: ['json'],
  },
  env: {
    synopsis: 'env --provider codex|opencode [--claude-root DIR] [--json]',
    summary: 'the runtime environment for the Stop hook of codex or opencode (writes)',
    help: `Prints the environment a codex or opencode runtime needs for its turn-settled
hook (AGENT_TEAMS_RUNTIME_TURN_SETTLED_SPOOL_ROOT), one NAME=value line each,
quoted for a POSIX shell; --json prints it as an object. WRITES: installs the
spool folders under DIR/teams. claude takes no environment (see hook-settings).`,
    required: ['provider'],
    optional: ['json'],
  },
  watch: {
    synopsis: 'watch [--claude-root DIR] [--sqlite PATH] [--team NAME]',
    summary: 'a live view of every member, the spool and the app\'s queue (read-only)',
    help: `A live terminal view of every member's state, each team's phase-2 readiness,
the turn-settled spool backlog, the app's reconcile queue (as a running app
publishes it to DIR/teams/.member-work-sync/activity.json) and recent changes;
q or Ctrl-C quits. It re-reads once a second and on file changes. Read-only
like status: it runs the addon with autoStart false, so it drains no spool,
sends no nudge and writes nothing. Needs a terminal.`,
    required: [],
    optional: ['team', 'sqlite'],
  },
}

/** Every option: its flag, what it holds (undefined for a switch) and its help line. */
const OPTIONS = {
  claudeRoot: { flag: '--claude-root', value: 'DIR', help: 'Claude home (default: $CLAUDE_CONFIG_DIR, else ~/.claude)' },
  team: { flag: '--team', value: 'NAME', help: 'the team, a folder under DIR/teams' },
  member: { flag: '--member', value: 'NAME', help: 'the member, as on the team roster' },
  since: { flag: '--since', value: 'AGE', help: 'only entries of the last AGE (30s, 15m, 2h, 1d) or since an ISO-8601 time' },
  provider: { flag: '--provider', value: 'NAME', help: 'the runtime' },
  sqlite: {
    flag: '--sqlite',
    value: 'PATH',
    help: "the app's SQLite database (<userData>/storage/app.db) instead of the JSON files, opened read-only",
  },
  json: { flag: '--json', value: undefined, help: 'machine-readable output' },
}

/** The options of an instance that starts no background work, over `root` and, with `sqlite`, that database read-only. */
function instanceOptions(root, sqlite) {
  const options = { claudeRoot: root, autoStart: false }
  if (sqlite) options.storage = { sqlitePath: path.resolve(sqlite), readOnly: true }
  return options
}

const PROVIDERS = {
  'hook-settings': ['claude', 'codex'],
  env: ['codex', 'opencode'],
}

/** Why a provider is refused by a command that has nothing for it. */
const PROVIDER_ELSEWHERE = {
  'hook-settings': {
    opencode: ['opencode takes no hook settings: its plugin reads the spool folder from the environment', 'env'],
  },
  env: {
    claude: ['claude takes no environment: its Stop hook is in its settings', 'hook-settings'],
  },
}

/** The global help: every command's synopsis and summary. */
function globalHelp() {
  const names = Object.keys(COMMANDS)
  const width = Math.max(...names.map((n) => n.length))
  return [
    `usage: ${PROGRAM} <command> [options]     (${PROGRAM} <command> --help for one command)`,
    '',
    'commands:',
    ...names.map((name) => `  ${name.padEnd(width)}  ${COMMANDS[name].summary}`),
    '',
    'common options:',
    `  ${OPTIONS.claudeRoot.flag} ${OPTIONS.claudeRoot.value}  ${OPTIONS.claudeRoot.help}`,
    '  -h, --help         this help; after a command, that command\'s help',
    '  -V, --version      the package version',
    '',
    'Options also take the --name=value form. Exit status: 0 success, 1 a root,',
    'team or member that cannot be shown or data that cannot be used, 2 bad',
    'arguments (watch: also no terminal).',
  ].join('\n')
}

/** One command's help: synopsis, what it does, its options. */
function commandHelp(name) {
  const command = COMMANDS[name]
  const keys = ['claudeRoot', ...command.required, ...command.optional]
  const lines = keys.map((key) => {
    const o = OPTIONS[key]
    const left = o.value ? `${o.flag} ${o.value}` : o.flag
    const providers = key === 'provider' ? ` (${PROVIDERS[name].join(' or ')})` : ''
    const required = command.required.includes(key) ? ' (required)' : ''
    const everyTeam = key === 'team' && !required ? ' (default: every team)' : ''
    return `  ${left.padEnd(17)}  ${o.help}${providers}${required}${everyTeam}`
  })
  const text = [`usage: ${PROGRAM} ${command.synopsis}`, '', command.help, '', 'options:', ...lines, '  -h, --help         this help']
  return wrapText(text.join('\n'))
}

/** A usage mistake: one line naming it and a hint, exit status 2. */
class UsageError extends Error {
  constructor(problem, hint) {
    super(`${problem}; ${hint}`)
  }
}

/** The "see ... --help" hint for `command` (the global help when undefined). */
function seeHelp(command) {
  return `see ${PROGRAM}${command ? ` ${command}` : ''} --help`
}

/** "did you mean X? see ..." when `word` looks like one of `candidates`, else just the help hint. */
function hint(word, candidates, command) {
  const guess = closest(word, candidates)
  return guess ? `did you mean ${guess}? (${seeHelp(command)})` : seeHelp(command)
}

/** A root or team that cannot be shown: exit status 1. */
class TargetError extends Error {}

/** The options key of a flag (`--member` -> `member`), or undefined. */
function keyOf(flag) {
  return Object.keys(OPTIONS).find((key) => OPTIONS[key].flag === flag)
}

/**
 * Parses argv (without node and script); returns `{ action, claudeRoot,
 * team, member, since, sinceMs, provider, json }`, or `{ action: 'help',
 * command }` / `{ action: 'version' }`.
 */
function parseArgs(argv) {
  const command = argv.find((arg) => Object.hasOwn(COMMANDS, arg))
  if (argv.some((arg) => arg === '-h' || arg === '--help')) return { action: 'help', command }
  if (argv.some((arg) => arg === '-V' || arg === '--version')) return { action: 'version' }
  const options = { action: undefined, json: false }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1
    const name = eq === -1 ? arg : arg.slice(0, eq)
    const key = keyOf(name)
    const scope = options.action
    if (key !== undefined && OPTIONS[key].value !== undefined) {
      let value
      if (eq !== -1) value = arg.slice(eq + 1)
      else if (i + 1 < argv.length && !argv[i + 1].startsWith('-')) value = argv[++i]
      if (!value) throw new UsageError(`${name} needs a value (${name} ${OPTIONS[key].value})`, seeHelp(command))
      options[key] = value
    } else if (key === 'json') {
      if (eq !== -1) throw new UsageError(`--json takes no value (got ${field(arg)})`, seeHelp(command))
      options.json = true
    } else if (arg.startsWith('-')) {
      const flags = Object.values(OPTIONS).map((o) => o.flag)
      throw new UsageError(`unknown option ${field(name)}`, hint(name, flags, command))
    } else if (Object.hasOwn(COMMANDS, arg) && scope === undefined) {
      options.action = arg
    } else if (scope === undefined) {
      throw new UsageError(`unknown command ${field(arg)}`, hint(arg, Object.keys(COMMANDS)))
    } else {
      throw new UsageError(`unexpected argument ${field(arg)} after ${scope}`, seeHelp(scope))
    }
  }
  if (options.action === undefined) {
    throw new UsageError(`missing command (${Object.keys(COMMANDS).join(', ')})`, seeHelp())
  }
  checkCommandOptions(options)
  return options
}

/** Rejects missing required and inapplicable options of the chosen command. */
function checkCommandOptions(options) {
  const name = options.action
  const { required, optional } = COMMANDS[name]
  for (const key of Object.keys(OPTIONS)) {
    if (key === 'claudeRoot' || required.includes(key) || optional.includes(key)) continue
    if (key === 'json' ? options.json : options[key] !== undefined) {
      throw new UsageError(`${OPTIONS[key].flag} does not apply to ${name}`, seeHelp(name))
    }
  }
  const missing = required.filter((key) => options[key] === undefined).map((key) => OPTIONS[key].flag)
  if (missing.length > 0) throw new UsageError(`${name} needs ${missing.join(' and ')}`, seeHelp(name))
  if (options.provider !== undefined && !PROVIDERS[name].includes(options.provider)) {
    const elsewhere = PROVIDER_ELSEWHERE[name][options.provider]
    if (elsewhere) throw new UsageError(`${name}: ${elsewhere[0]}`, seeHelp(elsewhere[1]))
    throw new UsageError(
      `--provider must be ${PROVIDERS[name].join(' or ')} (got ${field(options.provider)})`,
      hint(options.provider, PROVIDERS[name], name),
    )
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
  throw new UsageError(`--since must be an age like 30s, 15m, 2h, 1d or an ISO-8601 time (got ${field(value)})`, seeHelp('explain'))
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
  const team = field(preview.teamName)
  const configFile = field(path.join(teamsDir, preview.teamName, 'config.json'))
  const configNotes = preview.diagnostics.filter((d) => d.startsWith('team_config'))
  if (configNotes.length > 0) return `team ${team}: ${configFile} is unusable (${configNotes.map(field).join(', ')})`
  if (fs.existsSync(path.join(teamsDir, preview.teamName))) {
    return `team ${team}: ${configFile} is missing or has no team name`
  }
  return `team ${team} not found in ${field(teamsDir)}`
}

/** Diagnostics that describe every preview and say nothing about the member. */
const ROUTINE_DIAGNOSTICS = new Set(['agenda_empty', 'status_snapshot_not_persisted'])

/** `status` text of one team: a block per member, its items one line each. */
function formatTeam(preview) {
  const statuses = preview.statuses
  const lines = [`Team ${field(preview.teamName)}: ${statuses.length} member(s)`]
  if (preview.diagnostics.length > 0) lines.push(`  team diagnostics: ${preview.diagnostics.map(field).join(', ')}`)
  for (const s of statuses) {
    const provider = s.providerId ? ` (${field(s.providerId)})` : ''
    lines.push('')
    lines.push(`  ${field(s.memberName)}${provider}: ${s.state}, ${s.agenda.items.length} actionable item(s)`)
    lines.push(`    fingerprint ${s.agenda.fingerprint}`)
    for (const item of s.agenda.items) {
      const task = field(item.displayId || item.taskId).padEnd(6)
      lines.push(`    ${item.kind.padEnd(18)} ${task} ${field(item.reason).padEnd(30)} ${field(item.subject)}`)
    }
    const notes = s.diagnostics.filter((d) => !ROUTINE_DIAGNOSTICS.has(d))
    if (notes.length > 0) lines.push(`    diagnostics: ${notes.map(field).join(', ')}`)
  }
  return lines.join('\n')
}

/** A report token anywhere in a string (`wrs:v1.<payload>.<mac>`). */
const REPORT_TOKEN = /wrs:v\d+\.[A-Za-z0-9_.-]+/g

/**
 * `value` as indented JSON for the terminal: no report token (a `reportToken`
 * key is left out, a token inside another string is replaced: a command meant
 * for looking must not hand out a member's credential), DEL and C1 controls
 * escaped.
 */
function toJson(value) {
  const json = JSON.stringify(
    value,
    (key, v) => {
      if (key === 'reportToken') return undefined
      return typeof v === 'string' ? v.replace(REPORT_TOKEN, '[report token left out]') : v
    },
    2,
  )
  return escapeJson(json)
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
async function collectStatus({ claudeRoot, sqlite, team }) {
  const root = checkedRoot(claudeRoot)
  const teamsDir = path.join(root, 'teams')
  const { MemberWorkSync } = require('..')
  const sync = new MemberWorkSync(instanceOptions(root, sqlite))
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
  if (options.json) return { stdout: toJson({ teams, problems }), stderr, exitCode }
  if (teams.length === 0 && problems.length === 0) return { stdout: `No teams found in ${field(teamsDir)}.`, stderr, exitCode }
  return { stdout: wrapText(teams.map(formatTeam).join('\n\n')), stderr, exitCode }
}

// ---- watch ---------------------------------------------------------------

/**
 * Runs `watch` (bin/watch.js) until the user quits; resolves the exit status.
 * Refuses before touching the screen when there is no terminal, the root
 * cannot be read or the one team asked for cannot be shown.
 */
async function runWatchCommand({ claudeRoot, sqlite, team }) {
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    throw new UsageError('watch needs a terminal (stdin and stdout must be a TTY)', 'use status for a one-off view')
  }
  const { root, teamsDir } = openRoot(claudeRoot)
  const inspect = async (sync, teamName) => {
    const preview = await sync.previewTeam({ teamName })
    return { preview, problem: teamProblem(preview, teamsDir) }
  }
  if (team) {
    const { MemberWorkSync } = require('..')
    const sync = new MemberWorkSync(instanceOptions(root, sqlite))
    try {
      const { problem } = await inspect(sync, team)
      if (problem) throw new TargetError(problem)
    } finally {
      await sync.dispose()
    }
  }
  const target = {
    root,
    instanceOptions: instanceOptions(root, sqlite),
    teamsDir,
    tasksDir: path.join(root, 'tasks'),
    teamNames: () => (team ? [team] : listTeams(teamsDir)),
  }
  return require('./watch').runWatch(target, inspect)
}

// ---- end of watch --------------------------------------------------------


// --- explain, metrics, drain, hook-settings, env ----------------------------

/**
 * Runs `work(sync, root)` on an instance over the checked root that starts no
 * background work (over the `sqlite` database read-only when given).
 */
async function withInstance(claudeRoot, work, sqlite) {
  const root = checkedRoot(claudeRoot)
  const { MemberWorkSync } = require('..')
  const sync = new MemberWorkSync(instanceOptions(root, sqlite))
  try {
    return await work(sync, root)
  } finally {
    await sync.dispose()
  }
}

/**
 * The team's preview, read-only; a TargetError when the team has no folder
 * or its `config.json` cannot be used (nothing it shows would be right).
 */
async function usableTeam(sync, root, team) {
  const teamsDir = path.join(root, 'teams')
  if (!fs.existsSync(path.join(teamsDir, team))) throw new TargetError(`team ${field(team)} not found in ${field(teamsDir)}`)
  const preview = await sync.previewTeam({ teamName: team })
  const problem = teamProblem(preview, teamsDir)
  if (problem) throw new TargetError(problem)
  return preview
}

/** `2026-11-22 10:00:00` (UTC) of an ISO time; `(no time)` for a record without one. */
function dateTime(iso, atMs) {
  if (!atMs) return '(no time)'.padEnd(19)
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}`
}

/** One explain entry: `YYYY-MM-DD HH:MM:SS  sentence`, wrapped under the sentence. */
function formatExplainEntry(entry) {
  const prefix = `${dateTime(entry.at, entry.atMs)}  `
  return wrapLine(`${prefix}${field(entry.sentence)}`, MAX_COLUMNS, prefix.length).join('\n')
}

/** What a running app records, said wherever the CLI finds nothing recorded. */
const RECORDED_BY_THE_APP =
  'The journal, outbox, status and metrics are recorded by a running app (an instance with ' +
  'autoStart, as the desktop app runs it) as it reconciles; status and watch show the board now.'

/** A member's identity as the addon's stores key it: JavaScript's trim() and toLowerCase(). */
function memberKey(name) {
  return name.trim().toLowerCase()
}

/** Why `explain` found no entry for a member that is on the roster. */
async function whyNoEntries(sync, { team, member, sinceMs }) {
  const who = `${field(member)} in team ${field(team)}`
  if (sinceMs === undefined) return wrapText(`No entries for ${who}: nothing recorded yet. ${RECORDED_BY_THE_APP}`)
  const all = await sync.explain({ teamName: team, memberName: member })
  const since = dateTime(new Date(sinceMs).toISOString(), sinceMs)
  if (all.entries.length === 0) {
    return wrapText(`No entries for ${who} since ${since} UTC: nothing recorded yet. ${RECORDED_BY_THE_APP}`)
  }
  const newest = all.entries.at(-1)
  return wrapText(`No entries for ${who} since ${since} UTC; the newest is from ${dateTime(newest.at, newest.atMs)} UTC.`)
}

/** Runs `explain` (read-only); resolves `{ stdout, stderr, exitCode }`. */
async function runExplain({ claudeRoot, sqlite, team, member, sinceMs, json }) {
  return withInstance(claudeRoot, async (sync, root) => {
    const preview = await usableTeam(sync, root, team)
    const roster = preview.statuses.map((s) => s.memberName)
    const explanation = await sync.explain({ teamName: team, memberName: member, sinceMs })
    const notes = explanation.diagnostics.map((d) => `member-work-sync: note: ${field(d)}`)
    // The addon keys members as the app does (trimmed, lower-cased): `JACK` is jack.
    const onRoster = roster.find((name) => memberKey(name) === memberKey(member))
    if (onRoster !== undefined) member = onRoster
    else {
      const absent = `${field(member)} is not on the roster of team ${field(team)}`
      if (explanation.entries.length === 0) {
        const guess = closest(member, roster)
        const known = roster.length > 0 ? `members: ${roster.map(field).join(', ')}` : 'the roster is empty'
        throw new TargetError(`${absent}${guess ? `; did you mean ${field(guess)}?` : ''} (${known})`)
      }
      notes.push(`member-work-sync: note: ${absent} (any more); showing what was recorded for it`)
    }
    if (explanation.entries.length === 0) {
      const why = await whyNoEntries(sync, { team, member, sinceMs })
      // JSON keeps stdout machine-readable: the reason goes to stderr.
      if (json) return { stdout: toJson(explanation), stderr: [...notes, `member-work-sync: note: ${why.replace(/\n/g, ' ')}`].join('\n'), exitCode: 0 }
      return { stdout: why, stderr: notes.join('\n'), exitCode: 0 }
    }
    const stderr = notes.join('\n')
    if (json) return { stdout: toJson(explanation), stderr, exitCode: 0 }
    const header = `Timeline of ${field(member)} in team ${field(team)}, oldest first (times UTC):`
    return { stdout: [header, ...explanation.entries.map(formatExplainEntry)].join('\n'), stderr, exitCode: 0 }
  }, sqlite)
}

/** `metrics` as text: counts, then phase-2 readiness with each rate against its threshold. */
function formatMetrics(m) {
  const r = m.phase2Readiness
  const states = Object.entries(m.stateCounts)
    .map(([state, n]) => `${field(state)} ${n}`)
    .join(', ')
  const lines = [
    `Team ${field(m.teamName)}: ${m.memberCount} observed member(s) (${states})`,
    `  actionable items ${m.actionableItemCount}, would-nudges ${m.wouldNudgeCount}, agenda changes ${m.fingerprintChangeCount}`,
    `  reports accepted ${m.reportAcceptedCount}, rejected ${m.reportRejectedCount}`,
    `  phase 2 readiness: ${r.state}${r.reasons.length > 0 ? ` (${r.reasons.map(field).join(', ')})` : ''}`,
    `    observed ${r.rates.observationHours} h of ${r.thresholds.minObservationHours} h, ${r.rates.statusEventCount} of ${r.thresholds.minStatusEvents} status events`,
    `    would-nudges per member-hour ${r.rates.wouldNudgesPerMemberHour} (max ${r.thresholds.maxWouldNudgesPerMemberHour})`,
    `    agenda changes per member-hour ${r.rates.fingerprintChangesPerMemberHour} (max ${r.thresholds.maxFingerprintChangesPerMemberHour})`,
    `    report rejection rate ${r.rates.reportRejectionRate} (max ${r.thresholds.maxReportRejectionRate})`,
  ]
  if (r.rates.statusEventCount === 0) lines.push('', `No status events recorded yet for team ${field(m.teamName)}. ${RECORDED_BY_THE_APP}`)
  return wrapText(lines.join('\n'))
}

/** Runs `metrics` (read-only); resolves `{ stdout, stderr, exitCode }`. */
async function runMetrics({ claudeRoot, sqlite, team, json }) {
  return withInstance(claudeRoot, async (sync, root) => {
    await usableTeam(sync, root, team)
    const metrics = await sync.previewMetrics({ teamName: team })
    return { stdout: json ? toJson(metrics) : formatMetrics(metrics), stderr: '', exitCode: 0 }
  }, sqlite)
}

/** Runs `drain` (writes: drains the spool); resolves `{ stdout, stderr, exitCode }`. */
async function runDrain({ claudeRoot, json }) {
  return withInstance(claudeRoot, async (sync) => {
    const s = await sync.drainRuntimeTurnSettledEvents()
    const text = `claimed ${s.claimed}, enqueued ${s.enqueued}, unresolved ${s.unresolved}, ignored ${s.ignored}, invalid ${s.invalid}, failed ${s.failed}`
    return { stdout: json ? toJson(s) : text, stderr: '', exitCode: s.failed > 0 ? 1 : 0 }
  })
}

/** Runs `hook-settings` (writes: installs the spool and hook); resolves `{ stdout, stderr, exitCode }`. */
async function runHookSettings({ claudeRoot, provider }) {
  return withInstance(claudeRoot, async (sync) => {
    const settings = await sync.buildRuntimeTurnSettledHookSettings({ provider })
    if (settings === null) return { stdout: '', stderr: `member-work-sync: the ${provider} hook could not be installed`, exitCode: 1 }
    return { stdout: toJson(settings), stderr: '', exitCode: 0 }
  })
}

/** `value` as one word of a POSIX shell. */
function shellWord(value) {
  return /^[A-Za-z0-9_/.:,@%+=-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`
}

/** Runs `env` (writes: installs the spool); resolves `{ stdout, stderr, exitCode }`. */
async function runEnv({ claudeRoot, provider, json }) {
  return withInstance(claudeRoot, async (sync) => {
    const environment = await sync.buildRuntimeTurnSettledEnvironment({ provider })
    if (environment === null) return { stdout: '', stderr: `member-work-sync: the ${provider} spool could not be installed`, exitCode: 1 }
    if (json) return { stdout: toJson(environment), stderr: '', exitCode: 0 }
    const lines = Object.entries(environment).map(([name, value]) => `${name}=${shellWord(value)}`)
    return { stdout: lines.join('\n'), stderr: '', exitCode: 0 }
  })
}

/** The runner of each command but watch. */
const RUNNERS = {
  status: runStatus,
  explain: runExplain,
  metrics: runMetrics,
  drain: runDrain,
  'hook-settings': runHookSettings,
  env: runEnv,
}

module.exports = {
  parseArgs,
  parseSince,
  runStatus,
  collectStatus,
  formatTeam,
  formatExplainEntry,
  runExplain,
  runMetrics,
  runDrain,
  runHookSettings,
  runEnv,
}

/** Writes text output, its control characters escaped, with a final newline. */
function print(stream, text) {
  if (text) stream.write(`${escapeControls(text)}\n`)
}

/** The message of an error that ends a command (its `Error.code` first, when it has one). */
function failure(error) {
  return `${PROGRAM}: ${error.code ? `${error.code}: ` : ''}${error.message}`
}

if (require.main === module) {
  let options
  try {
    options = parseArgs(process.argv.slice(2))
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    print(process.stderr, `${PROGRAM}: ${error.message}`)
    process.exit(2)
  }
  if (options.action === 'help') {
    print(process.stdout, options.command ? commandHelp(options.command) : globalHelp())
  } else if (options.action === 'version') {
    print(process.stdout, require('../package.json').version)
  } else if (options.action === 'watch') {
    runWatchCommand(options).then(
      (exitCode) => {
        process.exitCode = exitCode
        // The addon and the terminal are released; nothing else should keep Node.
        process.exit(exitCode)
      },
      (error) => {
        print(process.stderr, failure(error))
        process.exit(error instanceof UsageError ? 2 : 1)
      },
    )
  } else {
    RUNNERS[options.action](options).then(
      ({ stdout, stderr, exitCode }) => {
        print(process.stdout, stdout)
        print(process.stderr, stderr)
        process.exitCode = exitCode
      },
      (error) => {
        print(process.stderr, failure(error))
        process.exitCode = 1
      },
    )
  }
}
