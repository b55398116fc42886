# Measurement subcommands: info, sweep (header, resume, bad options), merge, roofline, --help.
design_header='run_id,timestamp,git_rev,host,cpu_model,isa,threads,kernel,dtype,bits,n_ctx,chunk,heads,kv_heads,head_dim,d_inner,d_state,batch,reps,median_s,min_s,p25_s,p75_s,gflops,gbps,roofline_frac,checksum,status'
tiny_sweep() { # tiny gemv sweep into $1 with extra args
  local out=$1; shift
  "$LONGMIX" sweep --kernel gemv_rowdot --ctx 16,32 --d-inner 16 --reps 2 --isa scalar \
    --no-roofline --out "$out" "$@"
}

test_info_json_parses() {
  expect_exit 0 "$LONGMIX" info --format json
  "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["topology"]["pus"] >= 1; assert d["isa"]["active"] in d["isa"]["available"]; assert len(d["openmp"]["threads"]) >= 1; assert d["git_rev"]' "$WORK/out"
}
test_info_text_explains_isa_choice() {
  expect_exit 0 "$LONGMIX" info
  expect_text out "isa "
  expect_text out "cpuset"
  LONGMIX_ISA=scalar "$LONGMIX" info > "$WORK/out2"
  grep -q "forced by LONGMIX_ISA=scalar" "$WORK/out2"
}
test_every_measure_command_has_help() {
  for c in info roofline sweep merge; do
    expect_exit 0 "$LONGMIX" $c --help
    expect_text out "usage: longmix $c"
  done
}
test_sweep_writes_the_exact_header() {
  expect_exit 0 tiny_sweep "$WORK/s.csv"
  head -1 "$WORK/s.csv" | grep -q "^$design_header,"
  [ "$(wc -l < "$WORK/s.csv")" -eq 3 ]
  "$PYTHON" - "$WORK/s.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["n_ctx"] for r in rows] == ["16", "32"], rows
for r in rows:
    assert r["status"] == "ok" and r["kernel"] == "gemv_rowdot" and r["isa"] == "scalar"
    assert float(r["min_s"]) <= float(r["median_s"]) and float(r["p25_s"]) <= float(r["p75_s"])
    assert r["reps"] == "2" and float(r["err_max"]) < 1e-5
PY
}
test_sweep_resume_skips_rows_present() {
  expect_exit 0 tiny_sweep "$WORK/s.csv"
  cp "$WORK/s.csv" "$WORK/first.csv"
  expect_exit 0 "$LONGMIX" sweep --kernel gemv_rowdot --ctx 16,32,64 --d-inner 16 --reps 2 \
    --isa scalar --no-roofline --out "$WORK/s.csv" --resume
  expect_text err "1 configurations measured, 2 skipped"
  [ "$(wc -l < "$WORK/s.csv")" -eq 4 ]
  head -3 "$WORK/s.csv" | cmp -s - "$WORK/first.csv"  # the old rows are kept as they were
}
test_sweep_old_kernel_names_are_aliases() {
  # the sweep's names before the kernel list: accepted, rows written under the word, and a
  # CSV whose rows carry the old name is resumed as the word
  expect_exit 0 "$LONGMIX" sweep --kernel affine_scan --ctx 64 --d-inner 16 --chunk 16 --reps 1 \
    --isa scalar --no-roofline --out "$WORK/a.csv"
  "$PYTHON" -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); assert [x["kernel"] for x in r] == ["scan_affine"], r' "$WORK/a.csv"
  sed 's/,scan_affine,/,affine_scan,/' "$WORK/a.csv" > "$WORK/old.csv"
  expect_exit 0 "$LONGMIX" sweep --kernel scan_affine --ctx 64 --d-inner 16 --chunk 16 --reps 1 \
    --isa scalar --no-roofline --out "$WORK/old.csv" --resume
  expect_text err "0 configurations measured, 1 skipped (present)"
  # MLA: one word (latent_mla, the contract's) for the sweep too; mla_decode_* are old names
  expect_exit 0 "$LONGMIX" sweep --kernel mla_decode_absorbed,mla_decode_cached --ctx 32 \
    --heads 2 --head-dim 8 --d-inner 16 --d-state 8 --reps 1 --isa scalar --no-roofline --out "$WORK/mla.csv"
  "$PYTHON" -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); assert [x["kernel"] for x in r] == ["latent_mla", "latent_mla_cached"], r' "$WORK/mla.csv"
}
test_sweep_interleave_writes_every_row_once() {
  # gemv at 2 sizes x 1 and 2 threads: "threads" measures two groups of two, "all" one group
  # of four; every row checked against its reference; a resumed run measures nothing again
  local mode
  for mode in threads all; do
    expect_exit 0 tiny_sweep "$WORK/$mode.csv" --threads 1,2 --interleave $mode
    [ "$(wc -l < "$WORK/$mode.csv")" -eq 5 ]
    "$PYTHON" -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
got = sorted((r["n_ctx"], r["threads"]) for r in rows)
assert got == [("16", "1"), ("16", "2"), ("32", "1"), ("32", "2")], got
assert all(r["status"] == "ok" and int(r["reps"]) == 2 for r in rows), rows' "$WORK/$mode.csv"
    expect_exit 0 tiny_sweep "$WORK/$mode.csv" --threads 1,2 --interleave $mode --resume
    expect_text err "0 configurations measured, 4 skipped"
  done
  expect_exit 2 tiny_sweep "$WORK/bad.csv" --interleave sometimes
  expect_text err "--interleave takes threads or all"
  expect_exit 0 "$LONGMIX" sweep --help
  expect_text out "--interleave threads|all"
}
test_sweep_disc_is_a_column_and_part_of_the_key() {
  # the Mamba-1 decode step in both discretizations: two rows told apart by disc, both
  # checked against their own float64 recurrence
  local m="$LONGMIX sweep --kernel mamba1_step,gemv_rowdot --d-inner 64 --ctx 16 --reps 1 --no-roofline"
  expect_exit 0 $m --disc zoh,euler --out "$WORK/m.csv"
  "$PYTHON" -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
got = sorted((r["kernel"], r["disc"]) for r in rows)
assert got == [("gemv_rowdot", ""), ("mamba1_step", "euler"), ("mamba1_step", "zoh")], got
assert all(r["status"] == "ok" for r in rows), rows' "$WORK/m.csv"
  expect_exit 0 $m --disc euler --out "$WORK/m.csv" --resume
  expect_text err "0 configurations measured, 2 skipped"
  # a file of an earlier build (no disc column) resumes: its Mamba-1 rows were exact ZOH
  "$PYTHON" -c '
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
keep = [r for r in rows if r[-3] != "euler"]
csv.writer(open(sys.argv[2], "w", newline=""), lineterminator="\n").writerows(r[:-3] for r in keep)' \
    "$WORK/m.csv" "$WORK/old.csv"
  expect_exit 0 $m --out "$WORK/old.csv" --resume
  expect_text err "0 configurations measured, 2 skipped"
  head -1 "$WORK/old.csv" | grep -q ',rep_cpu_s,disc,busy_cores,disturbed$'
  expect_exit 2 $m --disc rk4 --out "$WORK/bad.csv"
  expect_text err "--disc takes zoh and/or euler, got 'rk4'"
}
test_sweep_shards_cover_the_grid() {
  expect_exit 0 tiny_sweep "$WORK/a.csv" --shard 1/2
  expect_exit 0 tiny_sweep "$WORK/b.csv" --shard 2/2
  [ "$(wc -l < "$WORK/a.csv")" -eq 2 ] && [ "$(wc -l < "$WORK/b.csv")" -eq 2 ]
  expect_exit 0 "$LONGMIX" merge "$WORK/a.csv" "$WORK/b.csv" --out "$WORK/all.csv"
  [ "$(wc -l < "$WORK/all.csv")" -eq 3 ]
}
test_sweep_bad_options_exit_2() {
  expect_exit 2 "$LONGMIX" sweep --kernel no_such_kernel --out "$WORK/x.csv"
  expect_text err "unknown kernel 'no_such_kernel'"
  expect_exit 2 "$LONGMIX" sweep --kernel gemv_rowdot --ctx "" --out "$WORK/x.csv"
  expect_text err "--ctx must not be empty"
  expect_exit 2 "$LONGMIX" sweep --kernel gemv_rowdot --threads 4000 --out "$WORK/x.csv"
  expect_text err "--oversubscribe"
  expect_exit 2 "$LONGMIX" sweep --kernel gemv_rowdot --threads 100000 --out "$WORK/x.csv"
  expect_text err "--threads: '100000' is too large (at most 4096)"
  expect_exit 2 tiny_sweep "$WORK/no/such/dir/x.csv"
  expect_text err "cannot write"
  expect_exit 2 "$LONGMIX" sweep --bogus
  expect_exit 2 "$LONGMIX" sweep --kernel gemv_rowdot --dtype q3 --out "$WORK/x.csv"
  expect_exit 2 "$LONGMIX" sweep --kernel gemv_rowdot --shard 3/2 --out "$WORK/x.csv"
  [ ! -e "$WORK/x.csv" ]
}
test_merge_refuses_mixed_machines() {
  expect_exit 0 tiny_sweep "$WORK/a.csv"
  sed '2,$s/,git_rev_placeholder,//' "$WORK/a.csv" | "$PYTHON" -c '
import csv, sys
rows = list(csv.reader(sys.stdin)); w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(rows[0])
for r in rows[1:]:
    r[4] = "Some Other CPU"; w.writerow(r)' > "$WORK/b.csv"
  expect_exit 2 "$LONGMIX" merge "$WORK/a.csv" "$WORK/b.csv" --out "$WORK/all.csv"
  expect_text err "Some Other CPU"
  expect_text err "--force"
  [ ! -e "$WORK/all.csv" ]
  expect_exit 0 "$LONGMIX" merge "$WORK/a.csv" "$WORK/b.csv" --out "$WORK/all.csv" --force
  [ "$(wc -l < "$WORK/all.csv")" -eq 5 ]
}
test_roofline_tiny_writes_rows() {
  expect_exit 0 "$LONGMIX" roofline --threads 1 --isa scalar --size 1M --reps 2 --out "$WORK/r.csv"
  head -1 "$WORK/r.csv" | grep -q "^$design_header,"
  grep -q ",stream_triad," "$WORK/r.csv"
  grep -q ",peak_fma," "$WORK/r.csv"
  [ "$(grep -c ",peak_dot_i8," "$WORK/r.csv")" -eq 0 ] # the int8 row goes with avx512 only
}
test_roofline_int8_dot_row_where_the_cpu_has_vnni() {
  grep -qw avx512f /proc/cpuinfo || return 0 # no avx512 path on this host
  expect_exit 0 "$LONGMIX" roofline --threads 1 --isa avx512 --size 1M --reps 2 --out "$WORK/r.csv"
  if grep -qw avx512_vnni /proc/cpuinfo; then
    grep -q ",avx512,1,peak_dot_i8,int8,8," "$WORK/r.csv"
    expect_text out "int8 dot (VNNI)"
    # 2 operations per byte product: a positive rate with an ok status
    awk -F, '$8 == "peak_dot_i8" { ok = ($24 + 0 > 0 && $28 == "ok") } END { exit !ok }' "$WORK/r.csv"
  else
    [ "$(grep -c ",peak_dot_i8," "$WORK/r.csv")" -eq 0 ]
  fi
}
test_sigint_leaves_a_valid_file_with_the_rows_done() {
  # 13 configurations of >= 200 repetitions of >= 1 ms each: seconds of work, interrupted
  # as soon as the first row is on disk.
  "$LONGMIX" sweep --kernel gemv_rowdot --ctx 16..65536 --d-inner 16 --reps 200 --isa scalar \
    --no-roofline --out "$WORK/s.csv" 2>"$WORK/err" &
  local pid=$! i
  for i in $(seq 200); do
    [ -f "$WORK/s.csv" ] && [ "$(wc -l < "$WORK/s.csv")" -ge 2 ] && break
    sleep 0.05
  done
  kill -INT "$pid"
  local rc=0
  wait "$pid" || rc=$?
  [ "$rc" -eq 130 ] || { echo "    exit $rc" >&2; cat "$WORK/err" >&2; return 1; }
  expect_text err "--resume"
  "$PYTHON" -c 'import csv,sys; rows=list(csv.DictReader(open(sys.argv[1]))); assert 1 <= len(rows) < 13, len(rows); assert all(r["status"]=="ok" for r in rows)' "$WORK/s.csv"
  ! ls -A "$WORK" | grep -q "\.tmp"
}
test_crossover_prints_the_m8_memory_crossovers() {
  expect_exit 0 "$LONGMIX" crossover --no-decode --no-prefill --threads 1 \
    --out "$WORK/x.csv" --summary "$WORK/xs.csv"
  expect_text out "Mamba-1 80 tokens"
  expect_text out "Mamba-2-like 528.5 (first integer 529)"
}
test_crossover_tiny_geometry_measures_and_summarises() {
  expect_exit 0 "$LONGMIX" crossover --threads 1 --isa scalar --heads 2 --kv-heads 1 \
    --head-dim 16 --d-inner 32 --d-state 4 --d-state-m2 8 --ctx 16,64 --prefill-ctx 16,32 \
    --dtype f32 --reps 1 --no-roofline --out "$WORK/x.csv" --summary "$WORK/xs.csv"
  expect_text out "| decode | attention vs Mamba-1 step | f32 | scalar | 1 |"
  head -1 "$WORK/xs.csv" | grep -q "^phase,method_a,method_b,dtype,isa,threads,found,n_star"
  "$PYTHON" -c 'import csv,sys; rows=list(csv.DictReader(open(sys.argv[1]))); assert len(rows)>=3 and all(r["status"]=="ok" for r in rows), rows' "$WORK/x.csv"
}
test_crossover_bad_options_exit_2() {
  expect_exit 2 "$LONGMIX" crossover --heads 3 --kv-heads 2
  expect_exit 2 "$LONGMIX" crossover --ctx ""
  expect_exit 2 "$LONGMIX" crossover --dtype q9
  expect_exit 0 "$LONGMIX" crossover --help
}
test_gbench_json_converts_to_the_same_header() {
  expect_exit 0 tiny_sweep "$WORK/s.csv"
  cat > "$WORK/g.json" <<'JSON'
{"context": {"date": "2026-01-01T00:00:00+00:00", "host_name": "h", "num_cpus": 2,
  "cpu_model": "CPU X", "git_rev": "abc", "run_id": "r1", "longmix_host": "h"},
 "benchmarks": [
  {"name": "gemv_rowdot/isa:scalar/dtype:f32/n_ctx:16/threads:1/real_time",
   "run_name": "gemv_rowdot/isa:scalar/dtype:f32/n_ctx:16/threads:1/real_time",
   "run_type": "iteration", "real_time": 2.0, "time_unit": "us", "flops_per_run": 512,
   "bytes_per_run": 1024, "checksum": 1.5, "err_max": 0, "threads": 1, "bits": 32,
   "n_ctx": 16, "d_inner": 16, "batch": 1}]}
JSON
  expect_exit 0 "$PYTHON" scripts/gbench_csv.py "$WORK/g.json" --out "$WORK/g.csv"
  head -1 "$WORK/g.csv" | cmp - <(head -1 "$WORK/s.csv")
  "$PYTHON" -c 'import csv,sys; r=list(csv.DictReader(open(sys.argv[1])))[0]; assert r["kernel"]=="gemv_rowdot" and r["median_s"]=="2e-06" and abs(float(r["gflops"])-0.256)<1e-12, r' "$WORK/g.csv"
}
test_lesson_writes_the_eight_figures_data() {
  expect_exit 0 "$LONGMIX" lesson --csv "$WORK/lesson"
  for f in context_cost window_reach sparse_masks linear_vs_softmax ssm_kernel selective_recall kv_per_token memory_vs_context kv_quant_error; do
    [ -s "$WORK/lesson/$f.csv" ] || { echo "    missing $f.csv" >&2; return 1; }
  done
  # the lesson's own numbers (its figure captions): 136/58/70/82 pairs, 512/128/36/33/16 KB
  grep -q "^full causal|136 pairs,0,0,1" "$WORK/lesson/sparse_masks.csv"
  grep -q "strided, stride 4|82 pairs" "$WORK/lesson/sparse_masks.csv"
  grep -q '"multi-head, 32 KV heads",524288' "$WORK/lesson/kv_per_token.csv"
  grep -q "^1048576,1M,1099511627776,137438953472" "$WORK/lesson/context_cost.csv"
  expect_exit 2 "$LONGMIX" lesson
}
test_report_builds_from_tiny_results() {
  mkdir -p "$WORK/res"
  expect_exit 0 tiny_sweep "$WORK/res/sweep.csv"
  expect_exit 0 "$LONGMIX" lesson --csv "$WORK/res/lesson"
  expect_exit 0 "$PYTHON" scripts/report.py "$WORK/res"
  grep -q "^# longmix report" "$WORK/res/report.md"
  [ -s "$WORK/res/fig_lesson_memory_vs_context.png" ]
  grep -q "gemv_rowdot" "$WORK/res/report.md"
}
test_progress_line_only_when_asked_or_a_terminal() {
  expect_exit 0 tiny_sweep "$WORK/s.csv"            # stderr is a file here: no progress line
  [ "$(grep -c "\[1/2\]" "$WORK/err")" -eq 0 ] # no progress lines when stderr is a file
  LONGMIX_PROGRESS=1 tiny_sweep "$WORK/t.csv" 2> "$WORK/err2"
  grep -q "\[1/2\] gemv_rowdot scalar t1 f32 n=32  elapsed" "$WORK/err2"
}
