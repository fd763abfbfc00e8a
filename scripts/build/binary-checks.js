'use strict'
// What `npm run build:all` checks of each built binary, with llvm-objdump
// (LLVM reads ELF, Mach-O and PE for every architecture) plus the file's own
// header bytes: the format and CPU are right, the Node-API registration
// symbol `napi_register_module_v1` is exported, a linux-gnu binary needs no
// glibc symbol version newer than 2.17, a musl binary needs no glibc, and a
// darwin binary binds every CoreFoundation / FSEvents symbol to its framework
// (none left to a flat-namespace lookup at load time), a Windows binary
// (PE, machine 0x8664 for x64, 0xaa64 for arm64) imports only DLLs every
// Windows has (Node-API itself is resolved from node.exe at load time, so
// no import names node.exe, a libnode or a toolchain runtime DLL).
//
// The hook executable (`checkHookBinary`): the format and CPU are right; on
// Linux it is statically linked (no program interpreter, no NEEDED library)
// or else needs no glibc symbol version newer than 2.17; on darwin it links
// only the OS's own libraries under /usr/lib (libSystem, and the libiconv
// Rust's std links); on Windows it imports only DLLs every Windows has.

const fs = require('node:fs')
const { spawnSync } = require('node:child_process')

/** The newest glibc symbol version a linux-gnu binary may need. */
const MAX_GLIBC = [2, 17]
const REGISTER = 'napi_register_module_v1'

/** `llvm-objdump <args> <file>`'s output; throws when it cannot run. */
function objdump(args, file) {
  const out = spawnSync('llvm-objdump', [...args, file], { encoding: 'utf8', maxBuffer: 64 << 20 })
  if (out.error) throw new Error(`llvm-objdump is needed to check binaries: ${out.error.message}`)
  if (out.status !== 0) throw new Error(`llvm-objdump ${args.join(' ')} ${file}: ${out.stderr.trim()}`)
  return out.stdout
}

/** The format and CPU the header bytes of `file` declare. */
function header(file) {
  const bytes = fs.readFileSync(file)
  if (bytes.readUInt32BE(0) === 0x7f454c46) {
    const machine = { 62: 'x64', 183: 'arm64' }[bytes.readUInt16LE(18)] || `e_machine ${bytes.readUInt16LE(18)}`
    return { format: 'ELF', cpu: machine }
  }
  if (bytes.readUInt32LE(0) === 0xfeedfacf) {
    const cpu = { 0x01000007: 'x64', 0x0100000c: 'arm64' }[bytes.readUInt32LE(4)] || `cputype ${bytes.readUInt32LE(4)}`
    return { format: 'Mach-O', cpu }
  }
  if (bytes.toString('latin1', 0, 2) === 'MZ') {
    const pe = bytes.readUInt32LE(0x3c)
    if (bytes.toString('latin1', pe, pe + 4) === 'PE\0\0') {
      const machine = bytes.readUInt16LE(pe + 4)
      const cpu = { 0x8664: 'x64', 0xaa64: 'arm64' }[machine] || `machine ${machine}`
      return { format: 'PE', cpu, machine: `0x${machine.toString(16)}` }
    }
  }
  return { format: 'unknown', cpu: 'unknown' }
}

/** The newest `GLIBC_x.y[.z]` version in `dynamicSymbols`, as `[x, y, z]`; null if none. */
function newestGlibc(dynamicSymbols) {
  let newest = null
  for (const match of dynamicSymbols.matchAll(/GLIBC_(\d+)\.(\d+)(?:\.(\d+))?/g)) {
    const version = [Number(match[1]), Number(match[2]), Number(match[3] || 0)]
    if (!newest || compare(version, newest) > 0) newest = version
  }
  return newest
}

function compare(a, b) {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] || 0) - (b[i] || 0)
    if (d !== 0) return d
  }
  return 0
}

/** The file's format and CPU against `target`'s: what was found, and the problems. */
function checkFormat(file, target) {
  const found = { ...header(file), bytes: fs.statSync(file).size }
  const problems = []
  const wantFormat = { linux: 'ELF', darwin: 'Mach-O', win32: 'PE' }[target.os]
  if (found.format !== wantFormat) problems.push(`is ${found.format}, not ${wantFormat}`)
  if (found.cpu !== target.cpu) problems.push(`is for ${found.cpu}, not ${target.cpu}`)
  return { found, problems }
}

/**
 * Checks the binary `file` built for `target` ({ os: 'linux'|'darwin'|'win32',
 * cpu: 'x64'|'arm64', libc?: 'gnu'|'musl' }). Returns what was found and the
 * problems (empty when the binary is as it should be).
 */
function checkBinary(file, target) {
  const { found, problems } = checkFormat(file, target)
  if (problems.length > 0) return { found, problems }

  if (target.os === 'linux') {
    const dynamic = objdump(['-T'], file)
    // An exported definition names its section; an import says *UND*.
    found.exported = dynamic.split('\n').some((line) => line.endsWith(` ${REGISTER}`) && !line.includes('*UND*'))
    const glibc = newestGlibc(dynamic)
    found.glibc = glibc ? glibc.filter((n, i) => i < 2 || n > 0).join('.') : null
    const needed = [...objdump(['-p'], file).matchAll(/NEEDED\s+(\S+)/g)].map((m) => m[1])
    found.needed = needed
    if (target.libc === 'gnu' && glibc && compare(glibc, MAX_GLIBC) > 0) {
      problems.push(`needs GLIBC_${found.glibc}, newer than ${MAX_GLIBC.join('.')}`)
    }
    if (target.libc === 'musl' && (glibc || needed.some((n) => n.startsWith('libc.so.6')))) {
      problems.push(`links glibc (${needed.join(', ')}${glibc ? `, GLIBC_${found.glibc}` : ''})`)
    }
  } else if (target.os === 'darwin') {
    found.exported = objdump(['--macho', '--exports-trie'], file).includes(`_${REGISTER}`)
    found.frameworks = [...objdump(['--macho', '--dylibs-used'], file).matchAll(/\/System\/Library\/Frameworks\/(\w+)\.framework/g)].map((m) => m[1])
    const binds = objdump(['--macho', '--bind', '--lazy-bind', '--weak-bind'], file)
    const flat = [...binds.matchAll(/flat-namespace\s+(_k?CF\w+|_FSEvent\w+)/g)].map((m) => m[1])
    if (flat.length) problems.push(`binds ${flat.join(', ')} flat, not to a framework (add them to build-support/macos-frameworks.json)`)
  } else {
    const headers = objdump(['-p'], file)
    found.exported = new RegExp(`^\\s+\\d+\\s+0x[0-9a-f]+\\s+${REGISTER}$`, 'm').test(headers)
    found.needed = windowsImports(headers)
    const other = found.needed.filter((d) => !WINDOWS_SYSTEM_DLL.test(d))
    if (other.length) problems.push(`imports ${other.join(', ')}, not a system DLL`)
  }
  if (!found.exported) problems.push(`does not export ${REGISTER}`)
  return { found, problems }
}

/** DLLs every Windows ships (the addon and the hook import nothing else). */
const WINDOWS_SYSTEM_DLL = /^(kernel32|ntdll|advapi32|bcrypt|bcryptprimitives|ws2_32|userenv|msvcrt|ucrtbase|api-ms-win-[\w-]+)\.dll$/i

/** The DLLs a PE file imports, from `llvm-objdump -p`'s import table. */
function windowsImports(headers) {
  return [...headers.matchAll(/DLL Name: (\S+)/g)].map((m) => m[1])
}

/**
 * Checks the hook executable `file` built for `target` (as in
 * `checkBinary`). Returns what was found and the problems.
 */
function checkHookBinary(file, target) {
  const { found, problems } = checkFormat(file, target)
  if (problems.length > 0) return { found, problems }

  if (target.os === 'linux') {
    const headers = objdump(['-p'], file)
    found.needed = [...headers.matchAll(/NEEDED\s+(\S+)/g)].map((m) => m[1])
    const interpreter = /^\s*INTERP\s/m.test(headers)
    if (!interpreter && found.needed.length === 0) {
      found.linkage = 'statically linked'
    } else {
      const glibc = newestGlibc(objdump(['-T'], file))
      found.linkage = `dynamically linked${glibc ? `, newest glibc symbol GLIBC_${glibc.filter((n, i) => i < 2 || n > 0).join('.')}` : ''}`
      if (glibc && compare(glibc, MAX_GLIBC) > 0) problems.push(`needs GLIBC_${glibc.filter((n, i) => i < 2 || n > 0).join('.')}, newer than ${MAX_GLIBC.join('.')}`)
      if (target.libc === 'musl' && found.needed.some((n) => n.startsWith('libc.so.6'))) problems.push('links glibc')
    }
  } else if (target.os === 'darwin') {
    found.needed = [...objdump(['--macho', '--dylibs-used'], file).matchAll(/^\s+(\S+) \(compatibility/gm)].map((m) => m[1])
    const other = found.needed.filter((d) => !/^\/usr\/lib\/lib[\w.]+\.dylib$/.test(d))
    if (other.length) problems.push(`links ${other.join(', ')}, not a library of the OS`)
  } else {
    found.needed = windowsImports(objdump(['-p'], file))
    const other = found.needed.filter((d) => !WINDOWS_SYSTEM_DLL.test(d))
    if (other.length) problems.push(`imports ${other.join(', ')}, not a system DLL`)
  }
  return { found, problems }
}

module.exports = { checkBinary, checkHookBinary, newestGlibc, MAX_GLIBC }
