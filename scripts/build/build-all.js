'use strict'
// `npm run build:all`: builds the addon for every platform the desktop app
// ships on, into napi-rs platform packages `npm/<platform>/`, with the native
// turn-settled hook (`hooks/native`, `turn-settled-hook-v1[.exe]`) beside each
// `.node` file, checks each binary (scripts/build/binary-checks.js) and lists the
// built packages as the main package's optionalDependencies. Nothing is
// published.
//
// The hook: linked statically against musl for all four Linux packages (one
// build per CPU, the same file in the gnu and musl package: no loader, no
// glibc floor), with zig for darwin and Windows arm64, with mingw-w64 for
// Windows x64.
//
//   linux-x64-gnu, linux-arm64-gnu   cargo-zigbuild against glibc 2.17 (`napi build -x`, target `<triple>.2.17`)
//   linux-x64-musl, linux-arm64-musl cargo-zigbuild (musl, dynamically linked as Node on Alpine needs)
//   darwin-x64, darwin-arm64         cargo-zigbuild (zig's libSystem stubs, plus .tbd stubs of the two
//                                    frameworks the addon binds, from build-support/macos-frameworks.json)
//   win32-x64-gnu                    mingw-w64 (x86_64-pc-windows-gnu), loads in the official node.exe
//   win32-arm64-msvc                 cargo-zigbuild for aarch64-pc-windows-gnullvm (zig's llvm-mingw
//                                    headers and UCRT import libraries; no MSVC linker can be had here).
//                                    Named as napi-rs names the Windows arm64 package (napi.targets lists
//                                    aarch64-pc-windows-msvc), which is where Node's usual loaders look;
//                                    like the x64 mingw build it imports only system DLLs and resolves
//                                    Node-API from node.exe at load time. `napi build -x` refuses
//                                    windows-gnu targets, so cargo-zigbuild runs directly.
//
// Tools it needs and adds when missing: node_modules (`npm run setup`), the
// Rust targets (`rustup target add`), `ziglang` and `cargo-zigbuild` (pip),
// `mingw-w64` (apt-get, as root).
// A target whose tools cannot be had is skipped and reported; a target that
// fails to build or check fails the run (exit 1).
//
// Usage: node scripts/build/build-all.js [--only <platform>[,<platform>...]]

const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { checkBinary, checkHookBinary } = require('./binary-checks.js')
const { buildHook, hookFileName, linuxHookTriple } = require('./build-hook.js')

const ROOT = path.join(__dirname, '..', '..')
const BINARY = 'member-work-sync'

/** Every shipped platform: napi-rs name, Rust triple, how it is built. */
const TARGETS = [
  { platform: 'linux-x64-gnu', triple: 'x86_64-unknown-linux-gnu', zigTarget: 'x86_64-unknown-linux-gnu.2.17', os: 'linux', cpu: 'x64', libc: 'gnu' },
  { platform: 'linux-arm64-gnu', triple: 'aarch64-unknown-linux-gnu', zigTarget: 'aarch64-unknown-linux-gnu.2.17', os: 'linux', cpu: 'arm64', libc: 'gnu' },
  { platform: 'linux-x64-musl', triple: 'x86_64-unknown-linux-musl', zigTarget: 'x86_64-unknown-linux-musl', os: 'linux', cpu: 'x64', libc: 'musl' },
  { platform: 'linux-arm64-musl', triple: 'aarch64-unknown-linux-musl', zigTarget: 'aarch64-unknown-linux-musl', os: 'linux', cpu: 'arm64', libc: 'musl' },
  { platform: 'darwin-x64', triple: 'x86_64-apple-darwin', zigTarget: 'x86_64-apple-darwin', os: 'darwin', cpu: 'x64' },
  { platform: 'darwin-arm64', triple: 'aarch64-apple-darwin', zigTarget: 'aarch64-apple-darwin', os: 'darwin', cpu: 'arm64' },
  { platform: 'win32-x64-gnu', triple: 'x86_64-pc-windows-gnu', os: 'win32', cpu: 'x64' },
  { platform: 'win32-arm64-msvc', triple: 'aarch64-pc-windows-gnullvm', zigCargo: true, os: 'win32', cpu: 'arm64' },
]

/** Whether `target` links with zig (through napi's `-x` or cargo-zigbuild directly), else with mingw-w64. */
function usesZig(target) {
  return Boolean(target.zigTarget || target.zigCargo)
}

function run(command, args, options = {}) {
  console.log(`$ ${command} ${args.join(' ')}`)
  return spawnSync(command, args, { cwd: ROOT, stdio: 'inherit', ...options })
}

/** Whether `command args` runs and exits 0 (output discarded). */
function works(command, args) {
  const out = spawnSync(command, args, { cwd: ROOT, stdio: 'ignore' })
  return !out.error && out.status === 0
}

/** zig (the `ziglang` wheel's, or one on PATH) and cargo-zigbuild, installed with pip when missing. */
function ensureZig() {
  const have = () => works('cargo-zigbuild', ['--help']) && (works('zig', ['version']) || works('python3', ['-m', 'ziglang', 'version']))
  if (have()) return null
  if (works('python3', ['-m', 'pip', '--version'])) run('python3', ['-m', 'pip', 'install', '--quiet', 'ziglang', 'cargo-zigbuild'])
  return have() ? null : 'zig / cargo-zigbuild missing (pip install ziglang cargo-zigbuild)'
}

/** The mingw-w64 linker, installed with apt-get when missing and running as root. */
function ensureMingw() {
  const have = () => works('x86_64-w64-mingw32-gcc', ['--version'])
  if (have()) return null
  if (process.getuid && process.getuid() === 0 && works('apt-get', ['--version'])) {
    run('apt-get', ['install', '-y', '-qq', 'mingw-w64'], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
  }
  return have() ? null : 'mingw-w64 missing (apt-get install mingw-w64)'
}

/** The dev dependencies (`@napi-rs/cli`), installed first in a fresh clone. */
function ensureNodeModules() {
  if (fs.existsSync(path.join(ROOT, 'node_modules', '@napi-rs', 'cli', 'package.json'))) return
  if (run('npm', ['run', 'setup']).status !== 0) throw new Error('npm run setup failed')
}

/** `napi create-npm-dirs`, then the fix napi needs for windows-gnu (see below). */
function createNpmDirs() {
  const napi = run('npx', ['napi', 'create-npm-dirs'])
  if (napi.status !== 0) throw new Error('napi create-npm-dirs failed')
  // napi marks the windows-gnu package `libc: ["glibc"]`; npm checks `libc`
  // against the running libc, which Windows has none of, so npm would skip
  // the package on every Windows machine. The field means nothing there.
  const winPackage = path.join(ROOT, 'npm', 'win32-x64-gnu', 'package.json')
  const manifest = JSON.parse(fs.readFileSync(winPackage, 'utf8'))
  delete manifest.libc
  fs.writeFileSync(winPackage, JSON.stringify(manifest, null, 2) + '\n')
  // napi's README names the triple of the package name (aarch64-pc-windows-msvc);
  // say what the binary is instead.
  for (const target of TARGETS.filter((t) => t.zigCargo)) {
    const text = [
      `# \`${BINARY}-${target.platform}\``,
      '',
      `This is the **${target.triple}** binary for \`${BINARY}\` (and its Stop hook`,
      `\`${hookFileName(target.os)}\`), under the package name napi-rs gives ${target.os}-${target.cpu}.`,
      'Like the win32-x64-gnu build it imports only system DLLs and takes Node-API',
      'from the host node.exe when it loads.',
      '',
    ]
    fs.writeFileSync(path.join(ROOT, 'npm', target.platform, 'README.md'), text.join('\n'))
  }
  // Each package ships the hook executable beside its `.node` file.
  for (const target of TARGETS) {
    const file = path.join(ROOT, 'npm', target.platform, 'package.json')
    const pkg = JSON.parse(fs.readFileSync(file, 'utf8'))
    const hook = hookFileName(target.os)
    if (!pkg.files.includes(hook)) pkg.files.push(hook)
    fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + '\n')
  }
}

/**
 * A minimal macOS SDK for zig: text stubs (.tbd, as Apple's SDK ships them)
 * of CoreFoundation and CoreServices, exporting the symbols the addon binds
 * (build-support/macos-frameworks.json), so they bind to their frameworks.
 * cargo-zigbuild searches `$SDKROOT/System/Library/Frameworks`.
 */
function macosSdkStub() {
  const sdk = path.join(ROOT, 'target', 'build-all', 'macos-sdk')
  const frameworks = JSON.parse(fs.readFileSync(path.join(ROOT, 'build-support', 'macos-frameworks.json'), 'utf8'))
  for (const name of ['CoreFoundation', 'CoreServices']) {
    const dir = path.join(sdk, 'System', 'Library', 'Frameworks', `${name}.framework`)
    fs.mkdirSync(dir, { recursive: true })
    const tbd = [
      '--- !tapi-tbd',
      'tbd-version:     4',
      'targets:         [ x86_64-macos, arm64-macos ]',
      `install-name:    '/System/Library/Frameworks/${name}.framework/Versions/A/${name}'`,
      'exports:',
      '  - targets:         [ x86_64-macos, arm64-macos ]',
      `    symbols:         [ ${frameworks[name].join(', ')} ]`,
      '...',
      '',
    ]
    // Written only when it changes: build.rs relinks when anything under SDKROOT does.
    const file = path.join(dir, `${name}.tbd`)
    const text = tbd.join('\n')
    if (!fs.existsSync(file) || fs.readFileSync(file, 'utf8') !== text) fs.writeFileSync(file, text)
  }
  return sdk
}

/** Builds `target`'s hook executable into its npm folder; returns its path. */
function buildTargetHook(target) {
  const dest = path.join(ROOT, 'npm', target.platform, hookFileName(target.os))
  const targetDir = path.join(ROOT, 'target', 'build-all', 'hook')
  if (target.os === 'linux') return buildHook({ triple: linuxHookTriple(target.cpu), zig: true, dest, targetDir })
  if (target.os === 'darwin') return buildHook({ triple: target.triple, zig: true, dest, targetDir, env: { ...process.env, SDKROOT: macosSdkStub() } })
  return buildHook({ triple: target.triple, zig: usesZig(target), dest, targetDir })
}

/**
 * Runs the hook at `file` once as Claude Code would (`sh -c`) with a payload
 * into a fresh spool; a description when it exits 0 silently and spooled
 * the payload whole, else null.
 */
function hookRunsHere(file) {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'mws-hook-'))
  try {
    fs.mkdirSync(path.join(dir, 'incoming'))
    const payload = '{"hook_event_name":"Stop"}'
    const quote = (s) => `'${s.replace(/'/g, `'\\''`)}'`
    const out = spawnSync('sh', ['-c', `${quote(file)} ${quote(dir)} claude 262144`], { input: payload })
    const names = fs.readdirSync(path.join(dir, 'incoming'))
    const ok = out.status === 0 && out.stdout.length + out.stderr.length === 0 && names.length === 1 && fs.readFileSync(path.join(dir, 'incoming', names[0]), 'utf8') === payload
    return ok ? `spools a payload here (${names[0]})` : null
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** Whether this machine runs `target`'s hook (a static Linux hook runs on any libc). */
function hookIsHost(target) {
  return target.os === process.platform && target.cpu === process.arch
}

/**
 * `cargo zigbuild` of the addon's library for `target` (a windows-gnullvm
 * triple, which `napi build -x` refuses); returns the built DLL's path.
 */
function zigCargoBuild(target) {
  const args = ['zigbuild', '--release', '--lib', '--package', BINARY, '--target', target.triple]
  const out = run('cargo', args)
  if (out.status !== 0) throw new Error(`cargo zigbuild for ${target.platform} exited ${out.status}`)
  return path.join(ROOT, 'target', target.triple, 'release', `${BINARY.replace(/-/g, '_')}.dll`)
}

/** Builds `target` into its npm folder; returns the binary's path. */
function build(target) {
  const file = `${BINARY}.${target.platform}.node`
  const dest = path.join(ROOT, 'npm', target.platform, file)
  if (target.zigCargo) {
    fs.copyFileSync(zigCargoBuild(target), dest)
    return dest
  }
  const outDir = path.join(ROOT, 'target', 'build-all', target.platform)
  fs.rmSync(outDir, { recursive: true, force: true })
  fs.mkdirSync(outDir, { recursive: true })
  const args = ['napi', 'build', '--platform', '--release', '--strip', '--no-js', '--package', 'member-work-sync', '--output-dir', outDir]
  if (target.zigTarget) args.push('--cross-compile', '--target', target.zigTarget)
  else args.push('--target', target.triple)
  const env = target.os === 'darwin' ? { ...process.env, SDKROOT: macosSdkStub() } : process.env
  const out = run('npx', args, { env })
  if (out.status !== 0) throw new Error(`napi build for ${target.platform} exited ${out.status}`)
  fs.copyFileSync(path.join(outDir, file), dest)
  return dest
}

/** Lists the built platform packages as optionalDependencies, at this version. */
function writeOptionalDependencies(platforms) {
  const file = path.join(ROOT, 'package.json')
  const manifest = JSON.parse(fs.readFileSync(file, 'utf8'))
  manifest.optionalDependencies = Object.fromEntries(platforms.map((p) => [`${BINARY}-${p}`, manifest.version]))
  fs.writeFileSync(file, JSON.stringify(manifest, null, 2) + '\n')
  // Keeps package-lock.json's root entry in step (npm resolves nothing for an unpublished optional package).
  run('npm', ['install', '--package-lock-only', '--no-audit', '--no-fund', '--loglevel=error'])
}

/** Whether this machine runs `target` (then its binary is loaded, not just inspected). */
function isHost(target) {
  const glibc = process.report && process.report.getReport().header.glibcVersionRuntime
  return target.os === process.platform && target.cpu === process.arch && (target.os !== 'linux' || (target.libc === 'gnu') === Boolean(glibc))
}

/** What loading `file` in a fresh Node on this machine exports; null if it does not load. */
function loadsHere(file) {
  const script = `const m = require(${JSON.stringify(file)}); process.stdout.write(typeof m.MemberWorkSync)`
  const out = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' })
  const glibc = process.report && process.report.getReport().header.glibcVersionRuntime
  return out.status === 0 && out.stdout === 'function' ? `loads in Node ${process.version} here${glibc ? ` (glibc ${glibc})` : ''}` : null
}

/** `PE arm64 (machine 0xaa64)`, `ELF x64`, ... */
function formatAndCpu(found) {
  return `${found.format} ${found.cpu}${found.machine ? ` (machine ${found.machine})` : ''}`
}

function describeHook(found) {
  const parts = [formatAndCpu(found), `${(found.bytes / 1024).toFixed(0)} KiB`]
  if (found.linkage) parts.push(found.linkage)
  if (found.needed && found.needed.length) parts.push(`needs ${found.needed.join(' ')}`)
  if (found.ranHere) parts.push(found.ranHere)
  return parts.join(', ')
}

function describe(found) {
  const parts = [formatAndCpu(found), `${(found.bytes / 1048576).toFixed(1)} MiB`, `exports napi_register_module_v1: ${found.exported ? 'yes' : 'NO'}`]
  if (found.glibc !== undefined) parts.push(found.glibc ? `newest glibc symbol GLIBC_${found.glibc}` : 'no glibc symbol versions')
  if (found.needed) parts.push(`needs ${found.needed.join(' ')}`)
  if (found.loadedHere) parts.push(found.loadedHere)
  if (found.frameworks) parts.push(`links frameworks ${found.frameworks.join(' ')}, CF/FSEvents symbols bound two-level`)
  return parts.join(', ')
}

function main() {
  const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1].split(',') : null
  const targets = only ? TARGETS.filter((t) => only.includes(t.platform)) : TARGETS
  if (only && targets.length !== only.length) throw new Error(`unknown platform in --only ${only.join(',')}; known: ${TARGETS.map((t) => t.platform).join(', ')}`)

  ensureNodeModules()
  const rustup = run('rustup', ['target', 'add', ...targets.map((t) => t.triple)])
  if (rustup.status !== 0) throw new Error('rustup target add failed')
  const missing = {}
  if (targets.some(usesZig)) missing.zig = ensureZig()
  if (targets.some((t) => !usesZig(t))) missing.mingw = ensureMingw()
  createNpmDirs()

  const results = []
  for (const target of targets) {
    const lacking = usesZig(target) ? missing.zig : missing.mingw
    if (lacking) {
      results.push({ target, outcome: 'skipped', detail: lacking })
      continue
    }
    try {
      const file = build(target)
      const { found, problems } = checkBinary(file, target)
      if (!problems.length && isHost(target)) {
        const loaded = loadsHere(file)
        if (loaded) found.loadedHere = loaded
        else problems.push(`does not load in this machine's Node ${process.version}`)
      }
      results.push({ target, outcome: problems.length ? 'failed' : 'built', detail: problems.length ? problems.join('; ') : describe(found), file })
    } catch (error) {
      results.push({ target, outcome: 'failed', detail: error.message })
    }
    try {
      const file = buildTargetHook(target)
      const { found, problems } = checkHookBinary(file, target)
      if (!problems.length && hookIsHost(target)) {
        const ran = hookRunsHere(file)
        if (ran) found.ranHere = ran
        else problems.push('does not spool a payload on this machine')
      }
      results.push({ target, hook: true, outcome: problems.length ? 'failed' : 'built', detail: problems.length ? problems.join('; ') : describeHook(found), file })
    } catch (error) {
      results.push({ target, hook: true, outcome: 'failed', detail: `hook: ${error.message}` })
    }
  }

  // A platform package is built when its addon and its hook are.
  const built = TARGETS.filter((t) => results.some((r) => r.target === t) && results.filter((r) => r.target === t).every((r) => r.outcome === 'built')).map((t) => t.platform)
  // With --only the other platforms keep the packages an earlier full run built.
  const listed = only ? TARGETS.filter((t) => built.includes(t.platform) || fs.existsSync(path.join(ROOT, 'npm', t.platform, `${BINARY}.${t.platform}.node`))).map((t) => t.platform) : built
  writeOptionalDependencies(listed)

  console.log('\nbuild:all summary')
  for (const { target, hook, outcome, detail, file } of results) {
    console.log(`  ${(hook ? '  + hook' : target.platform).padEnd(17)} ${outcome.padEnd(8)} ${detail}${file ? `\n  ${''.padEnd(17)} ${''.padEnd(8)} ${path.relative(ROOT, file)}` : ''}`)
  }
  console.log(`  optionalDependencies: ${listed.map((p) => `${BINARY}-${p}`).join(', ') || 'none'}`)
  if (results.some((r) => r.outcome === 'failed')) process.exitCode = 1
}

if (require.main === module) {
  try {
    main()
  } catch (error) {
    console.error(`build:all: ${error.message}`)
    process.exitCode = 1
  }
}

module.exports = { TARGETS, build, buildTargetHook, createNpmDirs, ensureMingw, ensureNodeModules, isHost, run, works }
