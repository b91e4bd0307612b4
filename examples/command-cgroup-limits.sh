#!/bin/sh
# Puts the tool into a child cgroup (v1) of the cgroup it was started in, with the policy's limits, then
# execs it: a stand-in for `systemd-run --scope -p MemoryMax=… -p TasksMax=… -p CPUQuota=…` on a host
# without systemd as PID 1. sandcheck's own cgroup above it has no limits and only counts.
# usage: command-cgroup-limits.sh MEMORY_BYTES PIDS_MAX CPU_QUOTA_US -- COMMAND...
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
mem=$1; pids=$2; quota=$3; shift 3
[ "${1:-}" = -- ] && shift
own() { awk -F: -v c="$1" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' /proc/self/cgroup; }
for c in memory pids cpu; do
  d="/sys/fs/cgroup/$c$(own "$c")/limits"
  mkdir -p "$d"
  case $c in
    memory)
      echo "$mem" > "$d/memory.limit_in_bytes"
      [ -e "$d/memory.memsw.limit_in_bytes" ] && echo "$mem" > "$d/memory.memsw.limit_in_bytes"
      ;;
    pids) echo "$pids" > "$d/pids.max" ;;
    cpu) echo 100000 > "$d/cpu.cfs_period_us"; echo "$quota" > "$d/cpu.cfs_quota_us" ;;
  esac
  echo $$ > "$d/cgroup.procs"
done
exec "$@"
