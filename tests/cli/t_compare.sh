# longmix compare: the regression gate on constructed results files (real header and row
# layout from a tiny sweep; medians, repetition times, roofline, CPU and status set per row).
label='gemv_rowdot scalar t1 f32 bits=32'
tail_label='d_inner=16 batch=1'

template() { # a real sweep row to build on: $WORK/t.csv
  [ -s "$WORK/t.csv" ] || "$LONGMIX" sweep --kernel gemv_rowdot --ctx 16 --d-inner 16 --reps 2 \
    --isa scalar --no-roofline --out "$WORK/t.csv" 2>/dev/null
}
# rows OUT SPEC...: one row per SPEC "n=N times=T1;T2;... [cputimes=C1;C2;...] [roof=GFLOPS]
# [cpu=NAME] [status=S] [note=TEXT] [empty=1]" (times in ms, CPU times the same unless given;
# roof = the attainable rate of the row's same-run roofline; empty=1 leaves both lists empty)
rows() {
  template
  "$PYTHON" - "$WORK/t.csv" "$@" <<'PY'
import csv, statistics, sys
template, out, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
base = next(csv.DictReader(open(template)))
with open(out, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(base), lineterminator="\n")
    w.writeheader()
    for spec in specs:
        s = dict(kv.split("=", 1) for kv in spec.split())
        times = [float(t) * 1e-3 for t in s["times"].split(";")]
        q = statistics.quantiles(times, n=4, method="inclusive")
        r = dict(base, n_ctx=s["n"], reps=s.get("reps", len(times)),
                 median_s="%.9g" % statistics.median(times), min_s="%.9g" % min(times),
                 p25_s="%.9g" % q[0], p75_s="%.9g" % q[2], status=s.get("status", "ok"),
                 cpu_model=s.get("cpu", "CPU A"), note=s.get("note", ""),
                 rep_times_s="" if s.get("empty") else ";".join("%.9g" % t for t in times),
                 rep_cpu_s="" if s.get("empty") else ";".join(
                     "%.9g" % (float(t) * 1e-3) for t in s.get("cputimes", s["times"]).split(";")))
        gflops = float(r["flops"]) / statistics.median(times) * 1e-9
        r["gflops"] = "%.9g" % gflops
        r["roofline_frac"] = "%.9g" % (gflops / float(s["roof"])) if "roof" in s else "0"
        w.writerow(r)
PY
}
steady='1.00;1.01;0.99;1.02;0.98;1.015;0.985'

test_compare_clear_regression_exits_1() {
  rows "$WORK/base.csv" "n=1 times=$steady roof=10"
  rows "$WORK/new.csv" "n=1 times=1.50;1.51;1.49;1.52;1.48;1.515;1.485 roof=10"
  expect_exit 1 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv"
  expect_text out "SLOWER   $label n_ctx=1 $tail_label: 1.500x (1 ms -> 1.5 ms), machine 1.000x, allowed 1.100x, p 0.00029 (7 vs 7 reps)"
  expect_text out "1 configurations: 1 slower, 0 failed, 0 faster, 0 same, 0 untested, 0 only in"
  # a 60 % allowance lets it pass, 40 % does not
  expect_exit 0 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv" --max-slowdown 60
  expect_text out "same     $label n_ctx=1 $tail_label: 1.500x"
  expect_exit 1 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv" --max-slowdown 40%
}
test_compare_noisy_non_regression_passes() {
  # medians 1.2x apart, beyond the 10 % allowance, but the repetitions overlap: noise
  rows "$WORK/base.csv" "n=1 times=1.0;1.6;0.8;1.3;0.9;1.5;1.1 roof=10"
  rows "$WORK/new.csv" "n=1 times=1.32;0.85;1.7;1.05;1.45;0.95;1.6 roof=10"
  expect_exit 0 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv"
  expect_text out "same     $label n_ctx=1 $tail_label: 1.200x (1.1 ms -> 1.32 ms), machine 1.000x, allowed 1.100x, p 0.6 (7 vs 7 reps)"
  expect_text out "0 slower, 0 failed, 0 faster, 1 same"
}
test_compare_faster_and_missing_rows_are_listed() {
  rows "$WORK/base.csv" "n=1 times=$steady roof=10" "n=2 times=$steady roof=10"
  rows "$WORK/new.csv" "n=1 times=0.50;0.51;0.49;0.52;0.48;0.505;0.495 roof=10" \
    "n=3 times=$steady roof=10"
  expect_exit 0 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv"
  expect_text out "faster   $label n_ctx=1 $tail_label: 0.500x (1 ms -> 500 us)"
  expect_text out "missing  $label n_ctx=2 $tail_label: only in $WORK/base.csv (line 3): not measured in $WORK/new.csv"
  expect_text out "new      $label n_ctx=3 $tail_label: only in $WORK/new.csv (line 3): no baseline in $WORK/base.csv"
  expect_text out "3 configurations: 0 slower, 0 failed, 1 faster, 0 same, 0 untested, 1 only in $WORK/base.csv, 1 only in $WORK/new.csv"
  expect_exit 1 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv" --strict
}
test_compare_slower_machine_minute_is_not_a_regression() {
  # 1.4x slower while the same-run roofline says the machine was 1.4x slower too
  rows "$WORK/base.csv" "n=1 times=$steady roof=10"
  rows "$WORK/new.csv" "n=1 times=1.40;1.41;1.39;1.42;1.38;1.415;1.385 roof=7.142857"
  expect_exit 0 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv"
  expect_text out "same     $label n_ctx=1 $tail_label: 1.400x (1 ms -> 1.4 ms), machine 1.400x, allowed 1.540x"
  expect_exit 1 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv" --raw
  expect_text out "SLOWER   $label n_ctx=1 $tail_label: 1.400x (1 ms -> 1.4 ms), machine not used (--raw), allowed 1.100x"
  # a faster machine minute never makes a regression out of a steady kernel
  rows "$WORK/new2.csv" "n=1 times=$steady roof=20"
  expect_exit 0 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new2.csv"
  expect_text out "same     $label n_ctx=1 $tail_label: 1.000x (1 ms -> 1 ms), machine 0.500x, allowed 1.100x"
}
test_compare_cpu_time_sees_through_a_busy_machine() {
  # the other jobs of a shared machine stretched NEW's wall times 1.8x; its CPU times did not
  rows "$WORK/base.csv" "n=1 times=$steady roof=10"
  rows "$WORK/new.csv" "n=1 times=1.80;1.95;1.70;2.10;1.75;1.85;1.90 cputimes=$steady roof=10"
  expect_exit 1 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv"
  expect_text out "SLOWER   $label n_ctx=1 $tail_label: 1.850x (1 ms -> 1.85 ms)"
  expect_exit 0 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv" --time cpu
  expect_text out "rule: SLOWER when the CPU time's median ratio > 1.1 x machine slowdown"
  expect_text out "same     $label n_ctx=1 $tail_label: 1.000x (1 ms -> 1 ms)"
  # and a real slowdown shows in CPU time too
  rows "$WORK/new2.csv" "n=1 times=$steady cputimes=1.50;1.51;1.49;1.52;1.48;1.515;1.485 roof=10"
  expect_exit 1 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new2.csv" --time cpu
  expect_text out "SLOWER   $label n_ctx=1 $tail_label: 1.500x (1 ms -> 1.5 ms)"
  expect_exit 2 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new2.csv" --time user
  expect_text err "--time takes wall or cpu, got user"
}
test_compare_failed_row_exits_1() {
  rows "$WORK/base.csv" "n=1 times=$steady roof=10"
  rows "$WORK/new.csv" "n=1 times=0.5;0.5;0.5;0.5;0.5 roof=10 status=wrong note=output_differs"
  expect_exit 1 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv"
  expect_text out "FAILED   $label n_ctx=1 $tail_label: status 'wrong' in $WORK/new.csv: output_differs"
}
test_compare_untested_rows_say_why() {
  rows "$WORK/base.csv" "n=1 times=1;1.01;0.99 roof=10" "n=2 times=$steady roof=10" \
    "n=3 times=$steady roof=10 status=error"
  rows "$WORK/new.csv" "n=1 times=2;2.01;1.99 roof=10" "n=2 times=$steady roof=10 empty=1" \
    "n=3 times=$steady roof=10"
  expect_exit 0 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv"
  expect_text out "untested $label n_ctx=1 $tail_label: 2.000x (1 ms -> 2 ms), machine 1.000x, allowed 1.100x; untested: 3 vs 3 repetitions cannot reach p < 0.05 (at best 0.05): measure with --reps 4 or more"
  expect_text out "n_ctx=2 $tail_label: 1.000x (1 ms -> 1 ms), machine 1.000x, allowed 1.100x; untested: no repetition times (rep_times_s) in $WORK/new.csv"
  expect_exit 0 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv" --time cpu
  expect_text out "n_ctx=2 $tail_label: no CPU times (rep_cpu_s) in $WORK/new.csv"
  expect_text out "untested $label n_ctx=3 $tail_label: the baseline row has status 'error'"
  expect_text out "0 same, 3 untested"
  expect_exit 1 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv" --strict
  # 3 vs 3 can reach a looser level
  expect_exit 1 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv" --alpha 0.1
  expect_text out "SLOWER   $label n_ctx=1"
}
test_compare_refuses_different_cpus_unless_forced() {
  rows "$WORK/base.csv" "n=1 times=$steady roof=10"
  rows "$WORK/new.csv" "n=1 times=$steady roof=10 cpu=CPU_B"
  expect_exit 2 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv"
  expect_text err "$WORK/base.csv was measured on 'CPU A' and $WORK/new.csv on 'CPU_B': timings of different CPU models do not compare (pass --force to compare them anyway)"
  expect_exit 0 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv" --force
  expect_text out "CPU 'CPU A' vs 'CPU_B' (--force)"
  rows "$WORK/mixed.csv" "n=1 times=$steady" "n=2 times=$steady cpu=CPU_B"
  expect_exit 2 "$LONGMIX" compare "$WORK/mixed.csv" "$WORK/base.csv"
  expect_text err "mixes CPU models ('CPU A' on line 2, 'CPU_B' on line 3)"
}
test_compare_junit_and_json_reports() {
  rows "$WORK/base.csv" "n=1 times=$steady roof=10" "n=2 times=$steady roof=10"
  rows "$WORK/new.csv" "n=1 times=1.50;1.51;1.49;1.52;1.48;1.515;1.485 roof=10" \
    "n=3 times=$steady roof=10"
  expect_exit 1 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv" --format junit \
    --output "$WORK/c.xml"
  expect_text err "3 configurations: 1 slower"
  "$PYTHON" - "$WORK/c.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites" and root.get("tests") == "3", root.attrib
assert root.get("failures") == "1" and root.get("skipped") == "2", root.attrib
cases = root.findall("./testsuite/testcase")
assert [c.get("classname") for c in cases] == ["compare.gemv_rowdot"] * 3
fail = cases[0].find("failure")
assert fail is not None and fail.get("message").startswith("slower: 1.500x"), fail.attrib
assert cases[1].find("skipped").get("message").startswith("base_only: only in")
assert cases[2].find("skipped").get("message").startswith("new_only: only in")
PY
  expect_exit 1 "$LONGMIX" compare "$WORK/base.csv" "$WORK/new.csv" --format json
  "$PYTHON" - "$WORK/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["counts"] == {"same": 0, "faster": 0, "slower": 1, "failed": 0, "untested": 0,
                       "base_only": 1, "new_only": 1}, d["counts"]
r = d["rows"][0]
assert r["verdict"] == "slower" and r["fails"] and abs(r["ratio"] - 1.5) < 1e-9, r
assert d["time"] == "wall", d["time"]
assert r["base_reps"] == 7 and r["exact"] and r["p_slower"] < 0.001 and r["machine"] == 1.0, r
assert d["rows"][1]["ratio"] is None and d["rows"][1]["base_line"] == 3
assert d["max_slowdown_pct"] == 10 and d["alpha"] == 0.05 and d["roofline"] is True
PY
}
test_compare_bad_input_exits_2() {
  rows "$WORK/base.csv" "n=1 times=$steady roof=10"
  expect_exit 2 "$LONGMIX" compare "$WORK/base.csv"
  expect_text err "needs two files"
  expect_exit 2 "$LONGMIX" compare "$WORK/base.csv" "$WORK/none.csv"
  expect_text err "$WORK/none.csv: cannot open: No such file or directory"
  expect_exit 2 "$LONGMIX" compare "$WORK/base.csv" "$WORK/base.csv" --max-slowdown -5
  expect_text err "--max-slowdown takes a percentage"
  expect_exit 2 "$LONGMIX" compare "$WORK/base.csv" "$WORK/base.csv" --format tap
  expect_exit 2 "$LONGMIX" compare "$WORK/base.csv" "$WORK/base.csv" --alpha 1
  expect_exit 2 "$LONGMIX" compare "$WORK/base.csv" "$WORK/base.csv" --bogus
  sed '2s/;0.00099;/;zero;/' "$WORK/base.csv" > "$WORK/bad.csv"
  expect_exit 2 "$LONGMIX" compare "$WORK/base.csv" "$WORK/bad.csv"
  expect_text err "bad.csv:2: rep_times_s '0.001;0.00101;zero;"
  rows "$WORK/dup.csv" "n=1 times=$steady" "n=1 times=$steady"
  expect_exit 2 "$LONGMIX" compare "$WORK/dup.csv" "$WORK/base.csv"
  expect_text err "dup.csv: lines 2 and 3 measure the same configuration"
  rows "$WORK/other.csv" "n=9 times=$steady roof=10"
  expect_exit 2 "$LONGMIX" compare "$WORK/base.csv" "$WORK/other.csv"
  expect_text err "no configuration of $WORK/other.csv is in $WORK/base.csv"
  expect_text err "were they sweeps of different grids?"
  sed '2s/,scalar,/,avx2,/' "$WORK/base.csv" > "$WORK/avx2.csv"
  expect_exit 2 "$LONGMIX" compare "$WORK/avx2.csv" "$WORK/base.csv"
  expect_text err "$WORK/base.csv ran the scalar path, $WORK/avx2.csv the avx2 path"
  expect_text err "scripts/ci-gate.sh --update-baseline"
  cut -d, -f1-20 "$WORK/base.csv" > "$WORK/cut.csv"
  expect_exit 2 "$LONGMIX" compare "$WORK/base.csv" "$WORK/cut.csv"
  expect_text err "column 21 must be 'min_s'"
}
test_compare_a_real_sweep_against_itself() {
  "$LONGMIX" sweep --kernel gemv_rowdot --ctx 16,32 --d-inner 16 --reps 5 --isa scalar \
    --out "$WORK/s.csv" 2>/dev/null
  "$PYTHON" -c '
import csv, statistics, sys
for r in csv.DictReader(open(sys.argv[1])):
    t = [float(x) for x in r["rep_times_s"].split(";")]
    c = [float(x) for x in r["rep_cpu_s"].split(";")]
    assert len(t) == 5 and abs(statistics.median(t) - float(r["median_s"])) <= 1e-9 * max(t), r
    assert len(c) == 5 and all(x > 0 for x in c), r
    assert float(r["roofline_frac"]) > 0, r' "$WORK/s.csv"
  expect_exit 0 "$LONGMIX" compare "$WORK/s.csv" "$WORK/s.csv"
  expect_text out "same     $label n_ctx=16 $tail_label: 1.000x"
  expect_text out "2 configurations: 0 slower, 0 failed, 0 faster, 2 same"
  expect_exit 0 "$LONGMIX" compare "$WORK/s.csv" "$WORK/s.csv" --time cpu
  expect_text out "2 configurations: 0 slower, 0 failed, 0 faster, 2 same"
}
test_compare_help_explains_the_rule() {
  expect_exit 0 "$LONGMIX" compare --help
  expect_text out "usage: longmix compare BASE.csv NEW.csv"
  expect_text out "Mann-Whitney U test"
  expect_text out "same-run roofline"
  expect_text out "exit status: 0 no regression, 1"
}
test_pool_baseline_joins_the_runs_repetitions() {
  rows "$WORK/a.csv" "n=1 times=1;1.1;1.2 roof=10" "n=2 times=$steady roof=10"
  rows "$WORK/b.csv" "n=1 times=2;2.1;2.2 roof=5" "n=2 times=$steady roof=10"
  expect_exit 0 "$PYTHON" scripts/pool_baseline.py "$WORK/a.csv" "$WORK/b.csv" --out "$WORK/p.csv"
  expect_text err "2 configurations from 2 runs"
  "$PYTHON" - "$WORK/p.csv" <<'PY'
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))[0]
assert r["rep_times_s"] == "0.001;0.002;0.0011;0.0021;0.0012;0.0022", r["rep_times_s"]
assert r["reps"] == "6" and r["median_s"] == "0.0016" and r["min_s"] == "0.001", r
# roofline_frac against the median attainable rate of the runs (10 and 5 GFLOP/s: 7.5)
assert abs(float(r["gflops"]) / float(r["roofline_frac"]) - 7.5) < 1e-6, r
PY
  expect_exit 0 "$LONGMIX" compare "$WORK/p.csv" "$WORK/a.csv"
  rows "$WORK/c.csv" "n=1 times=1;1.1;1.2"
  expect_exit 1 "$PYTHON" scripts/pool_baseline.py "$WORK/a.csv" "$WORK/c.csv" --out "$WORK/q.csv"
  expect_text err "does not measure the configurations of"
  rows "$WORK/d.csv" "n=1 times=1;1.1;1.2 status=wrong" "n=2 times=$steady"
  expect_exit 1 "$PYTHON" scripts/pool_baseline.py "$WORK/a.csv" "$WORK/d.csv" --out "$WORK/q.csv"
  expect_text err "pool honest runs only"
}
test_sweep_resume_names_a_file_of_the_older_layout() {
  template
  cut -d, -f1-35 "$WORK/t.csv" > "$WORK/old.csv"  # before rep_times_s and rep_cpu_s
  expect_exit 2 "$LONGMIX" sweep --kernel gemv_rowdot --ctx 16 --d-inner 16 --reps 2 \
    --isa scalar --no-roofline --out "$WORK/old.csv" --resume
  expect_text err "old.csv: column 36 must be 'rep_times_s' to resume (this build's results columns); write to a new file and merge"
}
