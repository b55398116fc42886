# A busy machine noticed: a spinning child process per CPU (started and stopped by the test,
# at most 60 s each) makes rows disturbed and crossovers "not a finding", under the OpenMP
# wait longmix sets (or the user's); the crossover's sentences, --oversubscribe, the notice
# before an existing file is replaced, --shard and --resume.

# start_spinners: one busy loop per CPU this shell may use, each ended after 60 s at the
# latest; their ids in $WORK/spinners. stop_spinners ends exactly those.
start_spinners() {
  local n
  n=$(nproc)
  : > "$WORK/spinners"
  for _ in $(seq "$n"); do
    timeout 60 sh -c 'while :; do :; done' &
    echo $! >> "$WORK/spinners"
  done
  sleep 0.3
}
stop_spinners() {
  local p
  while read -r p; do kill "$p" 2>/dev/null || true; done < "$WORK/spinners"
  while read -r p; do wait "$p" 2>/dev/null || true; done < "$WORK/spinners"
}

test_spinning_cpus_mark_rows_disturbed() {
  start_spinners
  trap stop_spinners EXIT
  local got=0
  # without a wait policy of the user's, longmix runs with libgomp's oversubscribed spin
  env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT \
    "$LONGMIX" sweep --kernel gemv_rowdot --ctx 4096,8192 --d-inner 256 --reps 5 --isa scalar \
    --threads cores --no-roofline --out "$WORK/s.csv" >"$WORK/out" 2>"$WORK/err" || got=$?
  "$LONGMIX" roofline --threads cores --isa scalar --size 1M --reps 1 --out "$WORK/r.csv" \
    >"$WORK/rout" 2>"$WORK/rerr" || got=$?
  stop_spinners
  trap - EXIT
  [ "$got" -eq 0 ] || { cat "$WORK/err" >&2; return 1; }
  expect_text err "the machine is busy: before measuring, other processes kept"
  expect_text err "(OpenMP wait: GOMP_SPINCOUNT=1000)"
  expect_text err "marked disturbed"
  expect_text err "2 of 2 rows were measured while other processes left their threads too few free cores"
  "$PYTHON" - "$WORK/s.csv" "$WORK/r.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 2, rows
for r in rows:
    assert r["disturbed"] == "1", r
    assert float(r["busy_cores"]) >= 0.5, r["busy_cores"]
roof = list(csv.DictReader(open(sys.argv[2])))
assert roof and all(r["disturbed"] == "1" for r in roof), roof
PY
}

test_spinning_cpus_mark_model_rows_disturbed() {
  start_spinners
  trap stop_spinners EXIT
  local got=0
  env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT \
    "$LONGMIX" model --model tests/fixtures/models/tiny-attn.json --ctx 64 --threads 1 --reps 1 \
    --out "$WORK/m.csv" --crossover-out "$WORK/x.csv" >"$WORK/out" 2>"$WORK/err" || got=$?
  stop_spinners
  trap - EXIT
  [ "$got" -eq 0 ] || { cat "$WORK/err" >&2; return 1; }
  expect_text err "longmix model: the machine is busy"
  expect_text err "(OpenMP wait: GOMP_SPINCOUNT=1000)"
  "$PYTHON" - "$WORK/m.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 1 and rows[0]["disturbed"] == "1", rows
assert float(rows[0]["busy_cores"]) >= 0.5, rows[0]["busy_cores"]
PY
}
test_busy_crossover_is_not_a_finding() {
  start_spinners
  trap stop_spinners EXIT
  local got=0
  # a wait policy the user set is kept
  GOMP_SPINCOUNT=5000 "$LONGMIX" crossover --threads cores --isa scalar --heads 2 --kv-heads 1 --head-dim 16 \
    --d-inner 32 --d-state 4 --d-state-m2 8 --ctx 16,64 --no-prefill --dtype f32 --reps 3 \
    --no-roofline --out "$WORK/x.csv" --summary "$WORK/xs.csv" >"$WORK/out" 2>"$WORK/err" || got=$?
  stop_spinners
  trap - EXIT
  [ "$got" -eq 0 ] || { cat "$WORK/err" >&2; return 1; }
  expect_text err "(OpenMP wait: GOMP_SPINCOUNT=5000)"
  expect_text out "not trusted: "
  expect_text out "- Not a finding ("
  "$PYTHON" - "$WORK/xs.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 2, rows
for r in rows:
    assert r["trust"] == "disturbed", r
    assert r["sentence"].startswith("Not a finding ("), r["sentence"]
    assert "On this CPU, " in r["sentence"], r["sentence"]
PY
}

test_crossover_sentences_and_headings() {
  expect_exit 0 "$LONGMIX" crossover --threads 1 --isa scalar --heads 2 --kv-heads 1 \
    --head-dim 16 --d-inner 32 --d-state 4 --d-state-m2 8 --ctx 16,64 --no-prefill \
    --dtype f32,bf16 --reps 1 --no-roofline --out "$WORK/x.csv" --summary "$WORK/xs.csv"
  expect_text out "| measured crossover n* (tokens) | times at the grid points around it (attention vs other) | memory crossover (tokens, this cache) | FLOP crossover (tokens) | trust |"
  expect_text out "FLOP crossover: where attention's flop count"
  expect_text out "The measured n* comes later because"
  # one sentence per result, each naming its cache and thread count
  [ "$(grep -c '^- .*On this CPU, .*cache.*1 thread' "$WORK/out")" -eq 4 ]
  # the memory crossover of each row is its cache's: f32 values take twice the bytes of bf16
  "$PYTHON" - "$WORK/xs.csv" <<'PY'
import csv, sys
rows = {(r["method_b"], r["dtype"]): r for r in csv.DictReader(open(sys.argv[1]))}
m1 = "Mamba-1 step"
f32, bf16 = float(rows[(m1, "f32")]["memory_n"]), float(rows[(m1, "bf16")]["memory_n"])
assert abs(bf16 - 2 * f32) < 1e-9 * bf16, (f32, bf16)
PY
}

test_crossover_m8_memory_crossover_per_cache_dtype() {
  # the M8 geometry: 80 / 528.5 tokens hold for 2-byte values (f16), an f32 cache has half
  expect_exit 0 "$LONGMIX" crossover --threads 1 --ctx 16 --no-prefill --dtype f32,f16 \
    --reps 1 --no-roofline --out "$WORK/x.csv" --summary "$WORK/xs.csv"
  expect_text out "both at 2 bytes per value): Mamba-1 80 tokens"
  "$PYTHON" - "$WORK/xs.csv" <<'PY'
import csv, sys
got = {(r["method_b"], r["dtype"]): float(r["memory_n"]) for r in csv.DictReader(open(sys.argv[1]))}
want = {("Mamba-1 step", "f16"): 80.0, ("Mamba-1 step", "f32"): 40.0,
        ("Mamba-2 SSD step", "f16"): 528.5, ("Mamba-2 SSD step", "f32"): 264.25}
assert got == want, got
PY
}

test_crossover_threads_above_the_cores_need_oversubscribe() {
  local over=$(( $(nproc) + 1 ))
  expect_exit 2 "$LONGMIX" crossover --threads "$over" --no-decode --no-prefill \
    --out "$WORK/x.csv" --summary "$WORK/xs.csv"
  expect_text err "exceeds the"
  expect_text err "pass --oversubscribe"
  expect_exit 0 "$LONGMIX" crossover --threads "$over" --oversubscribe --no-decode --no-prefill \
    --out "$WORK/x.csv" --summary "$WORK/xs.csv"
}

test_crossover_says_it_replaces_an_existing_file() {
  local m="$LONGMIX crossover --threads 1 --isa scalar --heads 2 --kv-heads 1 --head-dim 16 --d-inner 32 --d-state 4 --d-state-m2 8 --ctx 16 --no-prefill --dtype f32 --reps 1 --no-roofline --out $WORK/x.csv --summary $WORK/xs.csv"
  expect_exit 0 $m
  if grep -q "exists" "$WORK/err"; then echo "    a first run has nothing to replace" >&2; return 1; fi
  expect_exit 0 $m
  expect_text err "$WORK/x.csv exists (3 rows of an earlier run); this run replaces it"
}

crossover_tiny() { # a tiny crossover (12 configurations) with extra args
  "$LONGMIX" crossover --threads 1 --isa scalar --heads 2 --kv-heads 1 --head-dim 16 \
    --d-inner 32 --d-state 4 --d-state-m2 8 --ctx 16,64 --prefill-ctx 16,32 --dtype f32 \
    --reps 1 --no-roofline "$@"
}

test_crossover_shards_merge_into_the_crossovers_of_a_whole_run() {
  for k in 1 2 3; do
    expect_exit 0 crossover_tiny --shard $k/3 --out "$WORK/s$k.csv" --summary "$WORK/none.csv"
    expect_text err "4 configurations measured, 0 from"
    expect_text out "(one shard: no crossovers)"
  done
  [ ! -e "$WORK/none.csv" ] # a shard leaves the summary alone
  expect_exit 0 "$LONGMIX" merge "$WORK/s1.csv" "$WORK/s2.csv" "$WORK/s3.csv" --out "$WORK/all.csv"
  # the crossovers from the merged rows: nothing measured again
  expect_exit 0 crossover_tiny --resume --out "$WORK/all.csv" --summary "$WORK/xs.csv"
  expect_text err "0 configurations measured, 12 from"
  [ "$(grep -c '^- .*On this CPU, ' "$WORK/out")" -eq 5 ]
  expect_exit 0 crossover_tiny --out "$WORK/whole.csv" --summary "$WORK/ws.csv"
  "$PYTHON" - "$WORK/all.csv" "$WORK/whole.csv" "$WORK/xs.csv" "$WORK/ws.csv" <<'PY'
import csv, sys
key = "kernel isa threads dtype bits n_ctx chunk heads kv_heads head_dim d_inner d_state batch disc".split()
def keys(path):
    return sorted(tuple(r[k] for k in key) for r in csv.DictReader(open(path)))
assert keys(sys.argv[1]) == keys(sys.argv[2]), (keys(sys.argv[1]), keys(sys.argv[2]))
def comparisons(path):
    return sorted((r["phase"], r["method_b"], r["dtype"]) for r in csv.DictReader(open(path)))
assert comparisons(sys.argv[3]) == comparisons(sys.argv[4]) and len(comparisons(sys.argv[3])) == 5
PY
}

test_crossover_resume_measures_only_what_is_missing() {
  expect_exit 0 crossover_tiny --shard 1/2 --out "$WORK/s.csv"
  expect_text err "6 configurations measured"
  head -5 "$WORK/s.csv" > "$WORK/cut.csv" # a shard killed after 4 rows
  expect_exit 0 crossover_tiny --shard 1/2 --out "$WORK/cut.csv" --resume
  expect_text err "2 configurations measured, 4 from"
  [ "$(wc -l < "$WORK/cut.csv")" -eq 7 ]
  if grep -q "replaces" "$WORK/err"; then echo "    --resume replaces nothing" >&2; return 1; fi
  expect_exit 2 crossover_tiny --force --out "$WORK/x.csv"
  expect_text err "--force goes with --resume"
  expect_exit 2 crossover_tiny --shard 3/2 --out "$WORK/x.csv"
}
