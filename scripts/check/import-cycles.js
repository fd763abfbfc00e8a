'use strict'
// Import cycles between the crate's files: the file-level module graph of
// src/ and its strongly connected groups of more than one file.
//
//     node scripts/check/import-cycles.js [src]   # exit status 1 when a cycle exists
//     const { findCycles } = require('./scripts/check/import-cycles.js')
//
// An edge a -> b means file a names an item of file b: through a `use` (brace
// groups expanded, `as` aliases dropped), or through a `crate::`, `super::` or
// `self::` path in code, or through a path that starts with one of a's own
// child modules. A path to an item a module only re-exports (`pub use`) is
// followed to the file that defines it, so an import through `super::Item`
// counts against the sibling that defines `Item`. Edges from a file to its own
// ancestors (a child naming an item of its `mod.rs`) are not counted: the
// parent declares the child, so such an edge would be a cycle by construction.
// In-file `#[cfg(test)] mod tests { .. }` blocks are skipped; test files
// (`mod tests;`) are ordinary modules. Comments (so doc links too) and string
// literals are dropped before any of this.
//
// A text scan, not a Rust parser: it needs only Node, so it runs wherever the
// crate is built (no Python on a user's machine or in CI).

const fs = require('node:fs')
const path = require('node:path')

/** Python's `\w` (a Unicode letter, number or `_`), the scan's notion of a name character. */
const WORD = '[\\p{L}\\p{N}_]'
/** `#[path = "file.rs"] mod name;`, attributes and visibility allowed between. */
const PATH_ATTR = new RegExp(
  `#\\[path\\s*=\\s*"([^"]+)"\\]\\s*(?:#\\[[^\\]]*\\]\\s*)*(?:pub(?:\\([^)]*\\))?\\s+)?mod\\s+(${WORD}+)\\s*;`,
  'gu',
)
/** A `use` item: its visibility (set for a re-export) and its tree. */
const USE = new RegExp(`(?<!${WORD})(pub(?:\\([^)]*\\))?\\s+)?use\\s+([^;]+);`, 'gu')
/** A path in code that starts at the crate, the parent or the module itself. */
const INLINE = new RegExp(`(?<!${WORD})((?:crate|super|self)(?:::${WORD}+)+)`, 'gu')
/** Paths into the standard library: never a file of the crate. */
const EXTERN_OR_STD = new Set(['std', 'core', 'alloc'])

/** The `.rs` files under `dir`, in a stable (sorted) order. */
function rustFiles(dir) {
  const out = []
  const walk = (d) => {
    const entries = fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const entry of entries) {
      const full = path.join(d, entry.name)
      if (entry.isDirectory()) walk(full)
      else if (entry.name.endsWith('.rs')) out.push(full)
    }
  }
  walk(dir)
  return out
}

/** A file's text with line endings as `\n` (a checkout with CRLF scans the same). */
function readText(file) {
  return fs.readFileSync(file, 'utf8').replace(/\r\n?/g, '\n')
}

/**
 * The module of each file: by its place under `root`, or by the
 * `#[path = ".."] mod name;` that declares it, as a child of the declaring
 * file's own module. A platform twin such as `dir_windows.rs` is then the same
 * module as `dir.rs`, its edges counted for both, and the files both declare
 * are that module's children whichever of the two is read first.
 */
function modulesOf(root, files) {
  const byPlace = new Map()
  for (const file of files) {
    const rel = path.relative(root, file).slice(0, -3).split(path.sep)
    if (rel[rel.length - 1] === 'mod' || rel[rel.length - 1] === 'lib') rel.pop()
    byPlace.set(file, rel.join('::'))
  }
  // File -> the (declaring file, module name) pairs that name it by `#[path]`.
  const declaredBy = new Map()
  for (const file of files) {
    for (const [, target, name] of readText(file).matchAll(PATH_ATTR)) {
      const declared = path.join(path.dirname(file), target)
      if (!byPlace.has(declared)) continue
      if (!declaredBy.has(declared)) declaredBy.set(declared, [])
      declaredBy.get(declared).push([file, name])
    }
  }
  const moduleOf = new Map()
  const resolving = new Set()
  const moduleOfFile = (file) => {
    if (moduleOf.has(file)) return moduleOf.get(file)
    let module = byPlace.get(file)
    const declarers = (declaredBy.get(file) || []).filter(([by]) => !resolving.has(by))
    if (declarers.length > 0) {
      resolving.add(file)
      const [by, name] = declarers[0]
      const parent = moduleOfFile(by)
      resolving.delete(file)
      module = parent ? `${parent}::${name}` : name
    }
    moduleOf.set(file, module)
    return module
  }
  for (const file of files) moduleOfFile(file)
  return moduleOf
}

/** A file's code: comments, string contents and the in-file unit tests dropped. */
function code(file) {
  return (
    readText(file)
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/\/\/[^\n]*/g, '')
      .replace(/"(?:\\[^\n]|[^"\\])*"/g, '""')
      // In-file unit tests (by convention the file's last item).
      .replace(/#\[cfg\(test\)\]\s*mod tests\s*\{[\s\S]*/, '')
  )
}

/**
 * The paths a `use` tree names, each with its alias:
 * `a::{b, c::{d, e as f}}` -> `[['a','b'], null], [['a','c','d'], null], [['a','c','e'], 'f']`.
 */
function expand(tree) {
  // ` as ` becomes `@` before the spaces go, so `class as c` stays `class` + `c`.
  const text = tree.replace(/\s+as\s+/gu, '@').replace(/\s+/gu, '')
  const out = []
  const walk = (prefix, text) => {
    const parts = []
    let depth = 0
    let start = 0
    for (let i = 0; i < text.length; i++) {
      const ch = text[i]
      if (ch === '{') depth++
      else if (ch === '}') depth--
      else if (ch === ',' && depth === 0) {
        parts.push(text.slice(start, i))
        start = i + 1
      }
    }
    parts.push(text.slice(start))
    for (let part of parts) {
      if (!part) continue
      if (part.includes('{')) {
        const open = part.indexOf('{')
        const head = part.slice(0, open).replace(/:+$/, '')
        const inner = part.slice(open + 1, part.lastIndexOf('}'))
        walk([...prefix, ...head.split('::').filter(Boolean)], inner)
        continue
      }
      let alias = null
      const at = part.indexOf('@')
      if (at >= 0) [part, alias] = [part.slice(0, at), part.slice(at + 1)]
      let segs = part.split('::').filter(Boolean)
      if (segs.length === 1 && segs[0] === 'self') segs = []
      out.push([[...prefix, ...segs], alias])
    }
  }
  walk([], text)
  return out
}

/**
 * The file-level import graph of the crate under `root`: module name ->
 * the set of modules it names (its own ancestors and itself left out).
 */
function importGraph(root) {
  const moduleOf = modulesOf(root, rustFiles(root))
  const mods = new Map()
  for (const [file, module] of moduleOf) {
    if (!mods.has(module)) mods.set(module, [])
    mods.get(module).push(file)
  }

  const uses = new Map()
  const reexports = new Map()
  const inline = new Map()
  for (const [m, files] of mods) {
    const text = files.map(code).join('\n')
    const used = []
    const reexported = new Map()
    for (const [, vis, tree] of text.matchAll(USE)) {
      for (const [segs, alias] of expand(tree)) {
        if (segs.length === 0) continue
        used.push(segs)
        if (vis && segs[segs.length - 1] !== '*') reexported.set(alias || segs[segs.length - 1], segs)
      }
    }
    uses.set(m, used)
    reexports.set(m, reexported)
    inline.set(m, [...text.replace(USE, '').matchAll(INLINE)].map((match) => match[1].split('::')))
  }

  /** The module a path starts from, and the rest of the path (null: not a crate path). */
  const baseOf = (cur, segs) => {
    const here = cur ? cur.split('::') : []
    if (segs[0] === 'crate') return [[], segs.slice(1)]
    if (segs[0] === 'super') {
      let base = here.slice(0, -1)
      let rest = segs.slice(1)
      while (rest.length > 0 && rest[0] === 'super') [base, rest] = [base.slice(0, -1), rest.slice(1)]
      return [base, rest]
    }
    if (segs[0] === 'self') return [here, segs.slice(1)]
    if (mods.has([...here, segs[0]].join('::'))) return [here, segs]
    return [null, null]
  }

  /** The module whose file defines what `segs` names from module `cur` (null: outside the crate). */
  const resolve = (cur, segs, seen = new Set()) => {
    if (EXTERN_OR_STD.has(segs[0])) return null
    const [base, rest] = baseOf(cur, segs)
    if (base === null) return null
    let at = base.join('::')
    for (const seg of rest) {
      const next = at ? `${at}::${seg}` : seg
      if (mods.has(next)) {
        at = next
        continue
      }
      const target = reexports.has(at) ? reexports.get(at).get(seg) : undefined
      const key = `${at}\n${seg}`
      if (target && !seen.has(key)) {
        const found = resolve(at, target, new Set([...seen, key]))
        // The crate root ('') is never an edge's target: it declares every module.
        if (found) return found
      }
      break
    }
    return mods.has(at) ? at : null
  }

  const graph = new Map()
  for (const m of mods.keys()) {
    const into = new Set()
    for (const segs of [...uses.get(m), ...inline.get(m)]) {
      const t = resolve(m, segs)
      if (t && t !== m && !m.startsWith(`${t}::`)) into.add(t)
    }
    graph.set(m, into)
  }
  return graph
}

/**
 * The strongly connected groups of more than one module (Tarjan), each
 * sorted by name; the largest groups first, then by their first name.
 */
function stronglyConnectedGroups(graph) {
  const index = new Map()
  const low = new Map()
  const stack = []
  const onStack = new Set()
  const groups = []
  let counter = 0
  const connect = (v) => {
    index.set(v, counter)
    low.set(v, counter)
    counter++
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v)) {
      if (!index.has(w)) {
        connect(w)
        low.set(v, Math.min(low.get(v), low.get(w)))
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v), index.get(w)))
      }
    }
    if (low.get(v) === index.get(v)) {
      const group = []
      for (;;) {
        const w = stack.pop()
        onStack.delete(w)
        group.push(w)
        if (w === v) break
      }
      if (group.length > 1) groups.push(group.sort())
    }
  }
  for (const v of graph.keys()) if (!index.has(v)) connect(v)
  const byName = (a, b) => (a.join(' ') < b.join(' ') ? -1 : a.join(' ') > b.join(' ') ? 1 : 0)
  return groups.sort((a, b) => b.length - a.length || byName(a, b))
}

/** The import cycles of the crate under `root`: groups of module names, as `stronglyConnectedGroups`. */
function findCycles(root) {
  return stronglyConnectedGroups(importGraph(root))
}

/** The report the command prints: the count, then each group with its edges inside the group. */
function formatReport(graph, groups) {
  const lines = [`${groups.length} cycles (strongly connected groups of files)`]
  for (const group of groups) {
    lines.push(`${group.length} ${group.join(' ')}`)
    const members = new Set(group)
    for (const a of group) {
      const into = [...graph.get(a)].filter((b) => members.has(b)).sort()
      lines.push(`    ${a} -> ${into.join(', ')}`)
    }
  }
  return lines.join('\n')
}

module.exports = { findCycles, importGraph, stronglyConnectedGroups, formatReport }

if (require.main === module) {
  const root = process.argv[2] || 'src'
  const graph = importGraph(root)
  const groups = stronglyConnectedGroups(graph)
  console.log(formatReport(graph, groups))
  process.exitCode = groups.length > 0 ? 1 : 0
}
