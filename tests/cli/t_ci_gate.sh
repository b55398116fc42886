# scripts/ci-gate.sh end to end on a tiny grid (one contract, gemv at two sizes): no baseline
# for this CPU (skipped, passes), --update-baseline (two sweeps pooled), an honest pass, and
# a regression against a baseline made 10x faster, confirmed by the second sweep.
gate() {
  GATE_SWEEP_ARGS="--kernel gemv_rowdot --ctx 16,32 --d-inner 16 --isa scalar --reps 5" \
    GATE_VERIFY_ARGS=contracts/m8.json GATE_BASELINE_RUNS=2 \
    scripts/ci-gate.sh --no-build --out "$WORK/ci" --baselines "$WORK/baselines" "$@"
}
test_ci_gate_baseline_pass_and_confirmed_regression() {
  expect_exit 0 gate
  expect_text out "ci-gate: no baseline for this CPU"
  "$PYTHON" -c 'import sys, xml.etree.ElementTree as ET; r = ET.parse(sys.argv[1]).getroot(); assert r.get("skipped") == "1" and "no baseline" in r.find("./testsuite/testcase/skipped").get("message")' "$WORK/ci/compare.xml"
  grep -q 'failures="0"' "$WORK/ci/verify.xml"
  expect_exit 0 gate --update-baseline
  expect_text out "2 sweeps pooled); commit it"
  local base
  base=$(ls "$WORK"/baselines/*.csv)
  "$PYTHON" -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 2 and all(r["reps"] == "10" and len(r["rep_cpu_s"].split(";")) == 10 for r in rows), rows
assert all(r["run_id"].startswith("pooled:") for r in rows)' "$base"
  expect_exit 0 env GATE_MAX_SLOWDOWN=400 bash -c "$(declare -f gate); gate"
  expect_text out "ci-gate: passed"
  "$PYTHON" - "$base" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:  # a baseline 10x faster: the honest sweeps now read as 10x slower
    for c in ("rep_times_s", "rep_cpu_s"):
        r[c] = ";".join("%.9g" % (float(t) / 10) for t in r[c].split(";"))
    r["median_s"] = "%.9g" % (float(r["median_s"]) / 10)
w = csv.DictWriter(open(sys.argv[1], "w", newline=""), fieldnames=list(rows[0]), lineterminator="\n")
w.writeheader(); w.writerows(rows)
PY
  expect_exit 1 gate
  expect_text out "confirm: a second sweep"
  expect_text out "ci-gate: REGRESSION gemv_rowdot scalar t1 f32 bits=32 n_ctx=16 d_inner=16 batch=1: slower in both sweeps"
  grep -q 'failures="2"' "$WORK/ci/compare.xml"
  [ -s "$WORK/ci/sweep-2.csv" ] && [ -s "$WORK/ci/compare-2.json" ]
}
