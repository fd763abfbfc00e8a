#!/usr/bin/env node
'use strict'
// The cargo that `npm run build` (scripts/build/build.js) has `napi build` run, by
// napi's own `CARGO` override: it runs the real cargo with the arguments and
// environment napi gives it, except that it keeps napi's "force a rebuild"
// variable stable from one build to the next.
//
// Why: `napi build` sets `NAPI_FORCE_BUILD_<CRATE>` to the current time
// whenever its type-definition folder for the crate (`NAPI_TYPE_DEF_TMP_FOLDER`,
// `target/napi-rs/<crate>-<hash>`) has no file for the crate yet, and leaves
// it unset otherwise; `napi-build` makes the crate's build script rerun when
// that variable changes. So the build that first fills the folder (a fresh
// clone, a new dependency graph) records a time, the next build records "unset",
// and cargo rebuilds the whole crate a second time (lto, one codegen unit:
// minutes) with nothing changed. Here the value napi set is written beside the
// folder, and a later build, for which napi sets none, passes the same value
// again: cargo then sees no change. A build whose folder lost its file still
// gets napi's new value, so the crate is still rebuilt exactly when the type
// definitions must be written again.
//
// Usage (by scripts/build/build.js only): CARGO=scripts/build/napi-cargo.js napi build ...

const fs = require('node:fs')
const { spawnSync } = require('node:child_process')

/** The crate whose variable is kept (`NAPI_FORCE_BUILD_` + upper snake case). */
const FORCE_VARIABLE = 'NAPI_FORCE_BUILD_MEMBER_WORK_SYNC'

/**
 * The environment for the real cargo: napi's, with the force variable taken
 * from (or recorded into) `<type-def folder>.force-build`.
 */
function stableEnvironment(env) {
  const out = { ...env }
  delete out.CARGO
  const folder = env.NAPI_TYPE_DEF_TMP_FOLDER
  if (!folder) return out
  const record = `${folder}.force-build`
  if (env[FORCE_VARIABLE]) {
    fs.writeFileSync(record, env[FORCE_VARIABLE])
  } else {
    let kept
    try {
      kept = fs.readFileSync(record, 'utf8').trim()
    } catch (error) {
      if (error.code !== 'ENOENT') throw error
    }
    if (kept) out[FORCE_VARIABLE] = kept
  }
  return out
}

if (require.main === module) {
  const cargo = process.env.MEMBER_WORK_SYNC_REAL_CARGO || 'cargo'
  const out = spawnSync(cargo, process.argv.slice(2), { stdio: 'inherit', env: stableEnvironment(process.env) })
  if (out.error) {
    console.error(`napi-cargo: cannot run ${cargo}: ${out.error.message}`)
    process.exit(127)
  }
  process.exit(out.status === null ? 1 : out.status)
}

module.exports = { stableEnvironment, FORCE_VARIABLE }
