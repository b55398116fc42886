# `longmix verify` on bad input: what it reads (regular files, sizes, ragged arrays, memory
# budgets), what it prints (escaped ids), and how an aborted run reads in every format.
pin_of() { sha256sum "$1" | cut -d' ' -f1; }
# plant_links OUT TARGET: symlinks to TARGET at the old writer's temp names OUT.tmp.<pid>
# for the next 400 pids (made by one process, so the next ones are the command's)
plant_links() {
  "$PYTHON" -c 'import os, sys; [os.symlink(sys.argv[2], "%s.tmp.%d" % (sys.argv[1], p)) for p in range(os.getpid() + 1, os.getpid() + 401)]' "$1" "$2"
}
# kernel_case OUT EDIT: contracts/kernels.json's first attention_prefill case that expects
# values, changed by the Python statement EDIT (on `c`), as the only case of OUT.
kernel_case() {
  "$PYTHON" - "$1" "$2" <<'PY'
import json, sys
d = json.load(open("contracts/kernels.json"))
c = next(c for c in d["cases"] if c["kernel"] == "attention_prefill" and "status" not in c["expected"])
exec(sys.argv[2])
json.dump({"schema": d["schema"], "cases": [c]}, open(sys.argv[1], "w"))
PY
}

test_ragged_array_is_bad_input_naming_the_sub_array() {
  "$PYTHON" - "$WORK/r.json" <<'PY'
import json, sys
d = json.load(open("contracts/m8.json"))
d["zoh"]["exact_input_matrices"] = [[[0.0, 0.0], 0.0], 0.0]
json.dump(d, open(sys.argv[1], "w"))
PY
  expect_exit 2 "$LONGMIX" verify --sha256 "$(pin_of "$WORK/r.json")" "$WORK/r.json"
  expect_text err "zoh.exact_input_matrices must be rectangular: zoh.exact_input_matrices[0][1] must be an array of 2 entries, got a real number"
}
test_zoh_system_past_the_memory_budget_is_refused_before_allocating() {
  # 16384 steps of 4096 states: within each field's cap, 3 GiB of scan buffers and a report of 2^28 checks together
  "$PYTHON" - "$WORK/z.json" <<'PY'
import json, sys
d = json.load(open("contracts/m8.json"))
z = d["zoh"]
z["continuous_a"] = [-1.0] * 4096
z["continuous_b"] = [[1.0]] * 4096
z["output_c"] = [[1.0] * 4096]
z["inputs"] = [[1.0]] * 16384
z["deltas"] = [0.1] * 16384
json.dump(d, open(sys.argv[1], "w"))
PY
  expect_exit 2 "$LONGMIX" verify --sha256 "$(pin_of "$WORK/z.json")" "$WORK/z.json"
  expect_text err "zoh: checking 16384 steps of 4096 states, 1 inputs and 1 outputs needs 99.5 GiB (all its buffers), more than the 1 GiB limit"
}
test_control_characters_in_an_id_are_escaped_in_every_format() {
  kernel_case "$WORK/c.json" 'c["id"] = "evil\nPASS forged line\x1b[7m # SKIP"; c["expected"]["count"] += 1'
  local p; p=$(pin_of "$WORK/c.json")
  expect_exit 1 "$LONGMIX" verify --sha256 "$p" "$WORK/c.json"
  if grep -q "^PASS forged" "$WORK/out" || grep -q $'\x1b' "$WORK/out"; then
    echo "    a forged line or a raw escape reached the text report" >&2; return 1
  fi
  expect_text out 'kernels/evil\nPASS forged line\x1b[7m # SKIP/'
  expect_exit 1 "$LONGMIX" verify --format tap --sha256 "$p" "$WORK/c.json"
  expect_text out 'evil\nPASS forged line\x1b[7m \# SKIP/'
  ! grep -q $'\x1b' "$WORK/out"
  expect_exit 1 "$LONGMIX" verify --format junit --sha256 "$p" "$WORK/c.json"
  "$PYTHON" -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); names = [t.get("name") for t in r.iter("testcase")]; assert any(n.startswith("evil\\nPASS") for n in names), names; assert int(r.get("failures")) >= 1' "$WORK/out"
  expect_exit 1 "$LONGMIX" verify --format json --sha256 "$p" "$WORK/c.json"
  "$PYTHON" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert all(ch >= " " for c in d["checks"] for ch in c["name"]), d' "$WORK/out"
}
test_an_aborted_run_is_an_error_in_every_format() {
  # the pin passes, then the file does not load (exit 2): never "0 failed" alone
  kernel_case "$WORK/a.json" 'c["dtype"] = "f8"'
  local p; p=$(pin_of "$WORK/a.json")
  expect_exit 2 "$LONGMIX" verify --sha256 "$p" "$WORK/a.json"
  tail -n 1 "$WORK/out" | grep -qx '1 passed, 0 failed, 1 errors'
  expect_text out "ERROR $WORK/a.json: case "
  expect_exit 2 "$LONGMIX" verify --format tap --sha256 "$p" "$WORK/a.json"
  expect_text out "not ok 2 - $WORK/a.json: load/error"
  tail -n 1 "$WORK/out" | grep -qx '# 1 passed, 0 failed, 1 errors'
  expect_exit 2 "$LONGMIX" verify --format junit --sha256 "$p" "$WORK/a.json"
  "$PYTHON" -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); assert r.get("errors") == "1" and r.get("failures") == "0", r.attrib; assert len(list(r.iter("error"))) == 1' "$WORK/out"
  expect_text err "1 passed, 0 failed, 1 errors"
  expect_exit 2 "$LONGMIX" verify --format json --sha256 "$p" "$WORK/a.json"
  "$PYTHON" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["errors"] == 1 and d["checks"][-1]["status"] == "error", d' "$WORK/out"
  # an unpinned file, and a missing SHA256SUMS, count the same way
  cp contracts/m8.json "$WORK/m8.json"
  expect_exit 2 "$LONGMIX" verify "$WORK/m8.json"
  tail -n 1 "$WORK/out" | grep -qx '0 passed, 0 failed, 1 errors'
  expect_exit 2 "$LONGMIX" verify --contracts "$WORK/none" --format junit
  "$PYTHON" -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); assert r.get("errors") == "1", r.attrib' "$WORK/out"
}
test_unsupported_dtype_is_bad_input() {
  kernel_case "$WORK/f8.json" 'c["dtype"] = "f8"'
  expect_exit 2 "$LONGMIX" verify --sha256 "$(pin_of "$WORK/f8.json")" "$WORK/f8.json"
  expect_text err "dtype f8 is not supported by kernel attention_prefill (supported: f32, bf16, f64)"
}
test_invalid_kernel_shape_is_bad_input_naming_the_fields() {
  kernel_case "$WORK/g.json" 'c["id"] = "gqa"; c["shape"]["heads"] = 6; c["shape"]["kv_heads"] = 4'
  expect_exit 2 "$LONGMIX" verify --sha256 "$(pin_of "$WORK/g.json")" "$WORK/g.json"
  expect_text err "case gqa: shape.heads, shape.kv_heads: the kernel refuses this shape (heads (6) must be a multiple of kv_heads (4))"
}
# A contract whose second case has a shape its kernel refuses is refused when it is loaded:
# exit 2 naming the case and fields, and no check of the valid first case was recorded (a
# refusal found only when the case ran came after the first case's checks).
test_invalid_kernel_shape_is_refused_at_load_before_any_case_runs() {
  "$PYTHON" - "$WORK/two.json" <<'PY'
import json, sys
d = json.load(open("contracts/kernels.json"))
first = next(c for c in d["cases"] if c["kernel"] == "conv_causal" and "status" not in c["expected"])
bad = {kernel: json.loads(json.dumps(next(c for c in d["cases"] if c["kernel"] == kernel and "status" not in c["expected"])))
       for kernel in ("attention_decode", "ssm_ssd", "latent_mla")}
bad["attention_decode"]["shape"].update(heads=6, kv_heads=4)
bad["ssm_ssd"]["shape"].update(heads=6, groups=4)
bad["latent_mla"]["shape"].update(v_dim=bad["latent_mla"]["shape"]["nope"] + bad["latent_mla"]["shape"]["rope"] + 1)
for kernel, case in bad.items():
    case["id"] = "bad_" + kernel
    json.dump({"schema": d["schema"], "cases": [first, case]}, open(sys.argv[1].replace("two", kernel), "w"))
PY
  local -A says=(
    [attention_decode]="case bad_attention_decode: shape.heads, shape.kv_heads: the kernel refuses this shape (heads (6) must be a multiple of kv_heads (4))"
    [ssm_ssd]="case bad_ssm_ssd: shape.heads, shape.groups: the kernel refuses this shape (heads (6) must be a multiple of groups (4))"
    [latent_mla]="case bad_latent_mla: shape.rope, shape.nope, shape.v_dim: the kernel refuses this shape (v_dim (49) must be at most nope + rope (48))"
  )
  local kernel
  for kernel in attention_decode ssm_ssd latent_mla; do
    expect_exit 2 "$LONGMIX" verify --format tap --sha256 "$(pin_of "$WORK/$kernel.json")" "$WORK/$kernel.json"
    expect_text err "${says[$kernel]}"
    if grep -q "^ok .*: kernels/" "$WORK/out"; then
      echo "    a check ran before the load was refused ($kernel):" >&2; head -5 "$WORK/out" >&2; return 1
    fi
  done
}
# A shape past the memory budget is refused at load too, before the valid first case runs.
test_shape_past_the_budget_is_refused_at_load() {
  "$PYTHON" - "$WORK/big.json" <<'PY'
import json, sys
d = json.load(open("contracts/kernels.json"))
first = next(c for c in d["cases"] if c["kernel"] == "conv_causal" and "status" not in c["expected"])
big = json.loads(json.dumps(first))
big["id"] = "big"
big["shape"].update(batch=1 << 22, length=1 << 21, channels=1 << 21)
json.dump({"schema": d["schema"], "cases": [first, big]}, open(sys.argv[1], "w"))
PY
  expect_exit 2 "$LONGMIX" verify --format tap --sha256 "$(pin_of "$WORK/big.json")" "$WORK/big.json"
  expect_text err "case big: shape {batch 4194304, length 2097152, channels 2097152, width"
  if grep -q "^ok .*: kernels/" "$WORK/out"; then
    echo "    a check ran before the load was refused:" >&2; head -5 "$WORK/out" >&2; return 1
  fi
}
test_fifo_is_refused_without_waiting() {
  mkfifo "$WORK/fifo"
  expect_exit 2 timeout 20 "$LONGMIX" verify --sha256 "$(pin_of contracts/m8.json)" "$WORK/fifo"
  expect_text err "$WORK/fifo: not a regular file (a FIFO); pipe it to '-' instead"
  expect_exit 2 timeout 20 "$LONGMIX" verify --sha256 "$(pin_of contracts/m8.json)" /dev/zero
  expect_text err "/dev/zero: not a regular file (a character device)"
}
test_standard_input_is_read_as_dash() {
  local p; p=$(pin_of contracts/m8.json)
  expect_exit 0 bash -c "cat contracts/m8.json | \"$LONGMIX\" verify --sha256 $p -"
  tail -n 1 "$WORK/out" | grep -qE '^[0-9]+ passed, 0 failed, 0 errors$'
  expect_exit 2 bash -c "cat contracts/m8.json | \"$LONGMIX\" verify -"
  expect_text err "standard input has no folder and so no SHA256SUMS: pass its pin with --sha256 HEX"
}
test_directory_is_said_to_be_one() {
  expect_exit 2 "$LONGMIX" verify --sha256 "$(pin_of contracts/m8.json)" "$WORK"
  expect_text err "longmix verify: $WORK: is a directory"
}
test_missing_pin_names_the_folder() {
  mkdir "$WORK/sub"
  cp contracts/m8.json "$WORK/sub/m8.json"
  expect_exit 2 "$LONGMIX" verify "$WORK/sub/m8.json"
  expect_text err "$WORK/sub/m8.json has no pin: its folder '$WORK/sub' has no usable SHA256SUMS"
  expect_exit 2 bash -c "cd '$WORK/sub' && '$LONGMIX' verify m8.json"
  expect_text err "m8.json has no pin: its folder '.' has no usable SHA256SUMS"
  (cd "$WORK/sub" && sha256sum m8.json > SHA256SUMS)
  expect_exit 0 bash -c "cd '$WORK/sub' && '$LONGMIX' verify m8.json"
}
test_contract_over_the_size_limit_is_refused() {
  truncate -s 17M "$WORK/big.json"
  expect_exit 2 "$LONGMIX" verify --sha256 "$(pin_of contracts/m8.json)" "$WORK/big.json"
  expect_text err "$WORK/big.json: larger than the 16 MiB limit for such a file"
}
test_long_pin_line_is_reported_at_its_own_line() {
  mkdir "$WORK/c"
  # a valid pin of a 2000-character name, a valid pin, then a bad line 3 (a 1024-byte line
  # buffer made the long name's tail line 2)
  { printf '%064d  %02000d\n' 0 7; printf '%064d  m8.json\n' 0; echo "not a pin"; } > "$WORK/c/SHA256SUMS"
  expect_exit 2 "$LONGMIX" verify --contracts "$WORK/c"
  expect_text err "$WORK/c/SHA256SUMS:3: expected '<64 hex digits>  <file>'"
}
test_output_is_written_atomically_and_never_through_a_planted_link() {
  echo precious > "$WORK/victim"
  plant_links "$WORK/r.xml" "$WORK/victim"
  expect_exit 0 "$LONGMIX" verify --format junit --output "$WORK/r.xml" contracts/m8.json
  [ "$(cat "$WORK/victim")" = precious ]
  "$PYTHON" -c 'import sys, xml.etree.ElementTree as E; assert E.parse(sys.argv[1]).getroot().get("failures") == "0"' "$WORK/r.xml"
  ! ls -A "$WORK" | grep -q '^\.r\.xml\.tmp'
  expect_exit 2 "$LONGMIX" verify --output "$WORK/no/such/dir/r.txt" contracts/m8.json
  expect_text err "cannot write $WORK/no/such/dir/r.txt: No such file or directory"
}
