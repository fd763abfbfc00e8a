#!/bin/sh
# agent-teams member-work-sync turn-settled hook, v1.
# Usage: turn-settled-hook-v1.sh <spoolRoot> <claude|codex|opencode> [maxBytes]
#
# Records that a runtime turn ended: stdin (the provider's hook payload) goes to
# a hidden temp file in <spoolRoot>/incoming/, which is then renamed to
# <YYYYMMDDTHHMMSSZ>-<pid>-<suffix>.<provider>.json for the app to drain.
# It runs on every turn of every agent, so it starts as few programs as it can
# (cat and mv; rm instead of mv for an empty payload; wc and a second cat for
# an oversized one; date only without /proc), and its cost does not grow with
# the payload: cat copies in blocks. It never prints, never waits on a lock,
# never touches the network and always exits 0: a broken spool must never
# break the agent. A write that fails (a full disk) publishes nothing: a
# truncated payload must never look complete.

# Nothing below prints: every error message goes to /dev/null from here on.
exec >/dev/null 2>&1
umask 077
# The programs it starts load no locale.
LC_ALL=C
export LC_ALL

spool_root=$1
provider=$2
max_bytes=${3:-262144}

# Digits only, without a leading zero (shell arithmetic would read it as octal
# and stop the script), below 10^13 (no arithmetic here can overflow).
plain_number() {
  case $1 in
    '' | 0?* | *[!0-9]* | ??????????????*) return 1 ;;
  esac
}

drain_and_exit() {
  # The writer may still be sending; reading to the end spares it a broken pipe.
  cat >/dev/null
  exit 0
}

case $provider in
  claude | codex | opencode) ;;
  *) drain_and_exit ;;
esac
plain_number "$max_bytes" || max_bytes=262144
[ -n "$spool_root" ] || drain_and_exit
incoming=$spool_root/incoming

# Create the temp file exclusively (noclobber) instead of running mktemp: the
# pid makes the name unique among live hooks, the counter skips leftovers of a
# crashed hook that had the same pid. A missing or read-only dir fails here.
set -C
n=0
while :; do
  tmp=$incoming/.turn-settled.$$.$n
  true >"$tmp" && break
  n=$((n + 1))
  [ "$n" -lt 8 ] || drain_and_exit
done
set +C

# Copy the payload with one `cat`, bounded by the file size limit (ulimit -f,
# in 512-byte blocks) rather than by a count: a payload that fits is taken
# whole by one program, in blocks, and input is then at its end. The shell's
# own `read` takes a pipe one byte per system call (a 256 KiB payload cost a
# hundred times a bare `sh -c :`), `head -c` would need a second program after
# it on every turn to read the rest away, and a single `dd count=1` stops at
# the first short read of a pipe and cuts payloads. The limit keeps at least
# one byte more than the bound (up to 512 more: whole blocks), so the drainer,
# which reads bound + 1 bytes, can tell an oversized payload from one that
# fits exactly. With SIGXFSZ ignored, a write past the limit fails (EFBIG)
# instead of killing cat. A lower hard limit already in place cannot be
# raised: it bounds the copy instead, and a payload past it counts as a
# failed write. Without any limit, `head -c` copies and `cat` reads the rest.
limit=$((max_bytes + 1))
blocks=$(((limit + 511) / 512))
oversized=
trap '' XFSZ
if ulimit -f "$blocks" || {
  current=$(ulimit -f) && plain_number "$current" && [ "$current" -le "$blocks" ]
}; then
  cat >"$tmp" || {
    # cat stopped at the limit (an oversized payload: keep its first bytes)
    # or a write failed (a full disk: publish nothing). Only the size tells
    # them apart, and this path is rare enough for `wc` to count it.
    size=$(wc -c <"$tmp")
    size=${size#"${size%%[! ]*}"}
    if ! plain_number "$size" || [ "$size" -lt "$limit" ]; then
      rm -f -- "$tmp"
      drain_and_exit
    fi
    oversized=1
  }
else
  head -c "$limit" >"$tmp" || {
    rm -f -- "$tmp"
    drain_and_exit
  }
  oversized=1
fi

if [ ! -s "$tmp" ]; then
  # Nothing came: input is at its end already, nothing to read away.
  rm -f -- "$tmp"
  exit 0
fi

# The UTC timestamp of the name, on Linux from builtins only, which spares
# starting `date` on every turn. Fast path: bin/boot-time, which the app writes
# as "<boot id> <wall-clock time, in centiseconds, when /proc/uptime was 0>",
# plus /proc/uptime: a few dozen bytes to read. Taken from the app's own view
# of /proc/uptime, it stays right where that file is per-container (lxcfs).
# Otherwise boot time from /proc/stat plus this process's start time from
# /proc/self/stat (kilobytes, read a byte at a time, but right everywhere).
# Elsewhere, or if /proc does not parse, `date`.
s=
if read -r up rest </proc/uptime; then
  # Not a FIFO or device: the hook must never wait.
  if [ -f "$spool_root/bin/boot-time" ] &&
    read -r boot_id </proc/sys/kernel/random/boot_id &&
    read -r cached_id boot_cs <"$spool_root/bin/boot-time" &&
    [ "$cached_id" = "$boot_id" ]; then
    up_s=${up%%.*}
    up_cs=${up#"$up_s"}
    case $up_cs in
      .[0-9][0-9])
        up_cs=${up_cs#.}
        up_cs=${up_cs#0}
        ;;
      *) up_cs=0 ;;
    esac
    if plain_number "$boot_cs" && plain_number "$up_s"; then
      s=$(((boot_cs + up_s * 100 + up_cs) / 100))
    fi
  fi
  if [ -z "$s" ] && read -r self_stat </proc/self/stat; then
    btime=
    while IFS=' ' read -r key value; do
      if [ "$key" = btime ]; then
        btime=$value
        break
      fi
    done </proc/stat
    set -f
    # Fields after "pid (comm) ": starttime (field 22) is the 20th. USER_HZ is 100.
    set -- ${self_stat##*) }
    set +f
    if [ "$#" -ge 20 ]; then
      shift 19
      if plain_number "$btime" && plain_number "$1"; then
        s=$((btime + $1 / 100))
      fi
    fi
  fi
fi
stamp=
if [ -n "$s" ]; then
  days=$((s / 86400))
  rem=$((s % 86400))
  hh=$((rem / 3600))
  mi=$((rem % 3600 / 60))
  ss=$((rem % 60))
  # Civil date from days since 1970-01-01 (H. Hinnant's days_from_civil inverse).
  z=$((days + 719468))
  era=$((z / 146097))
  doe=$((z - era * 146097))
  yoe=$(((doe - doe / 1460 + doe / 36524 - doe / 146096) / 365))
  y=$((yoe + era * 400))
  doy=$((doe - (365 * yoe + yoe / 4 - yoe / 100)))
  mp=$(((5 * doy + 2) / 153))
  d=$((doy - (153 * mp + 2) / 5 + 1))
  if [ "$mp" -lt 10 ]; then m=$((mp + 3)); else m=$((mp - 9)); fi
  if [ "$m" -le 2 ]; then y=$((y + 1)); fi
  [ "$m" -lt 10 ] && m=0$m
  [ "$d" -lt 10 ] && d=0$d
  [ "$hh" -lt 10 ] && hh=0$hh
  [ "$mi" -lt 10 ] && mi=0$mi
  [ "$ss" -lt 10 ] && ss=0$ss
  stamp=$y$m${d}T$hh$mi${ss}Z
fi
valid_stamp() {
  case $1 in
    [0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z) ;;
    *) return 1 ;;
  esac
}
# A damaged boot-time file can give a year past 9999: then ask `date`.
valid_stamp "$stamp" || stamp=$(date -u +%Y%m%dT%H%M%SZ)
if ! valid_stamp "$stamp"; then
  rm -f -- "$tmp"
  exit 0
fi
final=$incoming/$stamp-$$-$n.$provider.json
while [ -e "$final" ]; do
  n=$((n + 1))
  final=$incoming/$stamp-$$-$n.$provider.json
done
mv -f -- "$tmp" "$final" || rm -f -- "$tmp"
# The rest of an oversized payload, read away after it was published.
[ -z "$oversized" ] || drain_and_exit
exit 0
