#!/usr/bin/env bash
# The CI gate of longmix: build, verify (longmix's kernels and a plugin's), a short sweep,
# and `longmix compare` against the committed baseline of this CPU model. The same commands
# run in .ci/run (this project's own CI), .github/workflows/longmix.yml and .gitlab-ci.yml.
#
#   scripts/ci-gate.sh [--out DIR] [--baselines DIR] [--update-baseline] [--no-build]
#
#   --out DIR          reports and CSVs (default build/ci): verify.xml,
#                      verify-plugin-NAME.xml, sweep-N.csv,
#                      compare-N.txt / .xml / .json, compare.xml (the JUnit of the verdict)
#   --baselines DIR    committed baselines, one per CPU model (default ci/baselines):
#                      DIR/<cpu model as a slug>.csv
#   --update-baseline  measure GATE_BASELINE_RUNS sweeps (default 5), pool their
#                      repetitions into this machine's baseline (commit it) and stop
#   --no-build         use build/longmix (or $LONGMIX) as it is
#
# Environment: GATE_SWEEP_ARGS (default: --preset smoke --threads 1 --reps 9 --interleave
# all), GATE_TIME, GATE_MAX_SLOWDOWN, GATE_ALPHA, GATE_BASELINE_RUNS, GATE_VERIFY_ARGS,
# GATE_PLUGINS (plugin shared objects verified on the same contracts, space-separated;
# default the example build/plugins/naive.so, which the gate builds; empty: none).
#
# The rule (docs/benchmarks.md "The CI gate"): a configuration fails the gate when its
# GATE_TIME (cpu) time's median is above the baseline's by more than GATE_MAX_SLOWDOWN (50)
# percent times the same-run roofline's machine factor and the one-sided Mann-Whitney U test
# says so at GATE_ALPHA (0.01), in two sweeps in a row: the second sweep runs only when the
# first found a row SLOWER or FAILED, and only rows failing in both fail the gate. No
# baseline for this CPU model: the gate says so (a skipped JUnit case) and passes.
# Exit: 0 passed (or no baseline), 1 a contract failed or a regression was confirmed,
# 2 bad usage or a broken input.
set -euo pipefail
cd "$(dirname "$0")/.."

GATE_SWEEP_ARGS=${GATE_SWEEP_ARGS:---preset smoke --threads 1 --reps 9 --interleave all}
GATE_MAX_SLOWDOWN=${GATE_MAX_SLOWDOWN:-50}
GATE_ALPHA=${GATE_ALPHA:-0.01}
GATE_TIME=${GATE_TIME:-cpu}
GATE_BASELINE_RUNS=${GATE_BASELINE_RUNS:-5}
GATE_VERIFY_ARGS=${GATE_VERIFY_ARGS:-}   # contract files; empty: every one in contracts/SHA256SUMS
PYTHON=${PYTHON:-/usr/bin/python3}
out=build/ci baselines=ci/baselines update=0 build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift ;;
    --baselines) baselines=$2; shift ;;
    --update-baseline) update=1 ;;
    --no-build) build=0 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ci-gate: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
rm -f "$out"/verify*.xml "$out"/sweep-*.csv "$out"/compare*
lm=${LONGMIX:-build/longmix}
step() { echo "== ci-gate: $*"; }

if [ "$build" = 1 ]; then
  step "build"
  make -j"$(nproc)" all
fi

step "verify the contracts -> $out/verify.xml"
rc=0
# shellcheck disable=SC2086 # GATE_VERIFY_ARGS is a list of files
"$lm" verify --format junit --output "$out/verify.xml" $GATE_VERIFY_ARGS || rc=$?
[ "$rc" -eq 0 ] || { echo "ci-gate: longmix verify failed (exit $rc); see $out/verify.xml" >&2; exit 1; }

# A plugin is checked on the same contracts (docs/plugins.md): the example naive plugin, built
# here, unless GATE_PLUGINS names the shared objects to verify instead.
if [ -z "${GATE_PLUGINS+set}" ]; then
  build_dir=$(dirname "$lm")
  step "build the example plugins (make plugins)"
  make --no-print-directory -s plugins BUILD="${build_dir#"$PWD"/}"
  GATE_PLUGINS=$build_dir/plugins/naive.so
fi
for plugin in $GATE_PLUGINS; do
  name=$(basename "$plugin" .so)
  step "verify the plugin $plugin -> $out/verify-plugin-$name.xml"
  rc=0
  # shellcheck disable=SC2086 # GATE_VERIFY_ARGS is a list of files
  "$lm" verify --plugin "$plugin" --format junit --output "$out/verify-plugin-$name.xml" \
    $GATE_VERIFY_ARGS || rc=$?
  [ "$rc" -eq 0 ] || { echo "ci-gate: longmix verify --plugin $plugin failed (exit $rc); see $out/verify-plugin-$name.xml" >&2; exit 1; }
done

sweep() { # sweep N: the gate's sweep into $out/sweep-N.csv
  rm -f "$out/sweep-$1.csv"
  # shellcheck disable=SC2086 # GATE_SWEEP_ARGS is a list of options
  "$lm" sweep $GATE_SWEEP_ARGS --out "$out/sweep-$1.csv"
}
step "sweep ($GATE_SWEEP_ARGS)"
sweep 1
cpu=$("$PYTHON" -c 'import csv,sys; print(next(csv.DictReader(open(sys.argv[1])))["cpu_model"])' "$out/sweep-1.csv")
slug=$(printf '%s' "$cpu" | tr 'A-Z' 'a-z' | sed 's/([a-z]*)//g; s/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
baseline="$baselines/$slug.csv"

if [ "$update" = 1 ]; then
  runs=("$out/sweep-1.csv")
  for k in $(seq 2 "$GATE_BASELINE_RUNS"); do
    step "baseline sweep $k of $GATE_BASELINE_RUNS"
    sweep "$k"
    runs+=("$out/sweep-$k.csv")
  done
  mkdir -p "$baselines"
  "$PYTHON" scripts/pool_baseline.py "${runs[@]}" --out "$baseline"
  echo "ci-gate: wrote $baseline ($cpu, ${#runs[@]} sweeps pooled); commit it"
  exit 0
fi
if [ ! -f "$baseline" ]; then
  why="no baseline for this CPU ('$cpu'): $baseline is missing"
  echo "ci-gate: $why. The gate is not applied; to start one, run"
  echo "ci-gate: scripts/ci-gate.sh --update-baseline on a quiet machine of this model and"
  echo "ci-gate: commit the file ($out/sweep-1.csv is this run's)."
  # the CI's test view shows the gate as skipped, with the reason
  why=$(printf '%s' "$why" | sed 's/&/\&amp;/g; s/</\&lt;/g; s/"/\&quot;/g')
  printf '%s\n' '<?xml version="1.0" encoding="UTF-8"?>' \
    '<testsuites name="longmix compare" tests="1" failures="0" skipped="1">' \
    '  <testsuite name="ci-gate" tests="1" failures="0" skipped="1">' \
    "    <testcase classname=\"compare\" name=\"baseline\"><skipped message=\"$why\"/></testcase>" \
    '  </testsuite>' '</testsuites>' > "$out/compare.xml"
  exit 0
fi

compare() { # compare N: text, JUnit and JSON reports of sweep N against the baseline
  local rc=0
  "$lm" compare "$baseline" "$out/sweep-$1.csv" --time "$GATE_TIME" \
    --max-slowdown "$GATE_MAX_SLOWDOWN" --alpha "$GATE_ALPHA" | tee "$out/compare-$1.txt" || rc=$?
  [ "$rc" -le 1 ] || return "$rc"
  "$lm" compare "$baseline" "$out/sweep-$1.csv" --time "$GATE_TIME" \
    --max-slowdown "$GATE_MAX_SLOWDOWN" --alpha "$GATE_ALPHA" --format junit \
    --output "$out/compare-$1.xml" 2>/dev/null || true
  "$lm" compare "$baseline" "$out/sweep-$1.csv" --time "$GATE_TIME" \
    --max-slowdown "$GATE_MAX_SLOWDOWN" --alpha "$GATE_ALPHA" --format json \
    --output "$out/compare-$1.json" 2>/dev/null || true
  return "$rc"
}
step "compare with $baseline (--time $GATE_TIME --max-slowdown $GATE_MAX_SLOWDOWN --alpha $GATE_ALPHA)"
rc=0
compare 1 || rc=$?
[ "$rc" -le 1 ] || exit 2
cp "$out/compare-1.xml" "$out/compare.xml"
[ "$rc" -eq 1 ] || { echo "ci-gate: passed"; exit 0; }

step "confirm: a second sweep, the gate fails on rows that fail in both"
sweep 2
rc=0
compare 2 || rc=$?
[ "$rc" -le 1 ] || exit 2
cp "$out/compare-2.xml" "$out/compare.xml"
"$PYTHON" - "$out/compare-1.json" "$out/compare-2.json" <<'PY'
import json, sys
failing = [{r["key"]: r for r in json.load(open(p))["rows"] if r["fails"]} for p in sys.argv[1:]]
both = [k for k in failing[0] if k in failing[1]]
for k in both:
    a, b = failing[0][k], failing[1][k]
    print("ci-gate: REGRESSION %s: %s in both sweeps (%s, %s)" % (
        a["label"], b["verdict"], "%.3fx" % a["ratio"] if a["ratio"] else "-",
        "%.3fx" % b["ratio"] if b["ratio"] else "-"))
once = sorted(set(failing[0]) ^ set(failing[1]))
for k in once:
    r = failing[0].get(k) or failing[1].get(k)
    print("ci-gate: not confirmed (one sweep of two): %s" % r["label"])
if not both:
    print("ci-gate: passed (no regression confirmed by the second sweep)")
sys.exit(1 if both else 0)
PY
