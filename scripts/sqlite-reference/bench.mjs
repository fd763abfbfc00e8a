// Benchmark, ratios within one run: status write+read and outbox claim+deliver per second of the
// addon's SQLite store in direct mode, against the addon's JSON store and against the reference's
// own SQLite store (bundled from the mirror by record.mjs, its worker core on better-sqlite3 12,
// in this process), on the same machine, rounds interleaved.
//
// Each side, in each round, on a fresh database or folder: n status writes (each a status with
// its metric events; the JSON store's status port writes status.json only, metrics.json is another
// port) each followed by a read of that status; then n items ensured (untimed) and n cycles of a
// claim of one item and its markDelivered. The addon's sides run in examples/sqlite_peer.rs (one
// process each, timed inside it); the reference's inside this process.
//
//   cargo build --profile dev-release --example sqlite_peer
//   node scripts/sqlite-reference/bench.mjs --mirror DIR --deps DIR [--n 300] [--rounds 3] [--peer FILE]
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

import { ensureInput, status } from './load.mjs'
import { loadReference, referenceStore } from './record.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const REPO = path.join(here, '..', '..')
const NOW = Date.parse('2026-07-07T10:00:00.000Z')
const NOW_ISO = new Date(NOW).toISOString()
const MEMBERS = ['alice', 'bob', 'carol', 'dave', 'erin']

async function referenceBench(reference, dir, n) {
  const { core, gateway, store } = referenceStore(reference, path.join(dir, 'app.db'))
  await gateway.ping()
  let started = process.hrtime.bigint()
  for (let i = 0; i < n; i++) {
    const member = MEMBERS[i % 5]
    await store.write(status('bench', member, new Date(NOW - 3_600_000 + i).toISOString(), i))
    await store.read({ teamName: 'bench', memberName: member })
  }
  const statusSecs = Number(process.hrtime.bigint() - started) / 1e9
  for (let i = 0; i < n; i++) await store.ensurePending(ensureInput('bench', MEMBERS[i % 5], `bench-${i}`, NOW_ISO))
  started = process.hrtime.bigint()
  let cycles = 0
  for (;;) {
    const [item] = await store.claimDue({ teamName: 'bench', claimedBy: 'bench', nowIso: NOW_ISO, limit: 1 })
    if (!item) break
    await store.markDelivered({ teamName: 'bench', id: item.id, attemptGeneration: item.attemptGeneration, deliveredMessageId: item.id, nowIso: NOW_ISO })
    cycles++
  }
  const outboxSecs = Number(process.hrtime.bigint() - started) / 1e9
  core.close()
  if (cycles !== n) throw new Error(`reference: ${cycles} of ${n} claimed and delivered`)
  return { statusPerSec: n / statusSecs, outboxPerSec: n / outboxSecs }
}

function peerBench(peer, spec) {
  const out = execFileSync(peer, ['bench', JSON.stringify(spec)], { encoding: 'utf8' })
  return JSON.parse(out.trim().split('\n').pop())
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

async function main() {
  const { values } = parseArgs({
    options: { mirror: { type: 'string' }, deps: { type: 'string' }, n: { type: 'string' }, rounds: { type: 'string' }, peer: { type: 'string' } },
  })
  if (!values.mirror || !values.deps) {
    console.error('usage: bench.mjs --mirror DIR --deps DIR [--n 300] [--rounds 3] [--peer FILE]')
    process.exit(2)
  }
  const n = Number(values.n ?? 300)
  const rounds = Number(values.rounds ?? 3)
  const peer = values.peer ?? path.join(REPO, 'target', 'dev-release', 'examples', 'sqlite_peer')
  if (!fs.existsSync(peer)) throw new Error(`${peer} is missing: cargo build --profile dev-release --example sqlite_peer`)
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-sqlite-bench-'))
  const reference = await loadReference({ mirror: values.mirror, deps: values.deps, work })
  const results = { sqlite: [], json: [], reference: [] }
  const loadBefore = os.loadavg()
  for (let r = 0; r < rounds; r++) {
    const dir = (name) => fs.mkdtempSync(path.join(work, `${name}-`))
    results.sqlite.push(peerBench(peer, { store: 'sqlite', db: path.join(dir('sqlite'), 'app.db'), team: 'bench', now: NOW, n }))
    results.reference.push(await referenceBench(reference, dir('reference'), n))
    results.json.push(peerBench(peer, { store: 'json', teams: path.join(dir('json'), 'teams'), team: 'bench', now: NOW, n }))
  }
  const loadAfter = os.loadavg()
  const m = (side, key) => median(results[side].map((x) => x[key]))
  console.log(`bench: n ${n}, ${rounds} rounds interleaved, ${os.cpus().length} cpus, load average before ${loadBefore.map((x) => x.toFixed(2)).join(' ')}, after ${loadAfter.map((x) => x.toFixed(2)).join(' ')}`)
  console.log(`peer: ${path.relative(REPO, peer)}; reference ${reference.commit.slice(0, 12)} on better-sqlite3`)
  for (const key of ['statusPerSec', 'outboxPerSec']) {
    const label = key === 'statusPerSec' ? 'status write+read /s' : 'outbox claim+deliver /s'
    const sqlite = m('sqlite', key)
    const json = m('json', key)
    const ref = m('reference', key)
    console.log(
      `  ${label.padEnd(24)} addon sqlite ${sqlite.toFixed(0)}, addon json ${json.toFixed(0)}, reference sqlite ${ref.toFixed(0)}; ` +
        `addon sqlite / json ${(sqlite / json).toFixed(2)}, addon sqlite / reference ${(sqlite / ref).toFixed(2)}`
    )
    console.log(
      `    per round: ${results.sqlite.map((x, i) => `[${x[key].toFixed(0)} ${results.json[i][key].toFixed(0)} ${results.reference[i][key].toFixed(0)}]`).join(' ')} (sqlite json reference)`
    )
  }
  fs.rmSync(work, { recursive: true, force: true })
}

await main()
