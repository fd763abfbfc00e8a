#!/usr/bin/env python3
"""Import cycles between the crate's files: the file-level module graph of
src/ and its strongly connected groups of more than one file.

    python3 scripts/import-cycles.py [src]     # exit status 1 when a cycle exists

An edge a -> b means file a names an item of file b: through a `use` (brace
groups expanded, `as` aliases dropped), or through a `crate::`, `super::` or
`self::` path in code, or through a path that starts with one of a's own
child modules. A path to an item a module only re-exports (`pub use`) is
followed to the file that defines it, so an import through `super::Item`
counts against the sibling that defines `Item`. Edges from a file to its own
ancestors (a child naming an item of its `mod.rs`) are not counted: the
parent declares the child, so such an edge would be a cycle by construction.
In-file `#[cfg(test)] mod tests { .. }` blocks are skipped; test files
(`mod tests;`) are ordinary modules.
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else 'src'

# Module of each file: by its place in src/, or by the `#[path = ".."] mod
# name;` that declares it (a platform twin such as `dir_windows.rs` is then
# the same module as `dir.rs`, its edges counted for both).
module_of = {}
for dirpath, _, files in os.walk(root):
    for f in files:
        if not f.endswith('.rs'):
            continue
        path = os.path.join(dirpath, f)
        rel = os.path.relpath(path, root)[:-3].split(os.sep)
        if rel[-1] in ('mod', 'lib'):
            rel = rel[:-1]
        module_of[os.path.normpath(path)] = '::'.join(rel)
PATH_ATTR = re.compile(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;')
for path, module in list(module_of.items()):
    for target, name in PATH_ATTR.findall(open(path, encoding='utf-8').read()):
        declared = os.path.normpath(os.path.join(os.path.dirname(path), target))
        if declared in module_of:
            module_of[declared] = (module + '::' + name) if module else name
mods = {}
for path, module in module_of.items():
    mods.setdefault(module, []).append(path)


def source(path):
    text = open(path, encoding='utf-8').read()
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    text = re.sub(r'//[^\n]*', '', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    # In-file unit tests (by convention the file's last item).
    return re.sub(r'#\[cfg\(test\)\]\s*mod tests\s*\{.*', '', text, flags=re.S)


def expand(tree):
    """`a::{b, c::{d, e as f}}` -> [['a','b'], ['a','c','d'], ['a','c','e', alias 'f']]."""
    tree = re.sub(r'\s+', '', tree)
    out = []

    def walk(prefix, text):
        depth, start, parts = 0, 0, []
        for i, ch in enumerate(text):
            if ch == '{':
                depth += 1
            elif ch == '}':
                depth -= 1
            elif ch == ',' and depth == 0:
                parts.append(text[start:i])
                start = i + 1
        parts.append(text[start:])
        for part in filter(None, parts):
            if '{' in part:
                head = part[:part.index('{')].rstrip(':')
                inner = part[part.index('{') + 1:part.rindex('}')]
                walk(prefix + [s for s in head.split('::') if s], inner)
            else:
                alias = None
                if 'as' in part and re.search(r'[a-zA-Z0-9_]as[a-zA-Z_]', part):
                    m = re.match(r'(.*?)as(\w+)$', part)
                    if m and m.group(1).replace(':', '').isidentifier():
                        part, alias = m.group(1), m.group(2)
                segs = [s for s in part.split('::') if s]
                if segs == ['self']:
                    segs = []
                out.append((prefix + segs, alias))

    walk([], tree)
    return out


USE = re.compile(r'\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);')
INLINE = re.compile(r'\b((?:crate|super|self)(?:::\w+)+)')
EXTERN_OR_STD = ('std', 'core', 'alloc')

uses = {}
reexports = {m: {} for m in mods}
inline = {}
for m, paths in mods.items():
    text = '\n'.join(source(p) for p in paths)
    uses[m] = []
    for vis, tree in USE.findall(text):
        for segs, alias in expand(tree):
            if not segs:
                continue
            uses[m].append(segs)
            if vis and segs[-1] != '*':
                reexports[m][alias or segs[-1]] = segs
    inline[m] = [u.split('::') for u in INLINE.findall(USE.sub('', text))]


def base_of(cur, segs):
    """The module a path starts from, and the rest of the path."""
    here = cur.split('::') if cur else []
    if segs[0] == 'crate':
        return [], segs[1:]
    if segs[0] == 'super':
        base = here[:-1]
        segs = segs[1:]
        while segs and segs[0] == 'super':
            base, segs = base[:-1], segs[1:]
        return base, segs
    if segs[0] == 'self':
        return here, segs[1:]
    if '::'.join(here + [segs[0]]) in mods:
        return here, segs
    return None, None


def resolve(cur, segs, seen=()):
    """The file that defines what `segs` names from module `cur` (None: outside the crate)."""
    if segs[0] in EXTERN_OR_STD:
        return None
    base, rest = base_of(cur, segs)
    if base is None:
        return None
    at = '::'.join(base)
    for seg in rest:
        nxt = (at + '::' + seg) if at else seg
        if nxt in mods:
            at = nxt
            continue
        target = reexports.get(at, {}).get(seg)
        if target and (at, seg) not in seen:
            found = resolve(at, target, seen + ((at, seg),))
            if found:
                return found
        break
    return at if at in mods else None


graph = {m: set() for m in mods}
for m in mods:
    for segs in uses[m] + inline[m]:
        t = resolve(m, segs)
        if t and t != m and not m.startswith(t + '::') and t != '':
            graph[m].add(t)

# Tarjan's strongly connected components.
sys.setrecursionlimit(10000)
index, low, stack, on, groups, counter = {}, {}, [], set(), [], [0]


def connect(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on.add(v)
    for w in graph[v]:
        if w not in index:
            connect(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        group = []
        while True:
            w = stack.pop()
            on.discard(w)
            group.append(w)
            if w == v:
                break
        if len(group) > 1:
            groups.append(sorted(group))


for v in graph:
    if v not in index:
        connect(v)

print(len(groups), 'cycles (strongly connected groups of files)')
for group in sorted(groups, key=len, reverse=True):
    print(len(group), ' '.join(group))
    members = set(group)
    for a in group:
        into = sorted(graph[a] & members)
        print('   ', a, '->', ', '.join(into))
sys.exit(1 if groups else 0)
