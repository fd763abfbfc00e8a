'use strict'
// `npm run test:packed`: installs the package as an app gets it, from the
// tarballs `npm pack` makes, with npm and with pnpm, and runs
// scripts/check/packed-smoke.js in each scratch app (load, `member-work-sync/lazy`,
// ES module import, `refreshStatus` on a temp root, the hook executable from
// the platform package).
//
// The main package is packed as it would be published: its tarball, with
// every platform package built under npm/ listed in optionalDependencies
// (what `build:all` writes into package.json), packed again. None is
// published, so the scratch app overrides platform names with their packed
// tarballs and installs with `--offline`: no registry is asked for anything.
// npm (`overrides`, every platform): npm itself picks the package whose `os` /
// `cpu` / `libc` match and skips the others, as it would for published ones.
// pnpm (`pnpm.overrides`, the host's platform only): pnpm 9 does not check
// `os` / `cpu` of a `file:` tarball (it installed win32-arm64-msvc here too),
// so the other names stay unresolved and, being optional, are left out,
// which is also what pnpm does with a platform package it cannot fetch.
// When the host's platform package has not been built, this runs `build:all
// --only <host>` first. pnpm 9 runs through `npx pnpm@9` (fetched
// from the npm registry when not cached). Everything lives under
// target/packed-install/.
//
// Usage: node scripts/check/packed-install-check.js

const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { TARGETS, isHost, run } = require('../build/build-all.js')
const { hookFileName } = require('../build/build-hook.js')

const ROOT = path.join(__dirname, '..', '..')
const WORK = path.join(ROOT, 'target', 'packed-install')
const PACKS = path.join(WORK, 'packs')
const PNPM = 'pnpm@9'

function must(result, what) {
  if (result.error || result.status !== 0) throw new Error(`${what} failed${result.error ? `: ${result.error.message}` : ` (exit ${result.status})`}`)
  return result
}

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'))
}

/** Whether `npm/<platform>/` holds a built binary and hook. */
function built(target) {
  const dir = path.join(ROOT, 'npm', target.platform)
  return fs.existsSync(path.join(dir, `member-work-sync.${target.platform}.node`)) && fs.existsSync(path.join(dir, hookFileName(target.os)))
}

/** `npm pack dir` into PACKS; the tarball's path and its file list. */
function pack(dir) {
  const out = must(spawnSync('npm', ['pack', dir, '--pack-destination', PACKS, '--json', '--loglevel=error'], { cwd: ROOT, encoding: 'utf8' }), `npm pack ${dir}`)
  const [packed] = JSON.parse(out.stdout)
  return { tarball: path.join(PACKS, packed.filename), files: packed.files.map((f) => f.path) }
}

/**
 * The main package's tarball with `optionalDependencies` naming `platforms`
 * at its version: `npm pack` of the repository, unpacked, the field set,
 * packed again.
 */
function packMain(platforms) {
  const first = pack(ROOT)
  const stage = path.join(WORK, 'stage')
  fs.rmSync(stage, { recursive: true, force: true })
  fs.mkdirSync(stage, { recursive: true })
  must(run('tar', ['-xzf', first.tarball, '-C', stage, '--strip-components=1']), 'unpacking the main tarball')
  fs.rmSync(first.tarball)
  const file = path.join(stage, 'package.json')
  const manifest = readJson(file)
  manifest.optionalDependencies = Object.fromEntries(platforms.map((t) => [`member-work-sync-${t.platform}`, manifest.version]))
  fs.writeFileSync(file, JSON.stringify(manifest, null, 2) + '\n')
  return pack(stage)
}

/** A scratch app in `WORK/<manager>` depending on the main tarball, platform names overridden by their tarballs (pnpm: the host's only). */
function scratchApp(manager, mainTarball, platformTarballs, host) {
  const app = path.join(WORK, manager)
  fs.rmSync(app, { recursive: true, force: true })
  fs.mkdirSync(app, { recursive: true })
  const overrides = Object.fromEntries(Object.entries(platformTarballs).map(([name, file]) => [name, `file:${file}`]))
  const manifest = { name: `scratch-app-${manager}`, version: '1.0.0', private: true, dependencies: { 'member-work-sync': `file:${mainTarball}` } }
  if (manager === 'npm') manifest.overrides = overrides
  else manifest.pnpm = { overrides: { [`member-work-sync-${host.platform}`]: overrides[`member-work-sync-${host.platform}`] } }
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify(manifest, null, 2) + '\n')
  fs.copyFileSync(path.join(__dirname, 'packed-smoke.js'), path.join(app, 'smoke.js'))
  fs.cpSync(path.join(ROOT, 'examples', 'claude-root'), path.join(app, 'claude-root'), { recursive: true })
  return app
}

/** The `member-work-sync*` packages a scratch app's install put under node_modules (top level, and pnpm's store). */
function installedPackages(app) {
  const top = fs.readdirSync(path.join(app, 'node_modules')).filter((n) => n.startsWith('member-work-sync'))
  const store = path.join(app, 'node_modules', '.pnpm')
  const virtual = fs.existsSync(store) ? fs.readdirSync(store).filter((n) => n.startsWith('member-work-sync')) : []
  return { top, virtual }
}

/** Installs the scratch app with `manager`, runs the smoke test; returns a summary line. */
function installAndSmoke(manager, mainTarball, platformTarballs, host) {
  const app = scratchApp(manager, mainTarball, platformTarballs, host)
  const install =
    manager === 'npm'
      ? ['npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error']]
      : ['npx', ['--yes', PNPM, 'install', '--offline', '--store-dir', path.join(WORK, 'pnpm-store')]]
  must(run(install[0], install[1], { cwd: app }), `${manager} install`)
  const version = spawnSync(manager === 'npm' ? 'npm' : 'npx', manager === 'npm' ? ['--version'] : ['--yes', PNPM, '--version'], { cwd: app, encoding: 'utf8' }).stdout.trim()
  const installed = installedPackages(app)
  const hostName = `member-work-sync-${host.platform}`
  const others = [...installed.top, ...installed.virtual].filter((n) => n.startsWith('member-work-sync-') && n !== hostName && !n.startsWith(`${hostName}@`))
  if (others.length) throw new Error(`${manager} installed platform packages for other machines: ${others.join(', ')}`)
  if (![...installed.top, ...installed.virtual].some((n) => n === hostName || n.startsWith(`${hostName}@`))) throw new Error(`${manager} did not install ${hostName}`)
  const smoke = spawnSync(process.execPath, ['smoke.js'], { cwd: app, encoding: 'utf8' })
  process.stdout.write(smoke.stdout)
  process.stderr.write(smoke.stderr)
  must(smoke, `the smoke test in the ${manager} app`)
  const lines = smoke.stdout.trim().split('\n')
  const result = JSON.parse(lines[lines.length - 1])
  const where = installed.virtual.length ? `, store entries ${installed.virtual.join(' ')}` : ''
  const skipped = Object.keys(platformTarballs).filter((n) => n !== hostName)
  return `${manager} ${version}: left out ${skipped.join(' ') || 'none'}; installed ${installed.top.join(' ')}${where}; loaded ${result.loaded}; refreshStatus: ${result.refreshStatus}; hook ${result.hook}`
}

function main() {
  const host = TARGETS.find(isHost)
  if (!host) throw new Error(`no platform package for this machine (${process.platform}-${process.arch})`)
  if (!built(host)) must(run(process.execPath, [path.join(__dirname, '..', 'build', 'build-all.js'), '--only', host.platform]), `build:all --only ${host.platform}`)
  fs.rmSync(PACKS, { recursive: true, force: true })
  fs.mkdirSync(PACKS, { recursive: true })
  const platforms = TARGETS.filter(built)
  const main = packMain(platforms)
  const binaries = main.files.filter((f) => f.endsWith('.node'))
  if (binaries.length) throw new Error(`npm pack of the main package holds binaries: ${binaries.join(', ')}`)
  const platformTarballs = Object.fromEntries(platforms.map((t) => [`member-work-sync-${t.platform}`, pack(path.join(ROOT, 'npm', t.platform)).tarball]))
  console.log(`packed ${path.basename(main.tarball)} (${main.files.length} files, no .node) and ${Object.values(platformTarballs).map((f) => path.basename(f)).join(', ')}`)

  const results = ['npm', 'pnpm'].map((manager) => installAndSmoke(manager, main.tarball, platformTarballs, host))
  console.log('\npacked install summary')
  for (const line of results) console.log(`  ${line}`)
}

try {
  main()
} catch (error) {
  console.error(`test:packed: ${error.message}`)
  process.exitCode = 1
}
