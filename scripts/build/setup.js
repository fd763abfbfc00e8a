'use strict'
// `npm run setup` (run by `npm start` and `npm test` before they build): the
// dev dependencies, by `npm install`, unless node_modules already holds what
// package.json and package-lock.json ask for. npm records each install in
// `node_modules/.package-lock.json`, written after package-lock.json; when
// that record is newer than both files (and the build tool is there), nothing
// was asked for since and the install, which takes seconds even when it has
// nothing to do, is left out. An edited package.json, a pulled lockfile or a
// missing node_modules installs again; `npm install` always does.
//
// Usage: node scripts/build/setup.js

const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const ROOT = path.join(__dirname, '..', '..')

/** Modification time of `file` in ms, or undefined when it is absent. */
function modifiedMs(file) {
  try {
    return fs.statSync(file).mtimeMs
  } catch (error) {
    if (error.code === 'ENOENT') return undefined
    throw error
  }
}

/** Whether the last install is newer than what asks for one. */
function installIsCurrent(root = ROOT) {
  const installed = modifiedMs(path.join(root, 'node_modules', '.package-lock.json'))
  if (installed === undefined || modifiedMs(path.join(root, 'node_modules', '@napi-rs', 'cli', 'package.json')) === undefined) return false
  return ['package.json', 'package-lock.json'].every((name) => {
    const asked = modifiedMs(path.join(root, name))
    return asked === undefined || asked <= installed
  })
}

function main() {
  if (installIsCurrent()) {
    console.log('setup: node_modules is current (npm install to reinstall)')
    return
  }
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  // The `electron` dev dependency is there for its types only (the scratch
  // app of __test__/electron-app): its binary is never downloaded.
  const env = { ...process.env, ELECTRON_SKIP_BINARY_DOWNLOAD: '1' }
  const out = spawnSync(npm, ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: ROOT, stdio: 'inherit', shell: process.platform === 'win32', env })
  if (out.error || out.status !== 0) throw new Error(`npm install exited ${out.error ? out.error.message : out.status}`)
}

if (require.main === module) {
  try {
    main()
  } catch (error) {
    console.error(`setup: ${error.message}`)
    process.exitCode = 1
  }
}

module.exports = { installIsCurrent }
