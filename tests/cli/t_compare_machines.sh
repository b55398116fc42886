# longmix compare-machines: two synthetic hosts' results folders side by side.

# row HOST CPU ISA THREADS KERNEL DTYPE N_CTX CHUNK MEDIAN_S GFLOPS GBPS ROOFLINE_FRAC: one
# results row (the results columns and longmix's extras).
cm_row() {
  echo "run-$1,2026-12-02T10:00:00Z,abc1234,$1,$2,$3,$4,$5,$6,32,$7,$8,32,8,128,0,0,1,5,$9,$9,$9,$9,${10},${11},${12},1.5,ok,1e9,1e8,0,,gcc 12,8,33554432"
}
cm_header() {
  echo "run_id,timestamp,git_rev,host,cpu_model,isa,threads,kernel,dtype,bits,n_ctx,chunk,heads,kv_heads,head_dim,d_inner,d_state,batch,reps,median_s,min_s,p25_s,p75_s,gflops,gbps,roofline_frac,checksum,status,flops,bytes,err_max,note,compiler,cores,llc_bytes"
}
# Folder $1 for host $2 (CPU $3, ISA $4), with limits peak $5 / triad $6 on 1 thread and
# twice that on 2, a decode at n = 4096 taking $7 s at roofline fraction $8, and crossovers.
cm_host() {
  local d=$WORK/$1 h=$2 cpu=$3 isa=$4
  mkdir -p "$d"
  {
    cm_header
    cm_row "$h" "$cpu" "$isa" 1 peak_fma f32 0 0 1 "$5" 0 1
    cm_row "$h" "$cpu" "$isa" 2 peak_fma f32 0 0 1 "$(($5 * 2))" 0 1
    cm_row "$h" "$cpu" scalar 1 peak_fma f32 0 0 1 5 0 1
    cm_row "$h" "$cpu" "$isa" 1 stream_triad f64 0 0 1 0 "$6" 1
    cm_row "$h" "$cpu" "$isa" 2 stream_triad f64 0 0 1 0 "$(($6 * 2))" 1
  } > "$d/roofline.csv"
  {
    cm_header
    cm_row "$h" "$cpu" "$isa" 1 attn_decode f16 4096 0 "$7" 10 20 "$8"
    cm_row "$h" "$cpu" "$isa" 1 attn_decode f16 16384 0 0.02 10 20 0.5
    cm_row "$h" "$cpu" scalar 1 attn_decode f16 4096 0 0.5 1 2 0.9
  } > "$d/sweep.csv"
  {
    echo "phase,method_a,method_b,dtype,isa,threads,found,n_star,lo_n,lo_a_s,lo_b_s,hi_n,memory_n,flop_n"
    echo "decode,attention,Mamba-1 step,f16,$isa,1,found,$9,1024,0.0003,0.0005,2048,80,40"
    echo "prefill,causal attention,mamba1_scan,f32,$isa,1,above_grid,4096,4096,6.8,7.8,0,0,79"
  } > "$d/crossover_summary.csv"
  # longmix model's crossover file (its header: t_model.sh checks a real run writes it)
  local p="run-$h,2026-12-02T10:00:00Z,abc1234,$h,$cpu,$isa"
  {
    echo "$MODEL_CROSSOVER_HEADER"
    echo "$p,1,1,falcon-mamba-7b,llama3-8b,bf16,bf16,decode,crossed,${10},16384,2.1,2.0,32768,2.2,2.4,900,70000,ok"
    echo "$p,1,8,falcon-mamba-7b,llama3-8b,bf16,bf16,decode,faster_at_every_ctx,,,,,1024,3.0,3.5,100,9000,ok"
    echo "$p,2,1,falcon-mamba-7b,llama3-8b,bf16,bf16,decode,slower_at_every_ctx,,65536,1.9,1.2,,,,900,70000,not_a_finding"
    echo "$p,2,8,falcon-mamba-7b,llama3-8b,bf16,bf16,decode,tie,,131072,2.0,2.05,,,,100,9000,ok"
  } > "$d/model_crossover.csv"
}
MODEL_CROSSOVER_HEADER=run_id,timestamp,git_rev,host,cpu_model,isa,threads,batch,model,baseline,cache,weights,phase,verdict,nstar_ctx,lower_ctx,lower_model_ms,lower_baseline_ms,upper_ctx,upper_model_ms,upper_baseline_ms,memory_nstar_cache,memory_nstar_total,trust
cm_two_hosts() {
  cm_host a alpha "Alpha CPU" avx512 200 30 0.0016 0.82 1116 23000
  cm_host b beta "Beta CPU" neon 50 20 0.0030 0.65 2900 41000
}

test_compare_machines_tables_side_by_side() {
  cm_two_hosts
  expect_exit 0 "$LONGMIX" compare-machines "$WORK/a" "$WORK/b" --csv "$WORK"
  expect_text out "| machine | alpha | beta |"
  expect_text out "| CPU | Alpha CPU | Beta CPU |"
  expect_text out "| ISA compared | avx512 | neon |"
  # roofline: each machine's own ISA (not the scalar row), triad, ridge = peak / triad
  expect_text out "| peak f32 FMA, GFLOP/s | 1 | 200.0 | 50.0 |"
  expect_text out "| peak f32 FMA, GFLOP/s | 2 | 400.0 | 100.0 |"
  expect_text out "| STREAM triad, GB/s | 2 | 60.0 | 40.0 |"
  expect_text out "| ridge, FLOP/byte | 1 | 6.7 | 2.5 |"
  # kernels on their own machine's roofline (the scalar decode row is not compared)
  expect_text out "| attn_decode | f16, n_ctx 4096 | 1 | 0.82 (1.6 ms) | 0.65 (3 ms) |"
  expect_text out "| attn_decode | f16, n_ctx 16384 | 1 | 0.50 (20 ms) | 0.50 (20 ms) |"
  # kernel-level and model-level crossovers per machine
  expect_text out "## Kernel-level crossover, measured n* (crossover_summary.csv)"
  expect_text out "| decode | attention | Mamba-1 step | f16 | 1 | 1116 | 2900 |"
  expect_text out "| prefill | causal attention | mamba1_scan | f32 | 1 | > 4096 | > 4096 |"
  expect_text out "## Model-level crossover, measured n* (model_crossover.csv)"
  expect_text out "| 1 | 1 | falcon-mamba-7b | llama3-8b | bf16 | bf16 | decode | 23000 | 41000 |"
  expect_text out "| 1 | 8 | falcon-mamba-7b | llama3-8b | bf16 | bf16 | decode | <= 1024 | <= 1024 |"
  expect_text out "| 2 | 1 | falcon-mamba-7b | llama3-8b | bf16 | bf16 | decode | > 65536 (not a finding) | > 65536 (not a finding) |"
  expect_text out "| 2 | 8 | falcon-mamba-7b | llama3-8b | bf16 | bf16 | decode | tie to 131072 | tie to 131072 |"
  # the same tables as CSV
  grep -qx 'limit,threads,alpha,beta' "$WORK/compare_roofline.csv"
  grep -qx '"peak f32 FMA, GFLOP/s",1,200.0,50.0' "$WORK/compare_roofline.csv"
  grep -qx 'threads,batch,model,baseline,cache,weights,phase,alpha,beta' "$WORK/compare_model_crossover.csv"
  [ -f "$WORK/compare_kernels.csv" ] && [ -f "$WORK/compare_machines.csv" ]
}
test_compare_machines_missing_rows_and_out_file() {
  cm_two_hosts
  rm "$WORK/b/model_crossover.csv"
  cm_row beta "Beta CPU" neon 2 mamba1_step f32 0 0 0.0002 3 9 0.3 >> "$WORK/b/sweep.csv"
  expect_exit 0 "$LONGMIX" compare-machines "$WORK/a" "$WORK/b" --out "$WORK/cmp.md"
  [ ! -s "$WORK/out" ]
  grep -qF "| mamba1_step | f32 | 2 | - | 0.30 (200.0 µs) |" "$WORK/cmp.md"
  grep -qF "| 1 | 1 | falcon-mamba-7b | llama3-8b | bf16 | bf16 | decode | 23000 | - |" "$WORK/cmp.md"
}
test_compare_machines_refuses_bad_input() {
  cm_two_hosts
  expect_exit 2 "$LONGMIX" compare-machines "$WORK/a"
  expect_text err "give two or more results folders"
  expect_exit 2 "$LONGMIX" compare-machines "$WORK/a" "$WORK/nope"
  expect_text err "cannot open folder $WORK/nope"
  mkdir "$WORK/empty"
  expect_exit 2 "$LONGMIX" compare-machines "$WORK/a" "$WORK/empty"
  expect_text err "$WORK/empty: no results rows"
  # two machines in one folder: compare them, do not mix them
  cp "$WORK/b/sweep.csv" "$WORK/a/other.csv"
  expect_exit 2 "$LONGMIX" compare-machines "$WORK/a" "$WORK/b"
  expect_text err "$WORK/a/roofline.csv: host 'alpha' (Alpha CPU) differs from 'beta' (Beta CPU) in other.csv"
  expect_exit 2 "$LONGMIX" compare-machines "$WORK/b" "$WORK/a" --frobnicate
  expect_text err "unknown option '--frobnicate'"
  expect_exit 0 "$LONGMIX" compare-machines --help
  expect_text out "usage: longmix compare-machines DIR DIR..."
}
