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

# The gate verifies a plugin on the same contracts before it sweeps: by default the example
# naive plugin, which it builds; GATE_PLUGINS names others, and a failing one stops the gate.
test_ci_gate_verifies_a_plugin() {
  mkdir -p "$WORK/c"
  "$PYTHON" scripts/build_kernel_contract.py --out "$WORK/c/mine.json" \
    --cases attention_decode:batch=1,heads=4,kv_heads=2,head_dim=32,capacity=70 >/dev/null
  local build; build=$(dirname "$LONGMIX")
  expect_exit 0 env GATE_VERIFY_ARGS="$WORK/c/mine.json" \
    GATE_SWEEP_ARGS="--kernel gemv_rowdot --ctx 16 --d-inner 16 --isa scalar --reps 3" \
    scripts/ci-gate.sh --no-build --out "$WORK/ci" --baselines "$WORK/baselines"
  expect_text out "== ci-gate: verify the plugin $build/plugins/naive.so -> $WORK/ci/verify-plugin-naive.xml"
  "$PYTHON" - "$WORK/ci/verify-plugin-naive.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("12", "0", "0"), root.attrib
cases = list(root.iter("testcase"))
ours = [c.get("name") for c in cases if c.get("classname") == "plugin:naive/attn_decode_f32"]
case = "attention_decode.f32.user_batch1_heads4_kv_heads2_head_dim32_capacity70_seed0"
assert len(ours) == 11 and f"{case}/bounds" in ours and f"{case}/sum" in ours, ours
assert all(len(c) == 0 for c in cases)  # no failure, error or skipped element
PY
  # the wrong plugin fails the gate before any sweep
  make --no-print-directory -s plugins BUILD="${build#"$PWD"/}" >/dev/null
  expect_exit 1 env GATE_VERIFY_ARGS="$WORK/c/mine.json" GATE_PLUGINS="$build/plugins/wrong.so" \
    scripts/ci-gate.sh --no-build --out "$WORK/ci" --baselines "$WORK/baselines"
  expect_text err "ci-gate: longmix verify --plugin $build/plugins/wrong.so failed (exit 1); see $WORK/ci/verify-plugin-wrong.xml"
  ! grep -q "== ci-gate: sweep" "$WORK/out"
  grep -q '<failure' "$WORK/ci/verify-plugin-wrong.xml"
  [ ! -e "$WORK/ci/verify-plugin-naive.xml" ]   # the earlier run's report is gone
}
