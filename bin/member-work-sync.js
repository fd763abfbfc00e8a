#!/usr/bin/env node
'use strict'
// CLI: `member-work-sync status [--claude-root DIR] [--team NAME] [--json]`.
// Reconciles every member of the team(s) through the addon and prints a table per
// member. It writes nothing but the addon's own store files.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { MemberWorkSync } = require('..')

const USAGE = 'usage: member-work-sync status [--claude-root DIR] [--team NAME] [--json]'

function parseArgs(argv) {
  const [command, ...rest] = argv
  if (command !== 'status') throw new Error(USAGE)
  const options = { claudeRoot: undefined, team: undefined, json: false }
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]
    if (arg === '--json') options.json = true
    else if (arg === '--claude-root' && rest[i + 1]) options.claudeRoot = rest[++i]
    else if (arg === '--team' && rest[i + 1]) options.team = rest[++i]
    else throw new Error(`unknown argument ${arg}\n${USAGE}`)
  }
  return options
}

function defaultClaudeRoot() {
  return process.env.CLAUDE_CONFIG_DIR || path.join(os.homedir(), '.claude')
}

/** Team dirs that have a config.json, sorted. */
function listTeams(teamsDir) {
  if (!fs.existsSync(teamsDir)) return []
  return fs
    .readdirSync(teamsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && !d.name.startsWith('.'))
    .filter((d) => fs.existsSync(path.join(teamsDir, d.name, 'config.json')))
    .map((d) => d.name)
    .sort()
}

function formatTeam(teamName, statuses) {
  const lines = [`Team ${teamName}: ${statuses.length} member(s)`]
  for (const s of statuses) {
    const provider = s.providerId ? ` (${s.providerId})` : ''
    lines.push('')
    lines.push(`  ${s.memberName}${provider}: ${s.state}, ${s.agenda.items.length} actionable item(s)`)
    lines.push(`    fingerprint ${s.agenda.fingerprint}`)
    for (const item of s.agenda.items) {
      const task = (item.displayId || item.taskId).padEnd(6)
      lines.push(`    ${item.kind.padEnd(18)} ${task} ${item.reason.padEnd(30)} ${item.subject}`)
    }
    const notes = s.diagnostics.filter((d) => d !== 'agenda_empty')
    if (notes.length > 0) lines.push(`    diagnostics: ${notes.join(', ')}`)
  }
  return lines.join('\n')
}

/** Reconciles every member of the chosen teams; returns `{teamName, statuses}[]`. */
async function collectStatus({ claudeRoot, team }) {
  const root = claudeRoot || defaultClaudeRoot()
  const sync = new MemberWorkSync({ claudeRoot: root, autoStart: false })
  const teams = team ? [team] : listTeams(path.join(root, 'teams'))
  const result = []
  for (const teamName of teams) {
    result.push({ teamName, statuses: await sync.refreshTeam({ teamName }) })
  }
  return result
}

async function runStatus(options) {
  const teams = await collectStatus(options)
  if (options.json) return JSON.stringify(teams, null, 2)
  if (teams.length === 0) return 'No teams found.'
  return teams.map((t) => formatTeam(t.teamName, t.statuses)).join('\n\n')
}

module.exports = { runStatus, collectStatus, formatTeam }

if (require.main === module) {
  let options
  try {
    options = parseArgs(process.argv.slice(2))
  } catch (error) {
    console.error(error.message)
    process.exit(2)
  }
  runStatus(options).then(
    (text) => console.log(text),
    (error) => {
      console.error(`member-work-sync: ${error.code ? `${error.code}: ` : ''}${error.message}`)
      process.exit(1)
    },
  )
}
