#!/usr/bin/env node
// End-to-end check of the Codex turn-settled hook with the real Codex CLI
// (`npm run test:codex-e2e`; needs a built addon). The CLI comes from npm
// (`@openai/codex`, ~400 MB with its native binary) into a cached temp dir,
// or from $CODEX_E2E_BIN. It talks only to a fake Responses API on
// 127.0.0.1. Two members of team `forge` run one turn each (jack is named by
// the app's launch prompt in his session log, nia by her launch-state session
// id); an outsider's session must stay `unresolved`.
import { execFile, execFileSync } from 'node:child_process'
import { createRequire } from 'node:module'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import assert from 'node:assert/strict'

const require = createRequire(import.meta.url)
const here = path.dirname(new URL(import.meta.url).pathname)
const { MemberWorkSync } = require(path.join(here, '..', '..', 'index.js'))
const CODEX_VERSION = '0.169.0'

function codexBin() {
  if (process.env.CODEX_E2E_BIN) return process.env.CODEX_E2E_BIN
  const prefix = path.join(os.tmpdir(), `mws-codex-cli-${CODEX_VERSION}`)
  const bin = path.join(prefix, 'node_modules', '.bin', 'codex')
  if (!fs.existsSync(bin)) {
    fs.mkdirSync(prefix, { recursive: true })
    execFileSync('npm', ['install', '--prefix', prefix, '--no-audit', '--no-fund', '--loglevel=error', `@openai/codex@${CODEX_VERSION}`], { stdio: 'inherit' })
  }
  return bin
}

/** A Responses API that answers every turn with one short message. */
function fakeResponses() {
  let n = 0
  const server = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url.endsWith('/responses')) {
        res.writeHead(404).end('{}')
        return
      }
      n += 1
      const id = `resp_${n}`
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      const send = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`)
      send('response.created', { response: { id } })
      send('response.output_item.done', {
        item: { type: 'message', role: 'assistant', id: `msg_${n}`, content: [{ type: 'output_text', text: `SECRET answer ${n}` }] },
      })
      send('response.completed', { response: { id, usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } } })
      res.end()
    })
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-codex-e2e-'))
const claudeRoot = path.join(work, 'claude')
fs.cpSync(path.join(here, '..', '..', 'examples', 'claude-root'), claudeRoot, { recursive: true })
const configFile = path.join(claudeRoot, 'teams/forge/config.json')
const config = JSON.parse(fs.readFileSync(configFile, 'utf8'))
config.members.push({ name: 'nia', model: 'gpt-5-codex', agentType: 'general-purpose' })
fs.writeFileSync(configFile, JSON.stringify(config, null, 2))
const codexHome = path.join(work, 'codex-home')
const project = path.join(work, 'proj')
fs.mkdirSync(codexHome)
fs.mkdirSync(project)
process.env.CODEX_HOME = codexHome

const server = await fakeResponses()
const bin = codexBin()
const sync = new MemberWorkSync({ claudeRoot, autoStart: false })
try {
  const settings = await sync.buildRuntimeTurnSettledHookSettings({ provider: 'codex' })
  assert.ok(settings && Array.isArray(settings.config_overrides), 'codex hook settings')
  const provider = `model_providers.fake={name="fake",base_url="http://127.0.0.1:${server.address().port}/v1",wire_api="responses",env_key="OPENAI_API_KEY"}`
  const turn = async (prompt) => {
    const args = ['exec', '--skip-git-repo-check', '-m', 'gpt-5', '-c', 'model_provider=fake', '-c', provider]
    for (const item of settings.config_overrides) args.push('-c', item)
    args.push(prompt)
    const env = { PATH: process.env.PATH, HOME: work, CODEX_HOME: codexHome, OPENAI_API_KEY: 'sk-fake', NO_PROXY: '127.0.0.1' }
    // Asynchronous: the fake API answers from this very process.
    const out = await new Promise((resolve) => {
      const child = execFile(bin, args, { cwd: project, env, encoding: 'utf8', timeout: 120_000 }, (error, stdout, stderr) =>
        resolve({ status: error ? (error.code ?? 'killed') : 0, stdout, stderr }),
      )
      child.stdin.end()
    })
    assert.equal(out.status, 0, `codex exec failed: ${out.stderr}\n${out.stdout}`)
    const session = /session id: (\S+)/.exec(out.stdout + out.stderr)?.[1]
    assert.ok(session, 'codex printed its session id')
    return session
  }
  const jack = await turn('You are jack, a developer on team "Forge" (forge). Provider: codex.\nWait for tasks.')
  const nia = await turn('say hi')
  const outsider = await turn('You are zed, a developer on team "Elsewhere" (elsewhere).')
  // The app records nia's runtime session once her process is up.
  fs.writeFileSync(
    path.join(claudeRoot, 'teams/forge/launch-state.json'),
    JSON.stringify({ teamName: 'forge', members: { nia: { runtimeSessionId: nia, launchState: 'confirmed_alive' } } }),
  )

  const spool = path.join(claudeRoot, 'teams/.member-work-sync/runtime-hooks')
  const incoming = fs.readdirSync(path.join(spool, 'incoming')).filter((n) => n.endsWith('.codex.json'))
  assert.equal(incoming.length, 3, `three spooled payloads: ${incoming}`)
  const summary = await sync.drainRuntimeTurnSettledEvents()
  console.log('drain summary', JSON.stringify(summary))
  assert.deepEqual(summary, { claimed: 3, enqueued: 2, unresolved: 1, ignored: 0, invalid: 0, failed: 0 })
  const processed = path.join(spool, 'processed')
  const metas = fs
    .readdirSync(processed)
    .filter((n) => n.endsWith('.meta.json'))
    .map((n) => JSON.parse(fs.readFileSync(path.join(processed, n), 'utf8')))
  const bySession = Object.fromEntries(metas.map((m) => [m.event.sessionId, m]))
  for (const [name, session] of [['jack', jack], ['nia', nia], ['outsider', outsider]]) {
    const m = bySession[session]
    console.log(name, session, m.outcome, m.reason ?? '', m.teamName ?? '', m.memberName ?? '', m.event.transcriptPath)
  }
  assert.deepEqual([bySession[jack].outcome, bySession[jack].teamName, bySession[jack].memberName], ['enqueued', 'forge', 'jack'])
  assert.deepEqual([bySession[nia].outcome, bySession[nia].teamName, bySession[nia].memberName], ['enqueued', 'forge', 'nia'])
  assert.deepEqual([bySession[outsider].outcome, bySession[outsider].reason], ['unresolved', 'no_matching_member_session'])
  assert.ok(!JSON.stringify(metas).includes('SECRET'), 'no message text kept')
  for (const member of ['jack', 'nia']) {
    const journal = fs.readFileSync(path.join(claudeRoot, `teams/forge/members/${member}/.member-work-sync/journal.jsonl`), 'utf8')
    assert.match(journal, /turn_settled_resolved/)
  }
  console.log('codex e2e: ok')
} finally {
  sync.dispose?.()
  server.close()
  fs.rmSync(work, { recursive: true, force: true })
}
