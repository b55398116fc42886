# scripts/targets.py: verdicts from hand-made sweep rows (the arithmetic of each target).
targets_rows() { # writes $WORK/t/rows.csv
  mkdir -p "$WORK/t"
  local h='cpu_model,cores,git_rev,kernel,dtype,n_ctx,chunk,heads,threads,d_inner,d_state,median_s,gflops,gbps,roofline_frac,err_max,bytes,status'
  {
    echo "$h"
    echo 'cpu,2,abc,attn_decode,f32,32768,0,32,2,0,0,0.010,0,40,0.80,0,0,ok'
    echo 'cpu,2,abc,attn_decode,f32,32768,0,32,1,0,0,0.018,0,22,0.70,0,0,ok'
    echo 'cpu,2,abc,attn_decode,f16,131072,0,32,2,0,0,0.020,0,30,0.50,0,0,ok'
    echo 'cpu,2,abc,attn_decode_q,int8,131072,0,32,2,0,0,0.0120,0,0,0,0.01,0,ok'
    echo 'cpu,2,abc,attn_decode_q,int4,131072,0,32,2,0,0,0.0100,0,0,0,0.1,0,ok'
    echo 'cpu,2,abc,delta_chunked,f32,4096,64,32,1,0,0,0.050,0,0,0,0,0,ok'
    echo 'cpu,2,abc,delta_recurrent,f32,4096,1,32,1,0,0,0.210,0,0,0.20,0,0,ok'
    echo 'cpu,2,abc,mamba1_scan,f32,4096,0,0,1,2048,16,0.1342,0,0,0,0,0,ok'
    echo 'cpu,2,abc,mamba1_scan,f32,4096,0,0,2,2048,16,0.0800,0,0,0,0,0,ok'
  } > "$WORK/t/rows.csv"
}
test_targets_verdicts_follow_the_rows() {
  targets_rows
  expect_exit 0 "$PYTHON" scripts/targets.py "$WORK/t"
  expect_text out "| decode f32, n = 32768, 2 threads: >= 75 % of triad | 10 ms, 40.0 GB/s = 80 % | met |"
  # the speed-up beside the same sweep's triad scaling (gbps / roofline_frac): 31.4 -> 50
  expect_text out "| decode f32, n = 32768: 1 -> 2 threads >= 1.7x | 1.80x (the sweep's triad: 31.4 -> 50.0 GB/s = 1.59x) | met |"
  expect_text out "| decode f16, n = 131072, 2 threads: >= 75 % of triad | 20 ms, 30.0 GB/s = 50 % | **missed** |"
  expect_text out "20 ms = 1.67x, error 0.01 | met |"   # int8: 20 / 12 >= 1.6
  expect_text out "20 ms = 2.00x, error 0.1 | **missed** |" # int4: 2.0 < 2.5
}
test_targets_decode_beside_the_read_only_stream() {
  targets_rows
  # gemv_rowdot rows of the decode sweep (n x 1024 floats): 30 -> 36 GB/s
  echo 'cpu,2,abc,gemv_rowdot,f32,32768,0,0,1,1024,0,0.0045,0,30,0.9,0,0,ok' >> "$WORK/t/rows.csv"
  echo 'cpu,2,abc,gemv_rowdot,f32,32768,0,0,2,1024,0,0.0037,0,36,1.0,0,0,ok' >> "$WORK/t/rows.csv"
  mv "$WORK/t/rows.csv" "$WORK/t/decode.csv"
  expect_exit 0 "$PYTHON" scripts/targets.py "$WORK/t"
  # 40 GB/s decode on 2 threads is 111 % of the stream's 36
  expect_text out "| 10 ms, 40.0 GB/s = 80 % (the read-only stream of the same minutes: 36.0 GB/s, 111 % of it) | met |"
  # the most 2 threads can give: the stream's 36 GB/s over the 1-thread decode's 22
  # 1.80x passes that bound: said, with the 2-thread decode's share of the stream (40 / 36)
  expect_text out "a read-only stream of the same minutes (gemv_rowdot, 30.0 -> 36.0 GB/s = 1.20x) bounds it at 36.0 / 22.0 GB/s = 1.64x; above that bound: the 2-thread decode read 40.0 GB/s, 111 % of the stream | met |"
}
test_targets_quantized_decode_against_the_int8_dot_roof() {
  targets_rows
  # 131072 tokens x 32 heads x 3 x 128 / 64 = 25.2 M VPDPBUSD; 1280 GOP/s / 128 = 10 G/s
  # -> 2.5 ms, 21 % of the int8 row's 12 ms
  echo 'cpu,2,abc,peak_dot_i8,int8,0,0,0,2,0,0,0.02,1280,0,1,-1,0,ok' >> "$WORK/t/rows.csv"
  sed -i '1s/$/,head_dim/; 2,$s/$/,128/' "$WORK/t/rows.csv"
  expect_exit 0 "$PYTHON" scripts/targets.py "$WORK/t"
  expect_text out "20 ms = 1.67x, error 0.01; VPDPBUSD floor 2.5 ms (25.2 M at the roofline's 10.0 G/s: the kernel runs at 21 % of it) | met |"
  # delta: 0.21 / 0.05; the recurrent row at 20 % of peak bounds the ratio at 1 / 0.20
  expect_text out "= 4.20x; the recurrent form runs at 20 % of peak FMA, so the same FMAs at peak would give at most 5.00x | met |"
  expect_text out "| Mamba-1 scan exact ZOH, 1 thread: <= 2.0 ns per element | 1.00 ns | met |"
  expect_text out "| Mamba-1 scan 1 -> 2 threads >= 1.8x | 1.68x | **missed** |"
  expect_text out "| SSD (32 x 64, N = 128, L = 4096) chunked >= 3x the recurrent scan | - | not measured |"
}
test_targets_fma_fraction_uses_the_higher_peak() {
  targets_rows
  # prefill 1 thread: 150 GFLOP/s at 0.75 of its sweep's peak (200); 2 threads: 300 at
  # 0.70 (428.6); the opening roofline read 250 and 400 GFLOP/s
  echo 'cpu,2,abc,attn_prefill,f32,4096,0,32,1,0,0,1.0,150,0,0.75,0,0,ok' >> "$WORK/t/rows.csv"
  echo 'cpu,2,abc,attn_prefill,f32,4096,0,32,2,0,0,0.5,300,0,0.70,0,0,ok' >> "$WORK/t/rows.csv"
  {
    echo 'cpu_model,cores,git_rev,kernel,dtype,n_ctx,chunk,threads,median_s,gflops,gbps,roofline_frac,status'
    echo 'cpu,2,abc,peak_fma,f32,0,0,1,0.02,250,0,1,ok'
    echo 'cpu,2,abc,peak_fma,f32,0,0,2,0.02,400,0,1,ok'
  } > "$WORK/t/roofline.csv"
  expect_exit 0 "$PYTHON" scripts/targets.py "$WORK/t"
  # 150 / 250: the sweep's own peak read low, so the opening one is used
  expect_text out "| 1 s, 150 GFLOP/s = 60 %; of the opening roofline's 250 GFLOP/s: this sweep's own peak read 200, which would make it 75 % | met |"
  # 300 / 428.6: the sweep's own peak is the higher one, no note
  expect_text out "| 0.5 s, 300 GFLOP/s = 70 % | met |"
}
test_targets_chunked_bf16_against_the_dot_peak() {
  targets_rows
  # linear_chunked at L = 8192: f32 150 GFLOP/s at chunk 64 (0.75 of its sweep's FMA peak,
  # 200); bf16 300 GFLOP/s at chunk 128 (0.75 of its sweep's bf16 dot peak, 400) and 250 at
  # chunk 64; the opening roofline's bf16 dot peak read 500
  echo 'cpu,2,abc,linear_chunked,f32,8192,64,32,1,0,0,0.2,150,0,0.75,0,0,ok' >> "$WORK/t/rows.csv"
  echo 'cpu,2,abc,linear_chunked,bf16,8192,64,32,1,0,0,0.12,250,0,0.625,0,0,ok' >> "$WORK/t/rows.csv"
  echo 'cpu,2,abc,linear_chunked,bf16,8192,128,32,1,0,0,0.1,300,0,0.75,0,0,ok' >> "$WORK/t/rows.csv"
  {
    echo 'cpu_model,cores,git_rev,kernel,dtype,n_ctx,chunk,threads,median_s,gflops,gbps,roofline_frac,status'
    echo 'cpu,2,abc,peak_fma,f32,0,0,1,0.02,200,0,1,ok'
    echo 'cpu,2,abc,peak_dot_bf16,bf16,0,0,1,0.02,500,0,1,ok'
  } > "$WORK/t/roofline.csv"
  expect_exit 0 "$PYTHON" scripts/targets.py "$WORK/t"
  # the best bf16 chunk, 300 of the higher peak (500) = 60 %: missed
  expect_text out "| chunked linear attention (32 x 128, L = 8192) bf16, 1 thread(s): >= 70 % of the bf16 dot peak (best chunk) | 300 GFLOP/s = 60 % at chunk 128; the f32 row of the same run takes 2.00x as long; of the opening roofline's 500 GFLOP/s: this sweep's own peak read 400, which would make it 75 % | **missed** |"
  # the f32 verdicts read only the f32 row
  expect_text out "| chunked linear attention (32 x 128, L = 8192) f32, 1 thread(s): >= 70 % of peak FMA (best chunk) | 150 GFLOP/s = 75 % at chunk 64 | met |"
  expect_text out "| linear attention chunked, 1 thread(s): >= 40 % of peak FMA (best chunk) | 150 GFLOP/s = 75 % at chunk 64 (GFLOP/s by chunk: 64: 150) | met |"
}
test_targets_lists_unsteady_rows() {
  mkdir -p "$WORK/u"
  {
    echo 'cpu_model,cores,git_rev,kernel,dtype,n_ctx,chunk,threads,median_s,min_s,p75_s,gflops,gbps,roofline_frac,status'
    echo 'cpu,2,abc,mamba1_scan,f32,4096,0,1,0.100,0.090,0.125,0,0,0,ok'   # (125 - 90) / 100 = 35 %
    echo 'cpu,2,abc,mamba1_scan,f32,4096,0,2,0.060,0.058,0.061,0,0,0,ok'   # 5 %: steady
    echo 'cpu,2,abc,stream_triad,f64,0,0,1,0.010,0.005,0.015,0,30,0,ok'   # the roofline: not listed
  } > "$WORK/u/rows.csv"
  expect_exit 0 "$PYTHON" scripts/targets.py "$WORK/u"
  expect_text out "1 rows had unsteady repetitions (listed at the end)."
  expect_text out "| rows | mamba1_scan (dtype f32, n_ctx 4096, threads 1) | 100 ms | min 90 ms, p75 125 ms = 35 % |"
  if grep -q "threads 2) | 60 ms" "$WORK/out"; then
    echo "a steady row was listed as unsteady" >&2
    return 1
  fi
}
test_targets_needs_rows() {
  mkdir -p "$WORK/empty"
  expect_exit 2 "$PYTHON" scripts/targets.py "$WORK/empty"
  expect_text err "no sweep rows"
  expect_exit 2 "$PYTHON" scripts/targets.py "$WORK/missing"
  expect_text err "usage: scripts/targets.py DIR"
}
test_targets_issue19_beside_the_same_minutes_limits() {
  mkdir -p "$WORK/t"
  local h='cpu_model,cores,git_rev,kernel,dtype,n_ctx,chunk,heads,threads,d_inner,d_state,median_s,gflops,gbps,roofline_frac,err_max,bytes,status,disc'
  {
    echo "$h"
    echo 'cpu,2,abc,attn_decode,f16,32768,0,32,1,0,0,0.006,0,27,0.8,0,0,ok,'
    echo 'cpu,2,abc,gemv_rowdot,f32,32768,0,0,1,1024,0,0.0045,0,30,0.9,0,0,ok,'
    echo 'cpu,2,abc,attn_decode,bf16,32768,0,32,1,0,0,0.006,0,26,0.8,0,0,ok,'
  } > "$WORK/t/decode.csv"
  {
    echo "$h"   # 2048 x 16 x 4096 = 134.2 M elements: 0.1074 s = 0.80 ns, 0.1476 s = 1.10 ns
    echo 'cpu,2,abc,mamba1_scan,f32,4096,0,0,1,2048,16,0.1074,20,0,0.10,0,0,ok,euler'
    echo 'cpu,2,abc,mamba1_scan,f32,4096,0,0,2,2048,16,0.0560,38,0,0.095,0,0,ok,euler'
    echo 'cpu,2,abc,mamba1_scan,f32,4096,0,0,1,2048,16,0.1476,20,0,0.10,0,0,ok,zoh'
  } > "$WORK/t/mamba1.csv"
  {
    echo "$h"   # the stream at 12 GB/s over the step's 1.5 MiB: 131 us
    echo 'cpu,2,abc,mamba1_step,f32,0,0,0,1,8192,16,0.000140,0,11.2,0.5,0,1572864,ok,zoh'
    echo 'cpu,2,abc,gemv_rowdot,f32,48,0,0,1,8192,16,0.00013,0,12,0.6,0,1572864,ok,'
  } > "$WORK/t/steps.csv"
  expect_exit 0 "$PYTHON" scripts/targets.py "$WORK/t"
  expect_text out "| decode f16, n = 32768, 1 thread(s): >= 90 % of the read-only stream | 6 ms, 27.0 GB/s = 90 % of 30.0 GB/s | met |"
  expect_text out "| decode bf16, n = 32768, 1 thread(s): >= 90 % of the read-only stream | 6 ms, 26.0 GB/s = 87 % of 30.0 GB/s | **missed** |"
  expect_text out "| Mamba-1 scan delta B (D 2048, N 16, L 4096), 1 thread: <= 0.8 ns per element | 0.80 ns"
  expect_text out "| Mamba-1 scan exact ZOH (D 2048, N 16, L 4096), 1 thread: <= 1.0 ns per element | 1.10 ns"
  # 2 threads: 0.1074 / 0.0560 = 1.92x; peaks 200 -> 400 GFLOP/s
  expect_text out "| Mamba-1 scan delta B: 2 threads >= 1.85x 1 thread | 1.92x (the same run's peak: 200 -> 400 GFLOP/s = 2.00x) | met |"
  expect_text out "| Mamba-1 decode step exact ZOH (D 8192, N 16), 1 thread: <= 100 us | 140.0 us, 11.2 GB/s; the read-only stream of the same minutes (12.0 GB/s, gemv_rowdot over 1.5 MiB) takes 131 us over the step's 1.5 MiB | **missed** |"
  expect_text out "| causal prefill n = 4096 bf16: >= 1.7x the f32 prefill of the same run | - (no bf16 prefill rows"
}
test_targets_sh_help_and_bad_option() {
  expect_exit 0 scripts/targets.sh --help
  expect_text out "--skip-long"
  expect_exit 2 scripts/targets.sh --bogus
  expect_text err "unknown option --bogus"
}
