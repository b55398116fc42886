#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz/ for a fixed time (make fuzz; docs/testing.md).
#   scripts/fuzz.sh BUILD SECONDS
# BUILD holds the targets (BUILD/tests/fuzz/fuzz_<target>, built by `make fuzz`). Each
# target starts from its seeds (scripts/fuzz_seeds.py: contracts/ cut small, results/
# examples, large-extent variants), the committed corpus tests/fuzz/corpus/<target> and
# the test fixtures of bad inputs, with a dictionary of its schema's keys and tokens (also
# written by fuzz_seeds.py, from contracts/ and the results header). New inputs go to
# BUILD/corpus/<target> (kept between runs), findings (crash, leak, timeout, out-of-memory)
# to BUILD/findings/<target>/ (emptied at the start of a run; slow-unit-* files there are
# inputs that took over 10 s, listed but not findings). Prints
# each target's executions and coverage; exits 1 when any target found something, naming
# the files.
set -uo pipefail
build=${1:?usage: scripts/fuzz.sh BUILD SECONDS}
seconds=${2:?usage: scripts/fuzz.sh BUILD SECONDS}
python=${PYTHON:-python3}
work=$build
targets=(contract results_csv model)
# The CLI's caps: contracts up to 16 MiB are read; the fuzzer's inputs stay at 1 MiB (the
# largest seed is 200 KiB) so that it mutates rather than grows. -rss_limit_mb holds the
# case budget the fuzz build compiles in (256 MiB) with ASan's own overhead.
max_len=1048576
rm -rf "$work/seeds"
"$python" scripts/fuzz_seeds.py "$work/seeds" || exit 2
status=0
for target in "${targets[@]}"; do
  binary=$build/tests/fuzz/fuzz_$target
  corpus=$work/corpus/$target findings=$work/findings/$target
  rm -rf "$findings"; mkdir -p "$corpus" "$findings"
  extra=()
  [ "$target" = contract ] && extra+=(tests/fixtures/case_budget)
  [ -d "tests/fuzz/corpus/$target" ] && extra+=("tests/fuzz/corpus/$target")
  log=$work/$target.log
  echo "fuzz: $target for ${seconds} s (log $log)"
  # Leaks are checked (detect_leaks=1); libFuzzer's own exit code for a finding is 77.
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
  OMP_NUM_THREADS=2 \
    "$binary" -max_total_time="$seconds" -max_len=$max_len -timeout=300 -rss_limit_mb=3072 \
      -dict="$work/seeds/$target.dict" -artifact_prefix="$findings/" -print_final_stats=1 \
      "$corpus" "$work/seeds/$target" "${extra[@]}" > "$log" 2>&1
  code=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  echo "fuzz: $target: ${execs:-?} executions, ${cov:-coverage unknown}, corpus $(ls "$corpus" | wc -l) new inputs"
  found=$(cd "$findings" && ls -d crash-* leak-* timeout-* oom-* 2>/dev/null | sed "s|^|$findings/|" | tr '\n' ' ')
  slow=$(cd "$findings" && ls -d slow-unit-* 2>/dev/null | wc -l)
  [ "$slow" -eq 0 ] || echo "fuzz: $target: $slow inputs took over 10 s (slow-unit-* in $findings)"
  if [ "$code" -ne 0 ] || [ -n "$found" ]; then
    echo "fuzz: $target FOUND SOMETHING (exit $code): $found" >&2
    grep -E 'ERROR|SUMMARY|==[0-9]+==' "$log" | head -20 >&2
    status=1
  fi
done
exit $status
