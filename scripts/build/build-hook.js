'use strict'
// Builds the native turn-settled hook (`hooks/native`, the executable
// `turn-settled-hook-v1`) and puts it where the addon looks for it: beside
// its `.node` file. `npm run build` runs this for the host, into the package
// root; `npm run build:all` uses `buildHook` for every platform package.
//
// On Linux the hook is linked statically against musl (no dynamic loader to
// run at start: through `sh -c` it costs about 1.4x a bare `sh -c :` here
// against 2.3x dynamically linked against glibc, and it needs no glibc at
// all), for glibc and musl systems alike. Where the musl target is not
// installed (`rustup target add x86_64-unknown-linux-musl` adds it), as on
// a machine with nothing but a default Rust, the host build links the
// host's glibc statically instead (`-C target-feature=+crt-static`, which
// needs only the `libc.a` of the C toolchain Rust already links with): no
// dynamic loader either. Where that link fails, it builds the usual
// dynamically linked hook and says so.
//
// Usage: node scripts/build/build-hook.js

const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const ROOT = path.join(__dirname, '..', '..')
const PACKAGE = 'turn-settled-hook'
const STEM = 'turn-settled-hook-v1'

/** The hook's file name on `os` (`process.platform` spelling). */
function hookFileName(os) {
  return os === 'win32' ? `${STEM}.exe` : STEM
}

/** The Rust triple of the static Linux hook for `cpu` (`x64` | `arm64`). */
function linuxHookTriple(cpu) {
  return `${cpu === 'arm64' ? 'aarch64' : 'x86_64'}-unknown-linux-musl`
}

/**
 * `cargo [zigbuild|build] --release -p turn-settled-hook --target <triple>`
 * into `targetDir`; copies the result to `dest` (mode 0755) and returns it.
 */
function buildHook({ triple, zig, dest, targetDir, env = process.env }) {
  const args = [zig ? 'zigbuild' : 'build', '--release', '--package', PACKAGE, '--target-dir', targetDir]
  if (triple) args.push('--target', triple)
  console.log(`$ cargo ${args.join(' ')}`)
  const out = spawnSync('cargo', args, { cwd: ROOT, stdio: 'inherit', env })
  if (out.error || out.status !== 0) throw new Error(`cargo ${args[0]} of ${PACKAGE}${triple ? ` for ${triple}` : ''} failed`)
  const os = triple ? (triple.includes('windows') ? 'win32' : 'other') : process.platform
  const built = path.join(targetDir, ...(triple ? [triple] : []), 'release', hookFileName(os))
  // Replaced, not rewritten in place: a running hook keeps its own copy.
  fs.rmSync(dest, { force: true })
  fs.copyFileSync(built, dest)
  fs.chmodSync(dest, 0o755)
  return dest
}

/** The glibc triple of a Linux host on `cpu` (`x64` | `arm64`), or `null` for another CPU. */
function hostGnuTriple(cpu) {
  return { x64: 'x86_64-unknown-linux-gnu', arm64: 'aarch64-unknown-linux-gnu' }[cpu] ?? null
}

/** Whether rustup has `triple`'s standard library installed. */
function targetInstalled(triple) {
  const out = spawnSync('rustup', ['target', 'list', '--installed'], { encoding: 'utf8' })
  return !out.error && out.status === 0 && out.stdout.split('\n').includes(triple)
}

function main() {
  const dest = path.join(ROOT, hookFileName(process.platform))
  const targetDir = path.join(ROOT, 'target')
  const hostDefault = () => buildHook({ triple: null, zig: false, dest, targetDir })
  const musl = linuxHookTriple(process.arch)
  const gnu = hostGnuTriple(process.arch)
  if (process.platform !== 'linux') {
    hostDefault()
  } else if (targetInstalled(musl)) {
    buildHook({ triple: musl, zig: false, dest, targetDir })
  } else if (gnu === null) {
    console.warn(`build-hook: ${musl} not installed (rustup target add ${musl}): building a dynamically linked hook`)
    hostDefault()
  } else {
    // Its own `--target` keeps these flags off the addon's builds (and off
    // build scripts), and its own folder under `target/` keeps the two
    // builds from invalidating each other.
    const rustflags = [process.env.RUSTFLAGS, '-C target-feature=+crt-static'].filter(Boolean).join(' ')
    try {
      buildHook({ triple: gnu, zig: false, dest, targetDir, env: { ...process.env, RUSTFLAGS: rustflags } })
    } catch (error) {
      console.warn(`build-hook: ${error.message} with glibc linked statically: building a dynamically linked hook`)
      hostDefault()
    }
  }
  console.log(`build-hook: ${path.relative(ROOT, dest)}`)
}

if (require.main === module) {
  try {
    main()
  } catch (error) {
    console.error(`build-hook: ${error.message}`)
    process.exitCode = 1
  }
}

module.exports = { buildHook, hookFileName, linuxHookTriple, main, STEM }
