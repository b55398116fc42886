# `longmix verify` on kernel-contract cases (and an M8 zoh section) whose shape asks for
# more memory than a case may have (LM_CASE_MAX_BYTES, 1 GiB): every runner adds up all its
# buffers from the shape with checked products before allocating, so each of these small
# files ends in exit 2 naming the shape and the limit, at a few MiB of memory, without a
# crash. The fixtures in tests/fixtures/case_budget are files that crashed (a product that
# wrapped to 0) or took gigabytes (a factor the old caps missed).
pin_of() { sha256sum "$1" | cut -d' ' -f1; }
budget_fixtures=tests/fixtures/case_budget
limit_text="more than the 1 GiB limit of a contract case"
# verify_bounded FILE: verifies FILE pinned to its bytes, with the peak resident memory of
# the run in $WORK/rss (KiB), exit status and output kept as expect_exit does.
verify_bounded() {
  "$PYTHON" - "$LONGMIX" "$1" "$(pin_of "$1")" "$WORK" <<'PY'
import resource, subprocess, sys
longmix, path, pin, work = sys.argv[1:5]
with open(work + "/out", "w") as out, open(work + "/err", "w") as err:
    code = subprocess.run([longmix, "verify", "--sha256", pin, path], stdout=out, stderr=err).returncode
open(work + "/rss", "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
open(work + "/code", "w").write("%d\n" % code)
PY
}
# expect_bounded FILE TEXT: exit 2, TEXT on stderr, peak memory under 256 MiB (the
# sanitizer build's own overhead included; the refused cases ask for 2 GiB to 2^64 bytes).
expect_bounded() {
  verify_bounded "$1"
  local code rss; code=$(cat "$WORK/code"); rss=$(cat "$WORK/rss")
  if [ "$code" -ne 2 ]; then
    echo "    expected exit 2, got $code: verify $1" >&2; sed 's/^/    | /' "$WORK/err" | tail -5 >&2; return 1
  fi
  expect_text err "$2"
  if [ "$rss" -gt 262144 ]; then
    echo "    peak memory $rss KiB, more than 256 MiB: verify $1" >&2; return 1
  fi
}
# budget_case OUT KERNEL EDIT: the first case of contracts/kernels.json with kernel KERNEL
# that expects values, changed by the Python statement EDIT (on `c`, the case, and `s`, its
# shape), as the only case of OUT.
budget_case() {
  "$PYTHON" - "$1" "$2" "$3" <<'PY'
import json, sys
d = json.load(open("contracts/kernels.json"))
c = next(c for c in d["cases"] if c["kernel"] == sys.argv[2] and "status" not in c["expected"])
s = c["shape"]
c.setdefault("options", {})
exec(sys.argv[3])
json.dump({"schema": d["schema"], "cases": [c]}, open(sys.argv[1], "w"))
PY
}

test_conv_whose_size_product_wraps_is_refused_f32() {
  expect_bounded $budget_fixtures/kern_conv_f32.json "case conv_overflow.f32: shape {batch 4194304, length 2097152, channels 2097152, width 1} needs more bytes than a size_t holds (all its buffers), $limit_text"
}
test_conv_whose_size_product_wraps_is_refused_f64() {
  expect_bounded $budget_fixtures/kern_conv_f64.json "case conv_overflow.f64: shape {batch 4194304, length 2097152, channels 2097152, width 1} needs more bytes than a size_t holds (all its buffers), $limit_text"
}
test_mamba1_initial_state_counts_in_the_budget() {
  # h0 and h_final {B, D, N} are 8 GiB of the 12.8: the old cap left B.D.N out
  expect_bounded $budget_fixtures/k_mamba1_h0_4GB.json "case k_mamba1_h0_4GB: shape {batch 8, length 1, channels 8192, state 8192} needs 12.8 GiB (all its buffers), $limit_text"
}
test_ssd_groups_are_bounded_before_allocating() {
  # 2^27 groups: b and c {B, L, G, N} took 2.1 GB before the kernel refused the shape
  expect_bounded $budget_fixtures/k_ssd_groups_2GB.json "case k_ssd_groups_2GB: shape.heads, shape.groups: the kernel refuses this shape (heads (1) must be a multiple of groups (134217728))"
}
test_m8_zoh_system_within_its_field_caps_is_bounded_by_the_budget() {
  # 16384 steps of 4096 states (each field within its cap): 8 scan buffers and the report of
  # every element checked together, refused from the shape before anything is allocated
  expect_bounded $budget_fixtures/m8_zoh_4GB.json "zoh: checking 16384 steps of 4096 states, 1 inputs and 1 outputs needs 99.5 GiB (all its buffers), more than the 1 GiB limit"
}
test_ssd_groups_within_heads_count_in_the_budget() {
  budget_case "$WORK/g.json" ssm_ssd 's.update(batch=1, length=1 << 20, heads=1 << 10, head_dim=1, groups=1 << 10, state=1); c["id"] = "g"'
  expect_bounded "$WORK/g.json" "case g: shape {batch 1, length 1048576, heads 1024, head_dim 1, groups 1024, state 1} needs"
  expect_text err "$limit_text"
}
# Every runner: a shape within each field's own cap whose buffers together pass the limit
# (products that wrap 64 bits among them), refused before anything is allocated. Not
# attention_prefill: its n * heads * head_dim <= 2^24 keeps it within the limit, as kv_heads
# <= heads by the kernel's rule (checked when the contract is loaded).
test_every_runner_refuses_a_shape_past_the_budget() {
  local edits=(
    'gemv_rowdot|s.update(n=(1 << 31) - 1, d=(1 << 31) - 1)'
    'attention_decode|s.update(heads=1 << 30)'
    'window_decode|c["options"]["window"] = 1 << 40'
    'kvquant_decode|c["options"]["recent"] = 1 << 62'
    'latent_mla|s.update(heads=1 << 20, latent=1 << 20)'
    'ssm_mamba1_scan|s.update(batch=1 << 30, length=1 << 30, channels=1 << 30)'
    'conv_causal|s.update(batch=1 << 12, length=1 << 12, channels=1 << 12)'
    'scan_affine|s.update(steps=1 << 20, width=1 << 20)'
    'linear_attention|s.update(heads=1 << 30, length=1 << 30, d_key=1 << 30)'
    'ssm_ssd|s.update(batch=1 << 30, length=1 << 30, heads=1 << 30)'
    'delta_rule|s.update(heads=1 << 30, length=1 << 30, d_value=1 << 30)'
  )
  local entry kernel
  for entry in "${edits[@]}"; do
    kernel=${entry%%|*}
    budget_case "$WORK/$kernel.json" "$kernel" "${entry#*|}; c['id'] = 'big_$kernel'"
    expect_bounded "$WORK/$kernel.json" "case big_$kernel: shape {" || { echo "    ($kernel)" >&2; return 1; }
    expect_text err "$limit_text" || { echo "    ($kernel)" >&2; return 1; }
  done
}
test_a_case_within_the_budget_still_runs() {
  budget_case "$WORK/ok.json" conv_causal 'c["id"] = "ok"'
  expect_exit 0 "$LONGMIX" verify --sha256 "$(pin_of "$WORK/ok.json")" "$WORK/ok.json"
  expect_text out "0 failed, 0 errors"
}
