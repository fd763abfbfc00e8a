// What an Electron app's packaged layout means for the addon: the lazy entry
// (`member-work-sync/lazy`) when no native binary is there, and the Stop hook
// when the platform package is unpacked from app.asar with or without its
// executable (README, "Electron packaging").
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import { TURN_SETTLED_HOOK_MARKER } from '../index.js'
import { tempDir } from './helpers'

const ROOT = path.join(__dirname, '..')
/** The host's binary `npm run build` leaves in the package root, and its platform name. */
const HOST_BINARY = fs.readdirSync(ROOT).find((f) => /^member-work-sync\.[\w-]+\.node$/.test(f))!
const HOST_PLATFORM = HOST_BINARY.slice('member-work-sync.'.length, -'.node'.length)
const HOOK = process.platform === 'win32' ? 'turn-settled-hook-v1.exe' : 'turn-settled-hook-v1'
const FALLBACK_LOG = 'turn-settled hook executable not used, the sh script runs instead: '

/** Runs `script` (CommonJS, or an ES module with `esm`) in a fresh Node in `cwd`; parses its last stdout line. */
function runNode(cwd: string, script: string, esm = false) {
  const args = esm ? ['--input-type=module', '-e', script] : ['-e', script]
  const out = spawnSync(process.execPath, args, { cwd, encoding: 'utf8' })
  expect(out.status, out.stderr).toBe(0)
  const lines = out.stdout.trim().split('\n')
  return { result: JSON.parse(lines[lines.length - 1]), stderr: out.stderr }
}

/** A folder outside the repository holding the package's JavaScript and no binary. */
function packageWithoutBinary(): string {
  const dir = tempDir('mws-lazy-')
  for (const file of ['index.js', 'lazy.js', 'package.json']) fs.copyFileSync(path.join(ROOT, file), path.join(dir, file))
  return dir
}

describe('member-work-sync/lazy', () => {
  const probe = `
    const { loadMemberWorkSync } = require('./lazy.js')
    const result = { imported: typeof loadMemberWorkSync }
    const pending = loadMemberWorkSync()
    result.isPromise = pending instanceof Promise
    pending.then(
      (m) => console.log(JSON.stringify({ ...result, loaded: typeof m.MemberWorkSync })),
      (e) => console.log(JSON.stringify({ ...result, code: e.code, message: e.message })),
    )`

  it('without a native binary, importing it succeeds and loading rejects with MWS_NO_NATIVE_BINARY', () => {
    const dir = packageWithoutBinary()
    // The main entry itself throws at import there: what the lazy entry exists to avoid.
    const eager = spawnSync(process.execPath, ['-e', "require('./index.js')"], { cwd: dir, encoding: 'utf8' })
    expect(eager.status).not.toBe(0)
    expect(eager.stderr).toContain('MWS_NO_NATIVE_BINARY')

    const { result } = runNode(dir, probe)
    expect(result.imported).toBe('function')
    expect(result.isPromise).toBe(true)
    expect(result.code).toBe('MWS_NO_NATIVE_BINARY')
    expect(result.message).toContain(`no native binary loaded for platform ${HOST_PLATFORM}`)
    expect(result.message).toContain(`the package member-work-sync-${HOST_PLATFORM}`)
  })

  it('an ES module imports it by name without a binary, and the load rejects', () => {
    const dir = packageWithoutBinary()
    const script = `
      import { loadMemberWorkSync } from './lazy.js'
      loadMemberWorkSync().then(
        () => console.log(JSON.stringify({ loaded: true })),
        (e) => console.log(JSON.stringify({ code: e.code })),
      )`
    expect(runNode(dir, script, true).result).toEqual({ code: 'MWS_NO_NATIVE_BINARY' })
  })

  it('a failed load is not remembered: once the binary is there, the next call resolves to the module', () => {
    const dir = packageWithoutBinary()
    const script = `
      const fs = require('node:fs')
      const { loadMemberWorkSync } = require('./lazy.js')
      loadMemberWorkSync()
        .catch((e) => {
          fs.copyFileSync(${JSON.stringify(path.join(ROOT, HOST_BINARY))}, ${JSON.stringify(path.join(dir, HOST_BINARY))})
          return Promise.all([e.code, loadMemberWorkSync(), loadMemberWorkSync()])
        })
        .then(([first, a, b]) => console.log(JSON.stringify({
          first, same: a === b && a === require('./index.js'), ctor: typeof a.MemberWorkSync,
        })))`
    expect(runNode(dir, script).result).toEqual({ first: 'MWS_NO_NATIVE_BINARY', same: true, ctor: 'function' })
  })

  it('in the package root it resolves to the module the main entry exports', async () => {
    const { loadMemberWorkSync } = await import('../lazy.js')
    const loaded = await loadMemberWorkSync()
    const main = await import('../index.js')
    expect(loaded.MemberWorkSync).toBe(main.MemberWorkSync)
  })
})

/**
 * An Electron app's resources folder as electron-builder or Forge leaves it:
 * `app.asar` (the archive, a file) and `app.asar.unpacked/node_modules/`
 * holding the main package and the host's platform package, with or without
 * the hook executable beside the `.node` file.
 */
function unpackedApp(withHook: boolean) {
  const resources = tempDir('mws-asar-')
  fs.writeFileSync(path.join(resources, 'app.asar'), 'stand-in for the archive')
  const modules = path.join(resources, 'app.asar.unpacked', 'node_modules')
  const main = path.join(modules, 'member-work-sync')
  fs.mkdirSync(main, { recursive: true })
  for (const file of ['index.js', 'lazy.js', 'package.json']) fs.copyFileSync(path.join(ROOT, file), path.join(main, file))
  const platform = path.join(modules, `member-work-sync-${HOST_PLATFORM}`)
  fs.mkdirSync(platform)
  const binary = `member-work-sync.${HOST_PLATFORM}.node`
  fs.writeFileSync(path.join(platform, 'package.json'), JSON.stringify({ name: `member-work-sync-${HOST_PLATFORM}`, version: '0.1.0', main: binary }))
  fs.copyFileSync(path.join(ROOT, HOST_BINARY), path.join(platform, binary))
  if (withHook) fs.copyFileSync(path.join(ROOT, HOOK), path.join(platform, HOOK))
  return { resources, platform, claudeRoot: tempDir('mws-asar-root-') }
}

/** In a fresh Node started in `resources`: loads the package from app.asar.unpacked, builds the Claude hook settings. */
function claudeHookSettings(app: ReturnType<typeof unpackedApp>) {
  const script = `
    const { MemberWorkSync } = require('./app.asar.unpacked/node_modules/member-work-sync')
    const loaded = Object.keys(require.cache).find((f) => f.endsWith('.node'))
    const logged = []
    const sync = new MemberWorkSync({ claudeRoot: ${JSON.stringify(app.claudeRoot)}, autoStart: false, onLog: (entry) => logged.push(entry) })
    sync.buildRuntimeTurnSettledHookSettings({ provider: 'claude' })
      .then((settings) => sync.dispose().then(() => console.log(JSON.stringify({ loaded, logged, command: settings.hooks.Stop[0].hooks[0].command }))))`
  return runNode(app.resources, script)
}

describe('Electron packaging: the platform package unpacked from app.asar', () => {
  it('without the hook executable beside the .node file, the settings run the sh script and the reason is logged', () => {
    const app = unpackedApp(false)
    const { result, stderr } = claudeHookSettings(app)
    expect(result.loaded).toBe(path.join(app.platform, `member-work-sync.${HOST_PLATFORM}.node`))
    const bin = path.join(app.claudeRoot, 'teams', '.member-work-sync', 'runtime-hooks', 'bin')
    const spoolRoot = path.dirname(bin)
    expect(result.command).toBe(`/bin/sh '${path.join(bin, 'turn-settled-hook-v1.sh')}' '${spoolRoot}' 'claude' '262144' # ${TURN_SETTLED_HOOK_MARKER}`)
    expect(fs.existsSync(path.join(bin, 'turn-settled-hook-v1'))).toBe(false)
    // Once per process, to onLog (a packaged app has no visible stderr): the
    // path it looked at, in app.asar.unpacked.
    expect(result.logged).toEqual([
      { level: 'warn', code: 'MWS_LOG_HOOK_SCRIPT_FALLBACK', message: `${FALLBACK_LOG}${path.join(app.platform, HOOK)}: not shipped` },
    ])
    expect(stderr).toBe('')
  })

  it('with the hook executable unpacked beside it, the settings run the executable and nothing is logged', () => {
    const app = unpackedApp(true)
    const { result, stderr } = claudeHookSettings(app)
    const bin = path.join(app.claudeRoot, 'teams', '.member-work-sync', 'runtime-hooks', 'bin')
    expect(result.command).toBe(`'${path.join(bin, HOOK)}' '${path.dirname(bin)}' 'claude' '262144' # ${TURN_SETTLED_HOOK_MARKER}`)
    expect(fs.readFileSync(path.join(bin, HOOK))).toEqual(fs.readFileSync(path.join(app.platform, HOOK)))
    expect(result.logged).toEqual([])
    expect(stderr).toBe('')
  })
})
