'use strict'
// The package entry: loads the native binary built for this platform, either
// a local build (`npm run build` puts `member-work-sync.<platform>.node` here)
// or its platform package `member-work-sync-<platform>` (an optional
// dependency; `npm run build:all` fills `npm/<platform>/`). Hand-written, not
// generated: `napi build` runs with `--no-js` so it never replaces this file.
// Beside whichever `.node` file loads sits the native Stop hook
// `turn-settled-hook-v1` (`.exe` on Windows; `npm run build` and the platform
// packages put it there): the addon finds it from its own file's path, so
// nothing here passes it on (hooks/README.md).

/** Whether this Linux runs on musl rather than glibc. */
function isMusl() {
  if (!process.report || typeof process.report.getReport !== 'function') return false
  // The report looks up network interfaces unless told not to (slow offline).
  process.report.excludeNetwork = true
  return !process.report.getReport().header.glibcVersionRuntime
}

/** The napi-rs platform name this process needs, e.g. `linux-x64-gnu`. */
function platformName() {
  const { platform, arch } = process
  if (platform === 'linux') return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`
  // x64: built with mingw-w64. arm64: built for aarch64-pc-windows-gnullvm
  // under napi-rs's usual name for Windows arm64 (scripts/build/build-all.js).
  // Both load in the official (MSVC-built) node.exe.
  if (platform === 'win32') return arch === 'arm64' ? 'win32-arm64-msvc' : `win32-${arch}-gnu`
  return `${platform}-${arch}`
}

function loadNative() {
  const platform = platformName()
  const candidates = [`./member-work-sync.${platform}.node`, `member-work-sync-${platform}`]
  const failures = []
  for (const candidate of candidates) {
    try {
      return require(candidate)
    } catch (error) {
      failures.push(`${candidate}: ${String(error && error.message).split('\n')[0]}`)
    }
  }
  const error = new Error(
    `member-work-sync: no native binary loaded for platform ${platform}. ` +
      `Looked for the local build ${candidates[0]} and the package ${candidates[1]} ` +
      `(an optional dependency; npm run build:all builds it for linux-x64-gnu, linux-arm64-gnu, linux-x64-musl, ` +
      `linux-arm64-musl, darwin-x64, darwin-arm64, win32-x64-gnu and win32-arm64-msvc). ${failures.join('; ')}`,
  )
  error.code = 'MWS_NO_NATIVE_BINARY'
  throw error
}

const binding = loadNative()
module.exports = binding
// Spelled out for `import { ... } from 'member-work-sync'` in ES modules: Node
// finds a CommonJS file's named exports only in assignments like these.
module.exports.MemberWorkSync = binding.MemberWorkSync
module.exports.mergeRuntimeHookSettings = binding.mergeRuntimeHookSettings
module.exports.TURN_SETTLED_HOOK_MARKER = binding.TURN_SETTLED_HOOK_MARKER
