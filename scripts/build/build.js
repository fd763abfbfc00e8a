'use strict'
// `npm run build`: the addon for this machine (`member-work-sync.<platform>.node`
// and `index.d.ts`, by `napi build`) and the native Stop hook beside it
// (scripts/build/build-hook.js). Run again with nothing changed, it compiles nothing:
// on POSIX `napi build` runs cargo through scripts/build/napi-cargo.js, which keeps
// napi's force-rebuild variable stable between builds (see there why).
// `npm run build:all` builds the shipped platform packages separately.
//
// Usage: node scripts/build/build.js

const path = require('node:path')
const { spawnSync } = require('node:child_process')

const ROOT = path.join(__dirname, '..', '..')
/** The dev loop's profile (Cargo.toml `dev-release`); `build:all` ships `release`. */
const NAPI_ARGS = ['build', '--platform', '--profile', 'dev-release', '--strip', '--no-js', '--package', 'member-work-sync']

function buildAddon() {
  const env = { ...process.env }
  // napi spawns `CARGO` without a shell: a script runs only where the system
  // honours its `#!` line. Windows builds run cargo directly.
  if (process.platform !== 'win32') {
    if (env.CARGO) env.MEMBER_WORK_SYNC_REAL_CARGO = env.CARGO
    env.CARGO = path.join(__dirname, 'napi-cargo.js')
  }
  const napi = require.resolve('@napi-rs/cli/package.json', { paths: [ROOT] })
  const bin = path.join(path.dirname(napi), 'dist', 'cli.js')
  console.log(`$ napi ${NAPI_ARGS.join(' ')}`)
  const out = spawnSync(process.execPath, [bin, ...NAPI_ARGS], { cwd: ROOT, stdio: 'inherit', env })
  if (out.error || out.status !== 0) throw new Error(`napi build exited ${out.error ? out.error.message : out.status}`)
}

function main() {
  buildAddon()
  require('./build-hook').main()
}

if (require.main === module) {
  try {
    main()
  } catch (error) {
    console.error(`build: ${error.message}`)
    process.exitCode = 1
  }
}
