# longmix verify --plugin: the example plugins of examples/plugins/ (built by `make plugins`
# into the binary's build folder) against the pinned kernel contract, with the exact
# verdicts each earns, and the plugins longmix must refuse (exit 2 with the reason).
# OMP_NUM_THREADS is fixed so the decode's split of the key range is the same everywhere.
plugins() { # the folder of the example plugins, built when missing or stale
  local build
  build=$(dirname "$LONGMIX")
  make --no-print-directory -s plugins BUILD="${build#"$PWD"/}" >/dev/null
  echo "$build/plugins"
}
contract=contracts/kernels.json
export OMP_NUM_THREADS=2
# In a sanitizer build the crash must stay a signal (ASan would turn it into exit 86).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0"

test_plugin_naive_passes_every_case_it_provides() {
  local dir; dir=$(plugins)
  expect_exit 0 "$LONGMIX" verify --plugin "$dir/naive.so" "$contract"
  expect_text out "354 passed, 0 failed, 0 errors, 10 not provided"
  expect_text out "PASS $contract: plugin:naive/attn_decode_f16/"
  expect_text out "PASS $contract: plugin:naive/attn_decode_bf16/"
  expect_text out "PASS $contract: plugin:naive/conv_causal_f32/"
  expect_text out "PASS $contract: plugin:naive/mamba1_scan_f32/ssm_mamba1_scan.f32.zoh.b1_l1_d16_n16/sum"
  expect_text out "NOT PROVIDED $contract: plugin:naive/attn_prefill_f32/not provided: 14 cases of $contract not run"
  # longmix's own checks are not run with --plugin (only the file's pin is), and every
  # plugin case (31 with values, 6 rejections) has its bounds check
  ! grep -q ": kernels/" "$WORK/out"
  [ "$(grep -c '/bounds: ' "$WORK/out")" -eq 37 ] && [ "$(grep -c '/count: ' "$WORK/out")" -eq 31 ]
  [ "$(grep -c '/rejects: ' "$WORK/out")" -eq 6 ]
  expect_text out "PASS $contract: pin/sha256"
  # --summary: what was left out is counted, not taken for a failure
  expect_exit 0 "$LONGMIX" verify --plugin "$dir/naive.so" --summary "$contract"
  [ "$(head -1 "$WORK/out")" = "PASS $contract: 354 checks, 354 passed, 0 failed, 10 not provided" ]
}

test_plugin_wrong_fails_past_the_tolerance() {
  local dir; dir=$(plugins)
  expect_exit 1 "$LONGMIX" verify --plugin "$dir/wrong.so" "$contract"
  expect_text out "50 passed, 10 failed, 0 errors, 14 not provided"
  expect_text out "FAIL $contract: plugin:wrong/attn_decode_f32/attention_decode.f32.b3_h2_kv2_d128_n130/at[256]: expected 0.18798858555201897"
  [ "$(grep '^FAIL' "$WORK/out" | grep -vc 'plugin:wrong/attn_decode_f32/')" -eq 0 ]
}

test_plugin_crash_is_a_failed_case_naming_the_signal() {
  local dir; dir=$(plugins)
  expect_exit 1 "$LONGMIX" verify --plugin "$dir/crash.so" "$contract"
  expect_text out "77 passed, 12 failed, 0 errors, 13 not provided"
  expect_text out "FAIL $contract: plugin:crash/attn_decode_f32/attention_decode.f32.b2_h8_kv2_d64_n700/run: expected the kernel returns, got killed by signal SIGSEGV"
  # the conv after the crashes still ran; its write past its output is caught by the guards
  expect_text out "FAIL $contract: plugin:crash/conv_causal_f32/conv_causal.f32.b1_l1_d16_k4/bounds: expected nothing written outside the case's buffers, got 4 guard bytes changed"
  expect_text out "PASS $contract: plugin:crash/conv_causal_f32/conv_causal.f32.b1_l1_d16_k4/sum"
  [ "$(grep -c 'killed by signal SIGSEGV' "$WORK/out")" -eq 5 ]
  [ "$(grep -c '/bounds: expected nothing written outside the case.s buffers, got 4 ' "$WORK/out")" -eq 7 ]
}

test_plugin_hang_times_out_and_the_rest_runs() {
  local dir; dir=$(plugins)
  expect_exit 1 "$LONGMIX" verify --plugin "$dir/hang.so" --timeout 0.3 "$contract"
  expect_text out "5 passed, 13 failed, 0 errors, 14 not provided"
  expect_text out "FAIL $contract: plugin:hang/mamba1_scan_f32/ssm_mamba1_scan.f32.euler.b1_l1_d16_n16/run: expected the kernel returns, got timed out after 0.3 s (killed with SIGKILL; --timeout)"
  # the rejection cases fail in the driver before the kernel is called, so they pass
  expect_text out "PASS $contract: plugin:hang/mamba1_scan_f32/ssm_mamba1_scan.f32.euler.b1_l4_d8_n4.positive_a/rejects"
  [ "$(grep -c 'timed out after 0.3 s' "$WORK/out")" -eq 13 ]
}

test_plugin_checks_in_every_format() {
  local dir; dir=$(plugins)
  expect_exit 1 "$LONGMIX" verify --plugin "$dir/crash.so" --format tap "$contract"
  expect_text out "- $contract: plugin:crash/attn_prefill_f32/not provided # SKIP not provided"
  expect_text out "not ok 2 - $contract: plugin:crash/attn_decode_f32/attention_decode.f32.b2_h8_kv2_d64_n700/run"
  expect_text out "# 77 passed, 12 failed, 0 errors, 13 not provided"
  expect_exit 1 "$LONGMIX" verify --plugin "$dir/crash.so" --format junit "$contract"
  expect_text out 'failures="12" errors="0" skipped="13">'
  expect_text out '<testcase classname="plugin:crash/attn_decode_f32" name="attention_decode.f32.b2_h8_kv2_d64_n700/run">'
  expect_text out '<skipped message="not provided: 14 cases of contracts/kernels.json not run"/>'
  expect_exit 1 "$LONGMIX" verify --plugin "$dir/crash.so" --format json "$contract"
  "$PYTHON" - "$WORK/out" <<'PY'
import collections, json, sys
report = json.load(open(sys.argv[1]))
assert (report["passed"], report["failed"], report["errors"], report["not_provided"]) == (77, 12, 0, 13), report
statuses = collections.Counter(c["status"] for c in report["checks"])
assert statuses == {"pass": 77, "fail": 12, "not provided": 13}, statuses
assert all(c["section"].startswith("plugin:crash/") for c in report["checks"][1:])
assert report["checks"][0]["section"] == "pin"
PY
}

test_plugin_that_cannot_be_loaded_is_exit_2() {
  local dir; dir=$(plugins)
  expect_exit 2 "$LONGMIX" verify --plugin "$dir/abi_mismatch.so" "$contract"
  expect_text err "plugin ABI version 2, but this longmix speaks version 1"
  expect_exit 2 "$LONGMIX" verify --plugin "$dir/no_entry.so" "$contract"
  expect_text err "no entry point longmix_plugin_entry"
  printf 'not a shared object\n' > "$WORK/text.so"
  expect_exit 2 "$LONGMIX" verify --plugin "$WORK/text.so" "$contract"
  expect_text err "cannot load plugin $WORK/text.so: "
  expect_exit 2 "$LONGMIX" verify --plugin "$WORK/missing.so" "$contract"
  expect_text err "cannot load plugin $WORK/missing.so: "
  expect_exit 2 "$LONGMIX" verify --plugin "$dir/naive.so" --timeout 0 "$contract"
  expect_text err "--timeout needs seconds in (0, 86400], got 0"
}

test_plugin_skips_contracts_of_other_schemas() {
  local dir; dir=$(plugins)
  expect_exit 0 "$LONGMIX" verify --plugin "$dir/naive.so"
  expect_text err "contracts/m8.json: skipped with --plugin (schema"
  expect_text err "contracts/primer.json: skipped with --plugin (schema"
  expect_text out "356 passed, 0 failed, 0 errors, 10 not provided" # and the three pins
}

test_plugin_sweep_measures_beside_longmix() {
  local dir; dir=$(plugins)
  expect_exit 0 "$LONGMIX" sweep --plugin "$dir/naive.so" --kernel attn_decode,conv_causal,gemv_rowdot,mamba1_step \
    --ctx 64 --dtype f32,bf16 --d-inner 64 --reps 2 --no-roofline --interleave threads --out "$WORK/s.csv"
  "$PYTHON" - "$WORK/s.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
kernels = [r["kernel"] for r in rows]
# each plugin row right after longmix's row of the same configuration; gemv_rowdot: no plugin
# op; the Mamba-1 step runs the plugin's scan operator at length 1
assert kernels == ["attn_decode", "plugin:naive/attn_decode_f32", "attn_decode",
                   "plugin:naive/attn_decode_bf16", "conv_causal", "plugin:naive/conv_causal_f32",
                   "gemv_rowdot", "mamba1_step", "plugin:naive/mamba1_scan_f32"], kernels
key = ("isa", "threads", "dtype", "bits", "n_ctx", "heads", "kv_heads", "head_dim", "d_inner",
       "d_state", "batch", "disc")
assert rows[8]["n_ctx"] == "0" and rows[8]["d_inner"] == "64" and rows[8]["disc"] == "zoh"
for own, plugin in ((rows[0], rows[1]), (rows[2], rows[3]), (rows[4], rows[5]), (rows[7], rows[8])):
    assert all(own[k] == plugin[k] for k in key), (own, plugin)
    assert own["status"] == plugin["status"] == "ok", (own["status"], plugin["status"])
    assert abs(float(own["checksum"]) - float(plugin["checksum"])) <= 1e-5 * abs(float(own["checksum"])) + 1e-5
    assert float(plugin["median_s"]) > 0 and plugin["flops"] == own["flops"]
    # measured in turn with its twin (--interleave threads): both rows say so
    assert own["note"] == plugin["note"] == "interleaved with 1 other configuration", (own["note"], plugin["note"])
assert rows[6]["note"] == ""
PY
  expect_exit 2 "$LONGMIX" sweep --plugin "$dir/no_entry.so" --kernel attn_decode --out "$WORK/x.csv"
  expect_text err "no entry point longmix_plugin_entry"
  [ ! -e "$WORK/x.csv" ]
}
