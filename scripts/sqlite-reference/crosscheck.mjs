// Hands a database the addon wrote to the reference's own store (the downgrade direction):
// the reference's worker opens it (integrity check, migrations) without changing its schema or
// user_version, reads every row back, and its legacy importer finds nothing to repair (no
// importTeam, the rows are already in the form it would write).
//
//   MWS_SQLITE_KEEP_DB=/tmp/addon.db cargo test --test sqlite_conformance the_same_operations
//   node scripts/sqlite-reference/crosscheck.mjs --mirror DIR --deps DIR --db /tmp/addon.db
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'

import { loadReference, referenceStore, rowsOf, schemaOf } from './record.mjs'

const { values } = parseArgs({ options: { mirror: { type: 'string' }, deps: { type: 'string' }, db: { type: 'string' } } })
if (!values.mirror || !values.deps || !values.db) {
  console.error('usage: crosscheck.mjs --mirror DIR --deps DIR --db FILE')
  process.exit(2)
}
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mws-sqlite-cross-'))
const reference = await loadReference({ mirror: values.mirror, deps: values.deps, work })
const db = path.join(work, 'app.db')
fs.copyFileSync(values.db, db)
const before = (() => {
  const d = new reference.Database(db, { readonly: true })
  try {
    return { schema: schemaOf(d), rows: rowsOf(d) }
  } finally {
    d.close()
  }
})()

const { core, gateway, store } = referenceStore(reference, db)
const info = await gateway.ping()
assert.equal(info.integrity, 'ok')
let imports = 0
const counting = new Proxy(gateway, {
  get(target, prop) {
    const value = target[prop]
    if (prop === 'importTeam') return (...args) => ((imports += 1), value.apply(target, args))
    return typeof value === 'function' ? value.bind(target) : value
  },
})
const { MemberWorkSyncSqliteImporter } = reference.mod
const importer = new MemberWorkSyncSqliteImporter({
  gateway: counting,
  jsonStore: { readSnapshotForImport: async () => null, readArchivedSnapshotForImport: async () => null },
})
const teams = [...new Set(before.rows.member_work_sync_status.map((r) => r.team_name))]
for (const team of teams) await importer.ensureImported(team)
assert.equal(imports, 0, 'the reference repaired (re-imported) rows the addon wrote')
for (const team of teams) {
  const metrics = await store.readTeamMetrics(team)
  assert.equal(metrics.memberCount, before.rows.member_work_sync_status.filter((r) => r.team_name === team).length)
  assert.equal(metrics.recentEvents.length, before.rows.member_work_sync_metric_events.filter((r) => r.team_name === team).length)
  const pending = await store.listPendingReports(team)
  assert.deepEqual(
    pending.map((i) => i.id),
    before.rows.member_work_sync_report_intents.filter((r) => r.team_name === team && r.status === 'pending').map((r) => r.id).sort()
  )
}
core.close()
const after = (() => {
  const d = new reference.Database(db, { readonly: true })
  try {
    return { schema: schemaOf(d), rows: rowsOf(d) }
  } finally {
    d.close()
  }
})()
assert.deepEqual(after.schema.master, before.schema.master)
assert.equal(after.schema.userVersion, before.schema.userVersion)
assert.deepEqual(after.rows, before.rows)
fs.rmSync(work, { recursive: true, force: true })
console.log(`ok: ${teams.length} team(s); schema, user_version and rows unchanged; no repair import; ${before.rows.member_work_sync_metric_events.length} metric events read back`)
