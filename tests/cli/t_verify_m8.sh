# `longmix verify` on M8 contracts end to end: the shipped seed contract, variants written
# by scripts/build_m8_contract.py (other seeds, lengths, widths, chunk sizes, loads,
# temperature, ZOH system, decode positions), perturbed variants and a tampered copy.

# build_variant FILE ARGS...: writes a variant, prints its SHA-256
build_variant() {
  local out=$1; shift
  "$PYTHON" scripts/build_m8_contract.py --out "$out" "$@" 2>"$WORK/digest" || return 1
  tail -n 1 "$WORK/digest"
}

test_m8_shipped_contract_passes() {
  expect_exit 0 "$LONGMIX" verify contracts/m8.json
  tail -n 1 "$WORK/out" | grep -qE '^[0-9]+ passed, 0 failed, 0 errors$'
  local n; n=$(tail -n 1 "$WORK/out" | cut -d' ' -f1)
  [ "$n" -ge 150 ] || { echo "    only $n checks" >&2; return 1; }
  for section in zoh affine_scan linear_attention delta recall memory decode_flops negative; do
    expect_text out "PASS contracts/m8.json: $section/"
  done
  expect_text out "zoh/transitions[1][0]"
  expect_text out "memory/mamba2_like.crossover_first_integer_token: expected 529, got 529"
}

test_m8_all_eleven_negative_cases_are_checked() {
  expect_exit 0 "$LONGMIX" verify contracts/m8.json
  [ "$(grep -c '^PASS contracts/m8.json: negative/' "$WORK/out")" -eq 11 ]
}

test_m8_generated_variants_pass() {
  for k in 0 1 2 3 5; do
    local digest; digest=$(build_variant "$WORK/v$k.json" --seed-offset $k)
    expect_exit 0 "$LONGMIX" verify --sha256 "$digest" "$WORK/v$k.json"
    tail -n 1 "$WORK/out" | grep -qE '^[0-9]+ passed, 0 failed, 0 errors$'
  done
}

test_m8_variant_with_explicit_parameters_passes() {
  local digest; digest=$(build_variant "$WORK/v.json" --seed-offset 4 \
    --set affine_scan.chunk_size=5 --set affine_scan.sequence_length=31 \
    --set linear_attention.chunk_size=50 --set linear_attention.key_width=3 \
    --set 'recall.stored_pairs=[2,5,11,23,47]' --set 'decode_flops.positions=[7,100000]' \
    --set 'zoh.deltas=[0.3,0.02,2.5]' --set 'zoh.inputs=[[0.5],[-2.0],[1.0]]' \
    --set 'zoh.continuous_a=[-0.5,0.0]' --set 'zoh.continuous_b=[[2.0],[1.0]]' \
    --set 'zoh.output_c=[[1.0,-1.0],[0.5,0.25]]')
  expect_exit 0 "$LONGMIX" verify --sha256 "$digest" "$WORK/v.json"
  expect_text out "affine_scan/chunked == sequential, chunk 5"
  expect_text out "linear_attention/chunked == sequential, chunk 50"
  expect_text out "recall/mse[4]"
}

test_m8_perturbed_variant_fails_naming_the_check() {
  for target in 'zoh.exact_states[1][0]' 'affine_scan.output_checksum' \
                'recall.paired_softmax_mse[2]' 'memory.mamba2_like.crossover_first_integer_token' \
                'decode_flops.ratios[1]' 'delta.gated_half_retrieval[1]'; do
    local digest; digest=$(build_variant "$WORK/p.json" --seed-offset 2 --perturb "$target")
    expect_exit 1 "$LONGMIX" verify --sha256 "$digest" "$WORK/p.json"
    expect_text out "FAIL $WORK/p.json: ${target%%.*}/${target#*.}: "
    tail -n 1 "$WORK/out" | grep -qE '^[0-9]+ passed, 1 failed, 0 errors$'
  done
}

test_m8_recorded_difference_above_its_bound_fails() {
  local digest; digest=$(build_variant "$WORK/p.json" --seed-offset 1 \
    --perturb linear_attention.max_abs_difference)
  expect_exit 1 "$LONGMIX" verify --sha256 "$digest" "$WORK/p.json"
  expect_text out "FAIL $WORK/p.json: linear_attention/max_abs_difference (file value, as a bound)"
}

test_m8_flipped_digit_fails_the_pin() {
  local pin; pin=$(awk '$2 == "m8.json" {print $1}' contracts/SHA256SUMS)
  sed 's/"softmax_seed":107/"softmax_seed":108/' contracts/m8.json > "$WORK/m8.json"
  if cmp -s contracts/m8.json "$WORK/m8.json"; then return 1; fi # the variant differs
  expect_exit 1 "$LONGMIX" verify --sha256 "$pin" "$WORK/m8.json"
  expect_text err "$pin"
  expect_text err "$(sha256sum "$WORK/m8.json" | cut -d' ' -f1)"
  expect_text out "FAIL $WORK/m8.json: pin/sha256"
}

test_m8_changed_parameter_under_its_new_pin_fails_the_recomputation() {
  # the same flipped seed, re-pinned: now the recomputed softmax control no longer matches
  sed 's/"softmax_seed":107/"softmax_seed":108/' contracts/m8.json > "$WORK/m8.json"
  expect_exit 1 "$LONGMIX" verify --sha256 "$(sha256sum "$WORK/m8.json" | cut -d' ' -f1)" "$WORK/m8.json"
  expect_text out "FAIL $WORK/m8.json: recall/softmax_mse_at_128"
}
