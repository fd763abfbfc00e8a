#!/bin/sh
# The Stop hook executable as Claude Code runs it (`/bin/sh -c '< payload
# <command>'`) against the write floor, a shell starting one program that
# writes the payload to a new file (`/bin/sh -c '< payload cat > file'`), in
# the same hyperfine run, at payloads of 0 B, a small Stop payload, 64 KiB and
# 1 MiB (maxBytes 2 MiB: every one is kept whole), for ROUNDS rounds of RUNS
# runs each (short rounds, sizes interleaved, so a change of the machine's
# load hits the floor and the hook alike).
# The floor's file is in the hook's own folder (`spool/incoming/out`), and
# before every run (not timed) that folder is emptied, so both create a new
# file in the same empty folder. Where they wrote to two folders, on a file
# system without a journal (where a create passes over the inodes freed in
# the last minute or more) the two creates could land in block groups with
# very different counts of recently freed inodes: in one window the hook's
# round medians at the three non-empty sizes were 1.19-1.48x (its
# dynamically linked build 1.34-1.92x) a floor in the folder above, and
# 0.86-0.93x (0.98-1.13x) a floor in its own folder, run right after. Prints, per
# round and size, the medians and the ratio hook / floor (of the medians and
# of the means), then per size the least, the median and the largest of the
# rounds' median ratios.
# HOOK overrides the executable (default: the built one beside the package);
# BEFORE names a second executable measured in the same runs (an older build
# to compare with). Needs hyperfine and `node scripts/build/build-hook.js`.
#
# Usage: [HOOK=...] [BEFORE=...] sh scripts/bench/bench-hook-floor.sh [rounds] [runs]
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HOOK=${HOOK:-$ROOT/turn-settled-hook-v1}
BEFORE=${BEFORE:-}
ROUNDS=${1:-3}
RUNS=${2:-60}
[ -x "$HOOK" ] || { echo "bench-hook-floor: build the hook first (node scripts/build/build-hook.js)" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mws-hook-floor.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/spool/incoming"
: > "$WORK/p-0"
printf '{"session_id":"B1","transcript_path":"/home/u/.claude/projects/-home-u-proj/B1.jsonl","cwd":"/home/u/proj","hook_event_name":"Stop","stop_hook_active":false}' > "$WORK/p-small"
head -c 65536 /dev/zero | tr '\0' 'x' > "$WORK/p-64k"
head -c 1048576 /dev/zero | tr '\0' 'x' > "$WORK/p-1m"
printf 'find "%s/spool/incoming" -mindepth 1 -delete\n' "$WORK" > "$WORK/prepare"
MAX=2097152
for round in $(seq 1 "$ROUNDS"); do
  for size in 0 small 64k 1m; do
    payload="$WORK/p-$size"
    set -- -n floor "/bin/sh -c '< $payload cat > $WORK/spool/incoming/out'" \
      -n hook "/bin/sh -c '< $payload $HOOK $WORK/spool claude $MAX'"
    [ -n "$BEFORE" ] && set -- "$@" -n before "/bin/sh -c '< $payload $BEFORE $WORK/spool claude $MAX'"
    hyperfine -N --style none --warmup 10 --runs "$RUNS" --export-json "$WORK/r.json" \
      --prepare "/bin/sh $WORK/prepare" "$@" >/dev/null 2>&1
    node -e '
      const r = require(process.argv[1]).results
      const floor = r[0]
      const us = (x) => (x * 1e6).toFixed(0).padStart(5)
      const cols = r.slice(1).map((c) => `${c.command} ${us(c.median)} us = ${(c.median / floor.median).toFixed(2)}x (mean ${(c.mean / floor.mean).toFixed(2)}x)`)
      console.log(`round ${process.argv[2]} ${process.argv[3].padEnd(5)} floor ${us(floor.median)} us | ${cols.join(" | ")}`)
      for (const c of r.slice(1)) console.error(`${process.argv[3]} ${c.command} ${c.median / floor.median}`)
    ' "$WORK/r.json" "$round" "$size" 2>>"$WORK/ratios"
  done
done
node -e '
  const rows = require("node:fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => l.split(" "))
  const groups = new Map()
  for (const [size, command, ratio] of rows) {
    const key = `${size.padEnd(5)} ${command}`
    groups.set(key, [...(groups.get(key) || []), Number(ratio)])
  }
  for (const [key, xs] of groups) {
    xs.sort((a, b) => a - b)
    console.log(`${key}: median-of-run ratio / floor over ${xs.length} rounds: min ${xs[0].toFixed(2)}x, median ${xs[Math.floor(xs.length / 2)].toFixed(2)}x, max ${xs[xs.length - 1].toFixed(2)}x`)
  }
' "$WORK/ratios"
