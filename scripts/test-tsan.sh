#!/usr/bin/env bash
# ThreadSanitizer on the OpenMP kernels and the sweep driver (make test-tsan), 2 threads.
#   scripts/test-tsan.sh [BIN]   BIN: a `make SANITIZER=thread` build (build/tsan/longmix)
# 1. The set-up itself: tests/tsan/race.c (an unsynchronised counter) must be reported, and
#    tests/tsan/sync.c (barrier, reduction, atomic, critical) must not: TSan then both sees
#    races and sees OpenMP's synchronisation. That takes clang's libomp with its Archer tool
#    (libomp-14-dev), loaded through OMP_TOOL_LIBRARIES; Debian's libgomp is not built with
#    TSan, so a gcc build would report every barrier as a race (no suppression file is used).
#    TSAN_OPTIONS has ignore_noninstrumented_modules=1, as Archer asks: accesses made inside
#    uninstrumented libraries (libomp's own bookkeeping, SLEEF, jansson) are not tracked.
# 2. BIN verify contracts/kernels.json: every kernel contract case on every ISA path.
# 3. BIN sweep of every bench kernel at small sizes, with its same-run roofline.
# Any report fails the run (halt_on_error, exit code 66); logs are kept on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/tsan/longmix}
CC=${CC:-clang}
[ -x "$BIN" ] || { echo "test-tsan: $BIN not built (make SANITIZER=thread $BIN)" >&2; exit 2; }
# Archer sits beside the libomp the binary loads (/usr/lib/llvm-14/lib on Debian 12)
libomp=$(ldd "$BIN" | awk '$1 ~ /^libomp/ { print $3; exit }')
[ -n "$libomp" ] || { echo "test-tsan: $BIN is not linked with clang's libomp" >&2; exit 2; }
archer=$(dirname "$(readlink -f "$libomp")")/libarcher.so
[ -f "$archer" ] || { echo "test-tsan: no $archer (package libomp-14-dev)" >&2; exit 2; }
export OMP_TOOL_LIBRARIES=$archer ARCHER_OPTIONS=verbose=1 OMP_NUM_THREADS=2
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 ignore_noninstrumented_modules=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
work=$(mktemp -d "${TMPDIR:-/tmp}/longmix-tsan.XXXXXX")
failed=0

# step NAME WANT_EXIT WANT_REPORT CMD...: runs CMD with its output in $work/NAME.log
step() {
  local name=$1 want=$2 report=$3 rc=0 t=$SECONDS verdict=ok
  shift 3
  "$@" >"$work/$name.log" 2>&1 || rc=$?
  local reported=no
  grep -q 'WARNING: ThreadSanitizer' "$work/$name.log" && reported=yes
  grep -q 'Archer detected OpenMP application with TSan' "$work/$name.log" || verdict="FAILED (Archer not loaded)"
  if [ "$rc" -ne "$want" ] || [ "$reported" != "$report" ]; then
    verdict="FAILED (exit $rc, want $want; TSan report: $reported, want $report)"
  fi
  echo "test-tsan: $name: $verdict [$((SECONDS - t)) s]"
  if [ "$verdict" != ok ]; then
    failed=1
    grep -A 12 'WARNING: ThreadSanitizer' "$work/$name.log" | head -40 | sed 's/^/    | /'
    tail -n 5 "$work/$name.log" | sed 's/^/    | /'
  fi
}

cflags=(-std=c17 -O1 -g -fopenmp -fsanitize=thread -Wall -Wextra -Werror)
"$CC" "${cflags[@]}" tests/tsan/race.c -o "$work/race"
"$CC" "${cflags[@]}" tests/tsan/sync.c -o "$work/sync"
step race-is-reported 66 yes "$work/race"
step openmp-sync-is-silent 0 no "$work/sync"
step verify-kernels 0 no "$BIN" verify contracts/kernels.json
{ grep -E '^[0-9]+ passed' "$work/verify-kernels.log" || true; } | tail -1 | sed 's/^/    /'
step sweep 0 no "$BIN" sweep --kernel all --threads 2 --ctx 256 --heads 4 --kv-heads 2 \
  --head-dim 64 --d-inner 64 --d-state 16 --reps 2 --out "$work/sweep.csv"
tail -n 1 "$work/sweep.log" | sed 's/^/    /'
if [ "$failed" = 0 ]; then
  rm -rf "$work"
  echo "test-tsan: no data race on 2 threads (clang libomp + Archer)"
else
  echo "test-tsan: FAILED; logs in $work"
fi
exit "$failed"
