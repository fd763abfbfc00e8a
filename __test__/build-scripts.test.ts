import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { tempDir } from './helpers'

const NAPI_CARGO = path.join(__dirname, '..', 'scripts', 'build', 'napi-cargo.js')
const FORCE = 'NAPI_FORCE_BUILD_MEMBER_WORK_SYNC'

/**
 * Runs scripts/build/napi-cargo.js as `napi build` runs it, with `sh -c <script>`
 * (through env) in place of the real cargo, and the given variables.
 */
function napiCargo(env: Record<string, string | undefined>, script = `printf %s "$${FORCE}"`) {
  const base = { ...process.env, MEMBER_WORK_SYNC_REAL_CARGO: 'env' }
  delete base[FORCE]
  delete base.NAPI_TYPE_DEF_TMP_FOLDER
  const out = spawnSync(process.execPath, [NAPI_CARGO, 'sh', '-c', script], { env: { ...base, ...env }, encoding: 'utf8' })
  return { code: out.status, stdout: out.stdout, stderr: out.stderr }
}

describe('scripts/build/napi-cargo.js', () => {
  it("keeps napi's force-rebuild value for the builds after the one that set it", () => {
    const folder = path.join(tempDir('napi-cargo-'), 'member-work-sync-0123')
    // (napi sets the variable to, cargo sees)
    const builds: [string | undefined, string][] = [
      ['1700000000000', '1700000000000'], // the folder had no file for the crate: napi forces, the value is recorded
      [undefined, '1700000000000'], // a later build: napi sets nothing, cargo sees the same value, so no rebuild
      [undefined, '1700000000000'],
      ['1700000000999', '1700000000999'], // the folder lost its file: napi forces again
      [undefined, '1700000000999'],
    ]
    for (const [napiSets, cargoSees] of builds) {
      expect(napiCargo({ NAPI_TYPE_DEF_TMP_FOLDER: folder, [FORCE]: napiSets })).toEqual({ code: 0, stdout: cargoSees, stderr: '' })
    }
    expect(fs.readFileSync(`${folder}.force-build`, 'utf8')).toBe('1700000000999')
  })

  it('passes the environment through without a type-def folder, and cargo exit status back', () => {
    expect(napiCargo({})).toEqual({ code: 0, stdout: '', stderr: '' })
    expect(napiCargo({}, 'printf %s "${CARGO-unset}"').stdout).toBe('unset')
    expect(napiCargo({}, 'exit 3').code).toBe(3)
  })
})
