# longmix model: the preset list, the plan, every refusal of a bad model file or a
# configuration that does not fit (exit 2, the file and the field named, nothing
# written), and a tiny measured run: tidy rows, crossovers, --resume.
TINY=tests/fixtures/models/tiny-attn.json
HYBRID=tests/fixtures/models/tiny-hybrid.json
# bad_model NAME PYTHON-EDIT: writes $WORK/NAME.json, the hybrid fixture edited by
# PYTHON-EDIT (on the dict m)
bad_model() {
  "$PYTHON" - "$HYBRID" "$WORK/$1.json" "$2" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(m, open(sys.argv[2], "w"))
PY
}
# edit_rows FILE PYTHON-EDIT: rewrites the CSV FILE after PYTHON-EDIT (on the list of dict
# rows `rows`), same columns
edit_rows() {
  "$PYTHON" - "$1" "$2" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
exec(sys.argv[2])
with open(sys.argv[1], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
PY
}
# the_one_crossover_is_not_a_finding: $WORK/x.csv holds one crossover, marked not_a_finding
the_one_crossover_is_not_a_finding() {
  "$PYTHON" - "$WORK/x.csv" <<'PY'
import csv, sys
x = list(csv.DictReader(open(sys.argv[1])))
assert len(x) == 1 and x[0]["trust"] == "not_a_finding", x
PY
}
rows_of() { "$PYTHON" -c 'import csv,sys; print(len(list(csv.DictReader(open(sys.argv[1])))))' "$1"; }
tiny_run() { # a measured run of the two fixtures into $WORK
  "$LONGMIX" model --model "$TINY" --model "$HYBRID" --baseline tiny-attn --ctx 64,1024 \
    --threads 1 --reps 1 --out "$WORK/m.csv" --crossover-out "$WORK/x.csv" "$@"
}

test_list_shows_every_preset_with_its_size() {
  expect_exit 0 "$LONGMIX" model --list
  for p in llama3-8b mistral-7b falcon-mamba-7b mamba2-2.7b jamba-v0.1 deepseek-v2-lite qwen3-next-80b-a3b; do
    expect_text out "| $p |"
  done
  expect_text out "| llama3-8b | 32 | 4096 | 32 attention, 32 dense | 8.03 B | 8.03 B | 14.96 GiB |"
  expect_text out "| jamba-v0.1 | 32 | 4096 | 4 attention + 28 mamba1, 16 dense, 16 moe | 51.57 B | 12.11 B |"
  expect_exit 0 "$LONGMIX" model --help
  expect_text out "--dry-run"
}

test_dry_run_gives_the_plan_and_memory_and_writes_nothing() {
  expect_exit 0 "$LONGMIX" model --preset llama3-8b,mistral-7b --ctx 4k,32k --batch 1,8 --dry-run \
    --out "$WORK/m.csv"
  expect_text out "plan: 2 models x 2 contexts x 2 batches"
  # Llama-3-8B: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 128 KiB per token
  expect_text out "| llama3-8b | 4096 | 1 | 14.96 | 0.500 |"
  expect_text out "| llama3-8b | 32768 | 1 | 14.96 | 4.000 |"
  # Mistral's rolling buffer holds 4096 tokens at any context
  expect_text out "| mistral-7b | 32768 | 1 | 13.49 | 0.500 |"
  [ ! -e "$WORK/m.csv" ]
}

test_bad_presets_and_options_are_usage_errors() {
  expect_exit 2 "$LONGMIX" model --preset llama9 --dry-run
  expect_text err "unknown preset 'llama9' (known: deepseek-v2-lite, falcon-mamba-7b,"
  expect_exit 2 "$LONGMIX" model --preset llama3-8b --cache int3 --dry-run
  expect_text err "cache dtype must be f32, f16, bf16, int8, int4, kivi4, kivi2, kivi4g64 or kivi2g64, got 'int3'"
  expect_exit 2 "$LONGMIX" model --preset llama3-8b --weights fp8 --dry-run
  expect_text err "weights dtype must be f32, bf16 or int8, got 'fp8'"
  expect_exit 2 "$LONGMIX" model --preset llama3-8b --bogus
  expect_text err "unknown option '--bogus'"
  expect_exit 2 "$LONGMIX" model --model "$WORK/missing.json" --dry-run
  expect_text err "missing.json"
}

test_bad_model_files_name_the_file_and_the_field() {
  bad_model heads 'm["attention"]["heads"] = 3'
  expect_exit 2 "$LONGMIX" model --model "$WORK/heads.json" --dry-run
  expect_text err "heads.json: attention.heads 3 does not divide d_model 256"
  bad_model kv 'm["attention"]["heads"] = 4; m["attention"]["kv_heads"] = 3'
  expect_exit 2 "$LONGMIX" model --model "$WORK/kv.json" --dry-run
  expect_text err "kv.json: attention.kv_heads 3 does not divide attention.heads 4"
  bad_model ratio 'm["layers"] = 12'
  expect_exit 2 "$LONGMIX" model --model "$WORK/ratio.json" --dry-run
  expect_text err "ratio.json: mixers: a pattern of 5 layers does not fit layers 12"
  bad_model window 'm["attention"]["window"] = 131072'
  expect_exit 2 "$LONGMIX" model --model "$WORK/window.json" --dry-run
  expect_text err "window.json: attention.window 131072 is larger than max_context 65536"
  bad_model missing 'del m["mamba2"]["d_state"]'
  expect_exit 2 "$LONGMIX" model --model "$WORK/missing.json" --dry-run
  expect_text err "missing.json: missing field mamba2.d_state"
  bad_model section 'del m["mla"]'
  expect_exit 2 "$LONGMIX" model --model "$WORK/section.json" --dry-run
  expect_text err "section.json: missing field mla (the layer pattern uses it)"
  bad_model unknown 'm["delta"]["heads"] = 4'
  expect_exit 2 "$LONGMIX" model --model "$WORK/unknown.json" --dry-run
  expect_text err "unknown.json: unknown field delta.heads"
  bad_model kind 'm["mixers"][1] = "rwkv"'
  expect_exit 2 "$LONGMIX" model --model "$WORK/kind.json" --dry-run
  expect_text err "kind.json: mixers[1] must be one of attention, mla, mamba1, mamba2, delta"
  bad_model type 'm["d_model"] = "256"'
  expect_exit 2 "$LONGMIX" model --model "$WORK/type.json" --dry-run
  expect_text err "type.json: d_model must be an integer"
  bad_model experts 'm["moe"]["active"] = 9'
  expect_exit 2 "$LONGMIX" model --model "$WORK/experts.json" --dry-run
  expect_text err "experts.json: moe.active 9 exceeds moe.experts 8"
  bad_model huge 'm["d_model"] = 2 ** 40'
  expect_exit 2 "$LONGMIX" model --model "$WORK/huge.json" --dry-run
  expect_text err "huge.json: the shapes give 3.22e+16 parameters, more than the 1.76e+13 a model file may describe"
  bad_model deep 'm["layers"] = 70000'
  expect_exit 2 "$LONGMIX" model --model "$WORK/deep.json" --dry-run
  expect_text err "deep.json: layers must be at most 65536, got 70000"
  bad_model long 'm["max_context"] = 2 ** 40; m["mla"]["latent"] = 4096'
  expect_exit 2 "$LONGMIX" model --model "$WORK/long.json" --dry-run
  expect_text err "long.json: one sequence at max_context 1099511627776 needs 3.62e+16 bytes (f32), more than the 4.5e+15 a model file may describe"
  printf '{"schema": "longmix-model/1",' > "$WORK/broken.json"
  expect_exit 2 "$LONGMIX" model --model "$WORK/broken.json" --dry-run
  expect_text err "broken.json:1:"
  expect_text err "malformed JSON"
}

test_a_configuration_that_does_not_fit_is_refused_before_allocating() {
  expect_exit 2 "$LONGMIX" model --preset llama3-8b --ctx 16M --batch 64 --out "$WORK/m.csv"
  expect_text err "llama3-8b (models/llama3-8b.json) at ctx 16777216, batch 64 does not fit: its measurement needs"
  expect_text err "GiB is available; nothing was measured"
  [ ! -e "$WORK/m.csv" ]
}

test_a_tiny_run_writes_tidy_rows_and_crossovers_and_resumes() {
  expect_exit 0 tiny_run --cache int8
  # the header t_compare_machines.sh writes for its synthetic hosts
  [ "$(head -1 "$WORK/x.csv")" = "$(sed -n 's/^MODEL_CROSSOVER_HEADER=//p' tests/cli/t_compare_machines.sh)" ]
  expect_text out "| tiny-attn | int8 | bf16 | 1 | 1 | 64 |"
  expect_text out "| tiny-hybrid | int8 | bf16 | 1 | 1 | 1024 |"
  expect_text out "| model vs tiny-attn | threads | batch | decode n* |"
  expect_text err "[4/4] tiny-hybrid ctx 1024 batch 1 threads 1:"
  [ "$(rows_of "$WORK/m.csv")" = 4 ]
  # the results columns first, then the model columns
  head -1 "$WORK/m.csv" | grep -q '^run_id,timestamp,git_rev,host,cpu_model,isa,threads,kernel,dtype,bits,n_ctx,'
  head -1 "$WORK/m.csv" | grep -q ',disc,busy_cores,disturbed,model,cache,weights,ms_per_token,tokens_per_s,'
  "$PYTHON" - "$WORK/m.csv" "$WORK/x.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    assert r["status"] == "ok" and r["kernel"] == "model." + r["model"], r
    assert float(r["ms_per_token"]) > 0 and float(r["tokens_per_s"]) > 0
    parts = sum(float(r[k]) for k in ("proj_ms", "mixing_ms", "mlp_ms", "head_ms"))
    assert 0.5 < parts / float(r["ms_per_token"]) < 1.5, r
    assert abs(float(r["median_s"]) * 1e3 - float(r["ms_per_token"])) < 1e-5 * float(r["ms_per_token"])
    # the machine's load over the row's minutes (/proc/stat): measured, and the verdict
    assert float(r["busy_cores"]) >= 0 and r["disturbed"] in ("0", "1"), r
hy = [r for r in rows if r["model"] == "tiny-hybrid"]
# the state of one sequence: Mamba-1 512 x (16 + 3), Mamba-2 512 x 32 + 576 x 3,
# delta 4 x 32 x 32 + 256 x 3 floats, two layers of each, 4 bytes a float
assert float(hy[0]["state_bytes_seq"]) == 4 * 2 * (512 * 19 + 512 * 32 + 576 * 3 + 4096 + 256 * 3), hy[0]
x = list(csv.DictReader(open(sys.argv[2])))
assert len(x) == 1 and x[0]["model"] == "tiny-hybrid" and x[0]["baseline"] == "tiny-attn", x
assert x[0]["verdict"] in ("crossed", "faster_below", "faster_at_every_ctx", "slower_at_every_ctx", "tie"), x
PY
  # make report's model section: the table, the crossover and the figure from these files
  mkdir -p "$WORK/r" && cp "$WORK/m.csv" "$WORK/r/models.csv" && cp "$WORK/x.csv" "$WORK/r/model_crossover.csv"
  expect_exit 0 "$PYTHON" scripts/report.py "$WORK/r"
  grep -qF "## Whole models: decode per token" "$WORK/r/report.md"
  grep -qF "| tiny-hybrid | int8 | bf16 | 1 | 1 | 1024 |" "$WORK/r/report.md"
  grep -qF "| tiny-hybrid | tiny-attn | 1 | 1 |" "$WORK/r/report.md"
  if "$PYTHON" -c 'import matplotlib' 2>/dev/null; then [ -s "$WORK/r/fig_model_decode_vs_context.png" ]; fi
  # --resume keeps the four rows and measures only the new context
  expect_exit 0 tiny_run --cache int8 --ctx 64,256,1024 --resume
  expect_text err "[1/6] tiny-attn ctx 64 batch 1 threads 1: kept (--resume)"
  expect_text err "[2/6] tiny-attn ctx 256 batch 1 threads 1:"
  [ "$(rows_of "$WORK/m.csv")" = 6 ]
  # a file of another kind is refused, not overwritten
  printf 'a,b\n1,2\n' > "$WORK/other.csv"
  expect_exit 2 "$LONGMIX" model --model "$TINY" --ctx 64 --threads 1 --reps 1 --resume --out "$WORK/other.csv"
  expect_text err "other.csv: not a models table of this build"
  [ "$(cat "$WORK/other.csv")" = "$(printf 'a,b\n1,2')" ]
}

test_a_crossover_over_disturbed_rows_is_not_a_finding() {
  # the tiny run's rows, one of the hybrid's marked disturbed; a --resume run keeps every row
  # and recomputes the crossover from them: it says the rows behind it are not findings
  expect_exit 0 tiny_run
  edit_rows "$WORK/m.csv" '
for r in rows:
    r["disturbed"] = "1" if r["model"] == "tiny-hybrid" and r["n_ctx"] == "64" else "0"
    r["stream_frac"] = "0.5"'
  expect_exit 0 tiny_run --resume
  expect_text err "[1/4] tiny-attn ctx 64 batch 1 threads 1: kept (--resume)"
  expect_text out "| not a finding: 1 of 4 rows busy, unsteady or over the stream |"
  the_one_crossover_is_not_a_finding
}

test_shards_of_a_model_run_merge_into_the_unsharded_run() {
  # two shards split the 4 configurations, print no crossover and leave --crossover-out
  # alone; merged, then --resume on the merged file measures nothing and crosses the rows
  expect_exit 0 tiny_run --shard 1/2 --out "$WORK/s1.csv"
  expect_text err "shard 1/2: 2 of the 4 configurations"
  expect_text err "no crossovers from a part"
  [ ! -e "$WORK/x.csv" ] || { echo "    a shard wrote the crossover file" >&2; return 1; }
  expect_exit 0 tiny_run --shard 2/2 --out "$WORK/s2.csv"
  [ "$(rows_of "$WORK/s1.csv")" -eq 2 ] && [ "$(rows_of "$WORK/s2.csv")" -eq 2 ]
  expect_exit 0 "$LONGMIX" merge "$WORK/s1.csv" "$WORK/s2.csv" --out "$WORK/m.csv"
  expect_exit 0 tiny_run --resume
  expect_text err "0 configurations measured, 4 kept"
  expect_text out "| tiny-hybrid | 1 | 1 |"
  [ "$(rows_of "$WORK/x.csv")" -eq 1 ]
  "$PYTHON" - "$WORK/m.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = sorted((r["model"], r["n_ctx"]) for r in rows)
assert keys == [("tiny-attn", "1024"), ("tiny-attn", "64"), ("tiny-hybrid", "1024"), ("tiny-hybrid", "64")], keys
PY
  # prompts are points of the grid too: 2 models x (2 contexts + 1 prompt), 3 a shard
  expect_exit 0 tiny_run --prompt 64 --shard 2/2 --out "$WORK/p2.csv"
  expect_text err "shard 2/2: 3 of the 6 configurations"
  "$PYTHON" - "$WORK/p2.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
got = sorted((r["model"], r["phase"], r["n_ctx"]) for r in rows)
# indices 1, 3, 5 of (attn: ctx 64, ctx 1024, prompt 64; hybrid: the same)
assert got == [("tiny-attn", "decode", "1024"), ("tiny-hybrid", "decode", "64"),
               ("tiny-hybrid", "prefill", "64")], got
PY
  expect_exit 2 tiny_run --shard 3/2
  expect_text err "--shard must be K/N with 1 <= K <= N, got '3/2'"
}

test_a_prefill_run_writes_prefill_rows_and_a_prefill_crossover() {
  # --prompt without --ctx: prefill only (the time to the first token), batch 1 and 2
  expect_exit 0 "$LONGMIX" model --model "$TINY" --model "$HYBRID" --baseline tiny-attn \
    --prompt 64,200 --batch 1,2 --threads 1 --reps 1 --out "$WORK/p.csv" --crossover-out "$WORK/px.csv"
  expect_text out "| model | weights | threads | batch | prompt | prefill ms (TTFT) |"
  expect_text out "| tiny-hybrid | bf16 | 1 | 2 | 200 |"
  expect_text out "| model vs tiny-attn | threads | batch | prefill n* |"
  expect_text err "[8/8] tiny-hybrid prefill 200 batch 2 threads 1:"
  expect_text err "peak"
  [ "$(rows_of "$WORK/p.csv")" = 8 ]
  "$PYTHON" - "$WORK/p.csv" "$WORK/px.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert {(r["model"], r["n_ctx"], r["batch"]) for r in rows} == {
    (m, n, b) for m in ("tiny-attn", "tiny-hybrid") for n in ("64", "200") for b in ("1", "2")}, rows
for r in rows:
    assert r["status"] == "ok" and r["phase"] == "prefill" and r["kernel"] == "model." + r["model"], r
    n, b, t = int(r["n_ctx"]), int(r["batch"]), float(r["median_s"])
    # median_s is the time to the first token; ms_per_token per prompt token of a sequence
    assert t > 0 and abs(float(r["ttft_ms"]) - 1e3 * t) < 1e-5 * 1e3 * t, r
    assert abs(float(r["ms_per_token"]) - 1e3 * t / n) < 1e-5 * 1e3 * t / n, r
    assert abs(float(r["tokens_per_s"]) - b * n / t) < 1e-5 * b * n / t, r
    parts = sum(float(r[k]) for k in ("proj_ms", "mixing_ms", "mlp_ms", "head_ms"))
    assert 0.5 < parts / float(r["ttft_ms"]) < 1.5, r
    for k in ("proj_ms", "mixing_ms", "mlp_ms", "head_ms"):
        assert float(r[k]) > 0, (k, r)
    # the GEMMs' rate against the same run's peak (bf16 dot products on AVX512-BF16)
    g, p = float(r["gemm_gflops"]), float(r["gemm_peak_gflops"])
    assert g > 0 and p > 0 and abs(float(r["gemm_peak_frac"]) - g / p) < 1e-4 * g / p, r
    assert abs(float(r["roofline_frac"]) - g / p) < 1e-4 * g / p, r
    # flops of the active weights over every prompt token
    assert float(r["flops"]) > 0 and r["copies_max"] == "1", r
x = list(csv.DictReader(open(sys.argv[2])))
assert len(x) == 2 and all(c["phase"] == "prefill" and c["model"] == "tiny-hybrid" for c in x), x
assert all(c["verdict"] in ("crossed", "faster_below", "faster_at_every_ctx", "slower_at_every_ctx", "tie") for c in x), x
PY
  # with --ctx as well: decode rows beside them, and --resume keeps both phases
  expect_exit 0 "$LONGMIX" model --model "$TINY" --prompt 64 --ctx 64 --threads 1 --reps 1 \
    --out "$WORK/both.csv" --crossover-out "$WORK/bx.csv"
  expect_exit 0 "$LONGMIX" model --model "$TINY" --prompt 64,128 --ctx 64 --threads 1 --reps 1 \
    --resume --out "$WORK/both.csv" --crossover-out "$WORK/bx.csv"
  expect_text err "[1/3] tiny-attn ctx 64 batch 1 threads 1: kept (--resume)"
  expect_text err "[2/3] tiny-attn prefill 64 batch 1 threads 1: kept (--resume)"
  expect_text err "[3/3] tiny-attn prefill 128 batch 1 threads 1:"
  "$PYTHON" - "$WORK/both.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert sorted((r["phase"], r["n_ctx"]) for r in rows) == [
    ("decode", "64"), ("prefill", "128"), ("prefill", "64")], rows
dec = [r for r in rows if r["phase"] == "decode"][0]
assert dec["ttft_ms"] == "" and dec["gemm_gflops"] == "", dec
PY
}

test_int8_weights_prefill_writes_ok_rows() {
  # int8 weights: the GEMM quantizes the activations per row; every unit kind of both models
  expect_exit 0 "$LONGMIX" model --model "$TINY" --model "$HYBRID" --prompt 64,128 --batch 1,2 \
    --weights int8 --threads 1 --reps 1 --out "$WORK/i8.csv" --crossover-out "$WORK/i8x.csv"
  expect_text out "| tiny-hybrid | int8 | 1 | 2 | 128 |"
  expect_text err "int8 dot"
  [ "$(rows_of "$WORK/i8.csv")" = 8 ]
  "$PYTHON" - "$WORK/i8.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert {(r["model"], r["n_ctx"], r["batch"]) for r in rows} == {
    (m, n, b) for m in ("tiny-attn", "tiny-hybrid") for n in ("64", "128") for b in ("1", "2")}, rows
for r in rows:
    assert r["status"] == "ok" and r["phase"] == "prefill" and r["weights"] == "int8", r
    assert float(r["ttft_ms"]) > 0 and float(r["gemm_gflops"]) > 0, r
    # against the int8 dot-product peak of the same run
    g, p = float(r["gemm_gflops"]), float(r["gemm_peak_gflops"])
    assert p > 0 and abs(float(r["gemm_peak_frac"]) - g / p) < 1e-4 * g / p, r
PY
}

test_bad_prompts_are_usage_errors() {
  expect_exit 2 "$LONGMIX" model --model "$TINY" --prompt 0 --out "$WORK/m.csv"
  expect_text err "--prompt"
  expect_exit 2 "$LONGMIX" model --model "$TINY" --prompt garbage --out "$WORK/m.csv"
  expect_text err "--prompt"
  expect_exit 2 "$LONGMIX" model --model "$TINY" --prompt 64, --out "$WORK/m.csv"
  expect_exit 2 "$LONGMIX" model --model "$TINY" --prompt
  expect_text err "--prompt needs a value"
  expect_exit 2 "$LONGMIX" model --model "$TINY" --prompt 128k --out "$WORK/m.csv"
  expect_text err "--prompt 131072 is past tiny-attn's max_context 65536"
  expect_exit 2 "$LONGMIX" model --preset llama3-8b --prompt 8k --batch 64 --out "$WORK/m.csv"
  expect_text err "llama3-8b (models/llama3-8b.json) prefill of 8192 tokens, batch 64 does not fit"
  [ ! -e "$WORK/m.csv" ]
}

test_check_runs_every_layer_kind_against_its_reference() {
  expect_exit 0 "$LONGMIX" model --check --isa scalar
  for c in "attention " "attention q_gate f16" "attention int8 cache" "sliding window 8" mla mamba1 \
      mamba2 delta "attention int4 cache" "attention kivi4 " "attention kivi2 " \
      "attn q_gate kivi4g64" "attention kivi2g64"; do
    grep -q "^scalar  *$c.* mixer [0-9.e+-]* (bound [0-9.e+-]*), \(dense\|MoE\) MLP [0-9.e+-]* (bound [0-9.e+-]*)  ok$" "$WORK/out" ||
      { echo "no ok line for '$c' on scalar"; cat "$WORK/out"; return 1; }
  done
  expect_text out "mla                  mixer"
  expect_text out "MoE MLP"
  expect_text out "longmix model --check: 13 layer checks on 1 path, 13 passed, 0 failed"
  # the default: every path this CPU runs, thirteen lines each
  expect_exit 0 "$LONGMIX" model --check
  paths=$(grep -c " ok$" "$WORK/out")
  [ "$paths" -ge 13 ] && [ $((paths % 13)) = 0 ] || { echo "$paths ok lines"; return 1; }
  expect_text out "$paths layer checks on $((paths / 13)) path"
  ! grep -q FAILED "$WORK/out"
  expect_exit 0 "$LONGMIX" model --help
  expect_text out "--check [--isa LIST]"
}

test_check_refuses_bad_paths_and_measurement_options() {
  expect_exit 2 "$LONGMIX" model --check --isa bogus
  expect_text err "--isa: unknown ISA 'bogus'"
  expect_exit 2 "$LONGMIX" model --check --preset llama3-8b
  expect_text err "--check takes only --isa"
  expect_exit 2 "$LONGMIX" model --isa scalar --dry-run
  expect_text err "--isa goes with --check"
  expect_exit 2 "$LONGMIX" model --check --isa
  expect_text err "--isa needs a value"
}

test_stream_curve_says_where_the_stream_falls_to_dram() {
  expect_exit 0 "$LONGMIX" model --stream-curve --threads 1 --reps 1
  expect_text out "| working set | 1 thread |"
  expect_text out "| 1 MiB |"
  expect_text out "DRAM's level (this working set and every larger one within 15 % of DRAM's rate, the median of the three largest) from:"
  expect_text out "copies each unit past twice that"
  # one table row per working set, doubling from 1 MiB, exactly one marked as DRAM's level,
  # and no rate at DRAM's level or beyond more than 15 % over the median of the three largest
  "$PYTHON" - "$WORK/out" <<'PY'
import re, sys
rows = [l for l in open(sys.argv[1]) if re.match(r"^\| [0-9]+ (MiB|GiB) \|", l)]
assert len(rows) >= 7, rows
sizes = [float(r.split("|")[1].split()[0]) * (1024 if "GiB" in r.split("|")[1] else 1) for r in rows]
assert sizes[:7] == [1, 2, 4, 8, 16, 32, 64], sizes
assert all(b > a for a, b in zip(sizes, sizes[1:])), sizes
rates = [float(r.split("|")[2].split()[0]) for r in rows]
marked = [i for i, r in enumerate(rows) if "(DRAM)" in r]
assert len(marked) == 1, rows
dram = sorted(rates[-3:])[1]  # the rates are printed to 0.1 GB/s: 0.1 of room either way
assert all(x <= 1.15 * dram + 0.1 for x in rates[marked[0]:-1]), rates
assert marked[0] == 0 or rates[marked[0] - 1] > 1.15 * dram - 0.1, rates
PY
  expect_exit 2 "$LONGMIX" model --stream-curve --preset llama3-8b
  expect_text err "--stream-curve takes only --threads and --reps"
  expect_exit 2 "$LONGMIX" model --stream-curve --check
  expect_text err "--stream-curve takes only --threads and --reps"
  expect_exit 2 "$LONGMIX" model --stream-curve --threads 0
  expect_text err "--threads"
}

test_a_unit_of_the_same_shapes_is_measured_once_for_every_model() {
  # tiny-twin: tiny-attn under another name; tiny-win: the same with a 64-token window
  "$PYTHON" - "$TINY" "$WORK" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["name"] = "tiny-twin"; json.dump(m, open(sys.argv[2] + "/twin.json", "w"))
m["name"] = "tiny-win"; m["attention"]["window"] = 64; json.dump(m, open(sys.argv[2] + "/win.json", "w"))
PY
  expect_exit 0 "$LONGMIX" model --model "$TINY" --model "$WORK/twin.json" --model "$WORK/win.json" \
    --baseline tiny-attn --ctx 64,1024,4096 --prompt 32 --threads 1 --reps 1 --out "$WORK/m.csv" \
    --crossover-out "$WORK/x.csv"
  "$PYTHON" - "$WORK/m.csv" <<'PY'
import csv, sys
all_rows = list(csv.DictReader(open(sys.argv[1])))
rows = {(r["model"], r["n_ctx"]): r for r in all_rows if r["phase"] == "decode"}
pre = {r["model"]: r for r in all_rows if r["phase"] == "prefill"}
assert pre["tiny-twin"]["ttft_ms"] == pre["tiny-attn"]["ttft_ms"], pre
cols = ["ms_per_token", "proj_ms", "mixing_ms", "mlp_ms", "head_ms", "stream_gbps"]
same = lambda a, b: all(a[c] == b[c] for c in cols)
for n in ("64", "1024", "4096"):  # the same shapes: the same measurement, to the digit
    assert same(rows[("tiny-twin", n)], rows[("tiny-attn", n)]), n
    # past its window the sliding window holds 64 tokens, as the full model at 64
    assert same(rows[("tiny-win", n)], rows[("tiny-attn", "64")]), n
# a full cache of 4096 tokens is another unit than one of 64
assert rows[("tiny-attn", "4096")]["mixing_ms"] != rows[("tiny-attn", "64")]["mixing_ms"]
PY
}

test_a_crossover_over_a_step_that_falls_with_the_context_is_not_a_finding() {
  # the baseline's step at 1024 tokens made 10 % faster than at 64: more tokens held never
  # make less work, so the machine moved between the two and the crossover is not a finding
  expect_exit 0 tiny_run
  edit_rows "$WORK/m.csv" '
at = {r["n_ctx"]: r for r in rows if r["model"] == "tiny-attn"}
for r in rows:
    r["disturbed"], r["stream_frac"] = "0", "0.5"
    r["min_s"] = r["p75_s"] = r["median_s"]
at["1024"]["ms_per_token"] = "%.6f" % (0.9 * float(at["64"]["ms_per_token"]))'
  expect_exit 0 tiny_run --resume
  expect_text out "| not a finding: tiny-attn's step falls from "
  expect_text out " ms between 64 and 1024 tokens (the machine moved) |"
  the_one_crossover_is_not_a_finding
}

test_models_within_five_percent_at_every_ctx_are_a_tie() {
  # the hybrid's step made 3 % slower than the baseline's at both contexts (steady rows):
  # the sides are the minute's, not the models', so the verdict is a tie, with no n*
  expect_exit 0 tiny_run
  edit_rows "$WORK/m.csv" '
base = {r["n_ctx"]: float(r["ms_per_token"]) for r in rows if r["model"] == "tiny-attn"}
base["1024"] = max(base["1024"], base["64"])
for r in rows:
    r["disturbed"], r["stream_frac"] = "0", "0.5"
    r["min_s"] = r["p75_s"] = r["median_s"]
    f = 1.03 if r["model"] == "tiny-hybrid" else 1.0
    r["ms_per_token"] = "%.6f" % (f * base[r["n_ctx"]])'
  expect_exit 0 tiny_run --resume
  expect_text out "| tiny-hybrid | 1 | 1 | tie (within 5 %) | 1024: "
  "$PYTHON" - "$WORK/x.csv" <<'PY'
import csv, sys
x = list(csv.DictReader(open(sys.argv[1])))
assert len(x) == 1 and x[0]["verdict"] == "tie" and x[0]["nstar_ctx"] == "", x
assert x[0]["lower_ctx"] == "1024" and x[0]["upper_ctx"] == "" and x[0]["trust"] == "ok", x
assert abs(float(x[0]["lower_model_ms"]) / float(x[0]["lower_baseline_ms"]) - 1.03) < 1e-3, x
PY
  # 8 % apart is a side: slower at every context
  edit_rows "$WORK/m.csv" '
for r in rows:
    if r["model"] == "tiny-hybrid":
        r["ms_per_token"] = "%.6f" % (float(r["ms_per_token"]) / 1.03 * 1.08)'
  expect_exit 0 tiny_run --resume
  "$PYTHON" -c 'import csv,sys; x = list(csv.DictReader(open(sys.argv[1]))); assert x[0]["verdict"] == "slower_at_every_ctx", x' "$WORK/x.csv"
}
