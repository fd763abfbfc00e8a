#!/usr/bin/env node
'use strict'
// CLI: `member-work-sync status [--claude-root DIR] [--team NAME] [--json]`.
// Shows every member's current status and agenda through the addon's
// side-effect-free `previewTeam`: it writes, moves and creates nothing under
// the Claude root, records no journal line or metric event and prints no
// report token. `member-work-sync watch` shows the same live (bin/watch.js).

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const USAGE = `usage: member-work-sync status [--claude-root DIR] [--team NAME] [--json]
       member-work-sync watch [--claude-root DIR] [--team NAME]
       member-work-sync --help | --version

status  shows each member's current work-sync status and agenda, read-only.
watch   a live terminal view of every member's state, the turn-settled spool
        backlog and recent changes; q or Ctrl-C quits. Read-only like status:
        it runs the addon with autoStart false, so it drains no spool, sends
        no nudge and writes nothing; it re-reads once a second and on file
        changes. The app's reconcile queue lives in the app's own process and
        is not shown. Needs a terminal.

options:
  --claude-root DIR  Claude home (default: $CLAUDE_CONFIG_DIR, else ~/.claude)
  --team NAME        only this team (default: every team under DIR/teams)
  --json             machine-readable output (status only)
  -h, --help         this help
  -V, --version      the package version

Options also take the --name=value form.
Exit status: 0 success (watch: quit by q or Ctrl-C), 1 a root or team could not
be read, 2 bad arguments or watch without a terminal.`

/** A usage mistake: reported with the usage text, exit status 2. */
class UsageError extends Error {}

/** A root or team that cannot be shown: exit status 1. */
class TargetError extends Error {}

const VALUE_OPTIONS = { '--claude-root': 'claudeRoot', '--team': 'team' }
const COMMANDS = ['status', 'watch']

/** Parses argv (without node and script); returns `{ action, claudeRoot, team, json }`. */
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
    } else if (COMMANDS.includes(arg) && options.action === undefined) {
      options.action = arg
    } else {
      throw new UsageError(`unknown argument ${arg}`)
    }
  }
  if (options.action === undefined) throw new UsageError(`missing command (${COMMANDS.join(', ')})`)
  if (options.action === 'watch' && options.json) throw new UsageError('watch does not take --json')
  return options
}

function defaultClaudeRoot() {
  return process.env.CLAUDE_CONFIG_DIR || path.join(os.homedir(), '.claude')
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
  const root = claudeRoot || defaultClaudeRoot()
  let stat
  try {
    stat = fs.statSync(root)
  } catch (error) {
    throw new TargetError(`Claude root ${root} cannot be read: ${error.code || error.message}`)
  }
  if (!stat.isDirectory()) throw new TargetError(`Claude root ${root} is not a folder`)
  return { root, teamsDir: path.join(root, 'teams') }
}

/**
 * Previews every member of the chosen teams without side effects; returns
 * `{ teams: MemberWorkSyncTeamPreview[], problems: string[] }`. A missing root
 * throws a TargetError naming it.
 */
async function collectStatus({ claudeRoot, team }) {
  const { root, teamsDir } = openRoot(claudeRoot)
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

module.exports = { parseArgs, runStatus, collectStatus, formatTeam }

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
    runStatus(options).then(
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
