# scripts/report.py and scripts/tables.py: the report's top, its tables as Markdown, LaTeX
# and CSV, the figures in three formats.

report_rows() { # a results folder $WORK/r: two hand-made rows, a crossover summary, a targets run
  mkdir -p "$WORK/r/targets"
  local h="run_id,timestamp,git_rev,host,cpu_model,isa,threads,kernel,dtype,bits,n_ctx,chunk,heads,kv_heads,head_dim,d_inner,d_state,batch,reps,median_s,min_s,p25_s,p75_s,gflops,gbps,roofline_frac,checksum,status,flops,bytes,err_max,note,compiler,cores,llc_bytes"
  {
    echo "$h"
    echo "r1,2026-12-02T10:00:00Z,abc1234,alpha,Alpha_CPU & Co,avx512,1,peak_fma,f32,32,0,0,0,0,0,0,0,1,5,1,1,1,1,200,0,1,0,ok,0,0,-1,,gcc,2,1"
    echo "r1,2026-12-02T10:00:01Z,abc1234,alpha,Alpha_CPU & Co,avx512,1,stream_triad,f64,64,0,0,0,0,0,0,0,1,5,1,1,1,1,0,25,1,0,ok,0,0,-1,,gcc,2,1"
  } > "$WORK/r/roofline.csv"
  {
    echo "$h"
    echo "r2,2026-12-02T10:05:00Z,abc1234,alpha,Alpha_CPU & Co,avx512,1,attn_decode,f16,16,4096,0,32,8,128,0,0,1,5,0.0015,0.0014,0.00145,0.0016,11,22,0.8,1.5,ok,1.6e7,3.3e7,0.001,,gcc,2,1"
    echo "r2,2026-12-02T10:06:00Z,abc1234,alpha,Alpha_CPU & Co,avx512,1,attn_decode,f16,16,8192,0,32,8,128,0,0,1,5,0.003,0.0029,0.00295,0.0031,11,22,0.8,1.5,ok,3.2e7,6.6e7,0.001,,gcc,2,1"
  } > "$WORK/r/sweep.csv"
  {
    echo "phase,method_a,method_b,dtype,isa,threads,found,n_star,lo_n,lo_a_s,lo_b_s,hi_n,memory_n,flop_n"
    echo "decode,attention,Mamba-1 step,f16,avx512,1,found,1116.4,1024,0.000311468,0.000469225,2048,80,40"
    echo "prefill,causal attention,mamba1_scan,f32,avx512,1,above_grid,4096,4096,6.81,7.83,0,0,79"
  } > "$WORK/r/crossover_summary.csv"
  printf '%s\n' 'cpu_model,cores,git_rev,kernel,dtype,n_ctx,chunk,heads,threads,d_inner,d_state,median_s,gflops,gbps,roofline_frac,err_max,bytes,status' \
    'cpu,2,abc,mamba1_scan,f32,4096,0,0,1,2048,16,0.1342,0,0,0,0,0,ok' > "$WORK/r/targets/mamba1.csv"
}

test_report_top_tables_and_figure_formats() {
  report_rows
  expect_exit 0 "$PYTHON" scripts/report.py "$WORK/r"
  # the top of report.md (and of make report's output): machine, dates, revisions, files
  expect_text out "- Machine: Alpha_CPU & Co, host alpha, 2 cores; ISA path avx512"
  expect_text out "- Measured: 2026-12-02T10:00:00Z to 2026-12-02T10:06:00Z"
  expect_text out "- Git revision of the measurements: abc1234; report drawn at "
  expect_text out "- Results files read from $WORK/r: roofline.csv (2 rows); sweep.csv (2 rows); crossover_summary.csv (2 rows); targets/ (1 files: mamba1.csv)"
  sed -n 3p "$WORK/r/report.md" | grep -qF -- "- Machine: Alpha_CPU & Co"
  grep -qF "| decode | Mamba-1 step | f16 | 1 | 1116 | 1024–2048 | 311.5 µs | 469.2 µs | 80.0 | 40 |" "$WORK/r/report.md"
  grep -qF -- "- prefill causal attention vs mamba1_scan (f32, 1 thread(s)): > 4096, not crossed within the grid: extend it up" "$WORK/r/report.md"
  grep -qF "| recurrent | Mamba-1 scan exact ZOH, 1 thread: <= 2.0 ns per element | 1.00 ns | met |" "$WORK/r/report.md"
  for t in roofline crossover targets measurements; do
    for ext in md tex csv; do [ -s "$WORK/r/tables/$t.$ext" ] || { echo "    no tables/$t.$ext" >&2; return 1; }; done
  done
  for f in roofline time_vs_context; do
    for ext in png pdf svg; do [ -s "$WORK/r/fig_$f.$ext" ] || { echo "    no fig_$f.$ext" >&2; return 1; }; done
  done
  head -c 4 "$WORK/r/fig_roofline.pdf" | grep -q '%PDF'
  grep -q '<svg' "$WORK/r/fig_roofline.svg"
}
test_report_latex_and_csv_tables() {
  report_rows
  expect_exit 0 "$PYTHON" scripts/report.py "$WORK/r" --format latex --table crossover
  # booktabs, plain numbers (one unit per time column: ms here), escapes, machine and revision
  expect_text out '\begin{table*}[t]'
  expect_text out '\caption{Measured SSM-vs-attention crossover per layer (avx512). Alpha\_CPU \& Co (host alpha), longmix git abc1234, measured 2026-12-02}'
  expect_text out 'phase & attention vs & KV & threads & measured n* & between n & attention (ms) & other (ms) & memory n* & FLOP n* \\'
  expect_text out 'decode & Mamba-1 step & f16 & 1 & 1116 & 1024--2048 & 0.311 & 0.469 & 80.0 & 40 \\'
  expect_text out 'prefill & mamba1\_scan & f32 & 1 & $>$ 4096 & 4096 & 6810 & 7830 & -- & 79 \\'
  expect_text out '\bottomrule'
  [ ! -e "$WORK/r/report.md" ]   # --format prints tables and draws nothing
  expect_exit 0 "$PYTHON" scripts/report.py "$WORK/r" --format csv --table roofline
  expect_text out "threads,ISA,peak GFLOP/s,triad GB/s,ridge"
  expect_text out "1,avx512,200.0,25.00,8.0"
  expect_exit 0 "$PYTHON" scripts/report.py "$WORK/r" --format csv --table crossover
  expect_text out "decode,Mamba-1 step,f16,1,1116,1024–2048,0.000311468,0.000469225,80.0,40"
  expect_exit 2 "$PYTHON" scripts/report.py "$WORK/r" --format latex --table nope
  expect_text err "no table 'nope' in this report (tables: roofline, crossover, targets, measurements)"
  expect_exit 2 "$PYTHON" scripts/report.py "$WORK/r" --format html
  expect_exit 2 "$PYTHON" scripts/report.py "$WORK/nowhere"
  expect_text err "is not a folder"
}
test_tables_escapes_and_units() {
  "$PYTHON" - <<'PY'
import sys
sys.path.insert(0, "scripts")
import tables
assert tables.tex_escape("a_b 5 % <= 64 -> 10^6 & #") == r"a\_b 5 \% $\le$ 64 $\to$ $10^{6}$ \& \#", tables.tex_escape("a_b 5 % <= 64 -> 10^6 & #")
assert tables._time_unit([20e-6, 30e-6, 40e-6]) == (1e-6, r"$\mu$s")
assert tables._time_unit([0.0003, 6.8, 0.0005]) == (1e-3, "ms")
assert tables._time_unit([2.0, 7.0]) == (1.0, "s")
assert tables.fmt_time(0.0002395) == "239.5 µs" and tables.fmt_time(1.5) == "1.50 s" and tables.fmt_time(None) == "-"
t = tables.Table("x", "T", [tables.Col("a"), tables.Col("t", "time"), tables.Col("n", "int")],
                 [["p", 0.5, 3], ["q", None, None]])
assert tables.csv_text(t) == "a,t (s),n\np,0.5,3\nq,,\n", tables.csv_text(t)
assert "| q | - | - |" in tables.markdown(t)
assert "q & -- & -- \\\\" in tables.latex(t, "M"), tables.latex(t, "M")
PY
}
test_report_flags_model_rows_and_crossovers_not_findings() {
  # the example model run with its 2-thread mistral rows marked disturbed: those rows say busy,
  # the 2-thread mistral crossovers say they are not findings, the 1-thread ones stay ok
  # (counts from the example's own rows)
  mkdir -p "$WORK/m"
  cp results/examples/model/model_crossover.csv "$WORK/m/"
  "$PYTHON" - results/examples/model/models.csv "$WORK/m/models.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    r["disturbed"] = "1" if r["model"] == "mistral-7b" and r["threads"] == "2" else "0"
    r["busy_cores"] = "1.5" if r["disturbed"] == "1" else "0"
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
PY
  # the decode rows of the example, all of them and mistral's 2-thread ones, and the rows
  # behind one (threads, batch) crossover of mistral (its contexts and llama's)
  read -r total busy <<<"$("$PYTHON" - "$WORK/m/models.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["phase"] == "decode"]
print(len(rows), sum(r["disturbed"] == "1" for r in rows))
PY
)"
  expect_exit 0 "$PYTHON" scripts/report.py "$WORK/m" --format csv --table models
  grep '^mistral-7b,bf16,bf16,2,1,1024,' "$WORK/out" | grep -q ',busy$'
  grep '^mistral-7b,bf16,bf16,1,1,1024,' "$WORK/out" | grep -q ',ok$'
  [ "$(grep -c ',busy$' "$WORK/out")" = "$busy" ] || { echo "    want $busy busy model rows" >&2; return 1; }
  [ "$(grep -c ',ok$' "$WORK/out")" = "$((total - busy))" ] ||
    { echo "    want $((total - busy)) ok model rows" >&2; return 1; }
  expect_exit 0 "$PYTHON" scripts/report.py "$WORK/m" --format csv --table model_crossover
  expect_text out "mistral-7b,llama3-8b,2,1,"
  half=$((busy / 2)) # one batch's mistral rows, of twice as many with llama's
  grep '^mistral-7b,llama3-8b,2,1,' "$WORK/out" | grep -q ",not a finding: $half of $((2 * half)) rows$"
  grep '^mistral-7b,llama3-8b,1,' "$WORK/out" | grep -q ',ok$'
  grep '^mamba2-2.7b,llama3-8b,2,' "$WORK/out" | grep -q ',ok$'
  expect_exit 0 "$PYTHON" scripts/report.py "$WORK/m"
  grep -qF -- "- **Not all rows are findings**: $busy of $total model rows" "$WORK/m/report.md"
  # the stacked component bars, drawn in three formats
  [ -s "$WORK/m/fig_model_components.png" ] && [ -s "$WORK/m/fig_model_components.pdf" ] &&
    [ -s "$WORK/m/fig_model_components.svg" ]
  grep -qF "![whole-model decode time by component](fig_model_components.png)" "$WORK/m/report.md"
}

test_report_puts_the_kernel_nstar_beside_the_model_nstar() {
  # with crossover_summary.csv beside the model files, each Mamba-2 crossover gets the kernel
  # n* of attention vs the SSD step at its cache dtype (bf16) and threads; mistral (window
  # attention, no recurrent mixer) gets none
  mkdir -p "$WORK/m"
  cp results/examples/model/models.csv results/examples/model/model_crossover.csv "$WORK/m/"
  "$PYTHON" - "$WORK/m/crossover_summary.csv" <<'PY'
import sys
open(sys.argv[1], "w").write(
    "phase,method_a,method_b,dtype,isa,threads,found,n_star,lo_n,lo_a_s,lo_b_s,hi_n,memory_n,flop_n\n"
    "decode,attention,Mamba-2 SSD step,bf16,avx512,1,found,2867.62,2048,1,1,4096,528,40\n"
    "decode,attention,Mamba-2 SSD step,f16,avx512,1,found,3030.25,2048,1,1,4096,528,40\n"
    "decode,attention,Mamba-2 SSD step,bf16,avx512,2,above_grid,16384,16384,1,1,0,528,40\n")
PY
  expect_exit 0 "$PYTHON" scripts/report.py "$WORK/m" --format csv --table model_crossover
  grep '^mamba2-2.7b,llama3-8b,1,1,' "$WORK/out" | grep -q ',2868,ok$'
  grep '^mamba2-2.7b,llama3-8b,2,1,' "$WORK/out" | grep -q ',> 16384,ok$'
  grep '^mistral-7b,llama3-8b,1,1,' "$WORK/out" | grep -q ',,ok$'
  head -1 "$WORK/out" | grep -q ',kernel n\*,trust$'
}

test_report_shows_prefill_rows_their_crossover_and_figure() {
  # a tiny prefill run (two fixtures, two prompts): the prefill table, its crossover, the
  # TTFT figure; the decode section stays away (no decode rows)
  mkdir -p "$WORK/p"
  expect_exit 0 "$LONGMIX" model --model tests/fixtures/models/tiny-attn.json \
    --model tests/fixtures/models/tiny-hybrid.json --baseline tiny-attn --prompt 64,200 \
    --threads 1 --reps 1 --out "$WORK/p/models.csv" --crossover-out "$WORK/p/model_crossover.csv"
  expect_exit 0 "$PYTHON" scripts/report.py "$WORK/p"
  grep -qF "## Whole models: prefill (time to the first token)" "$WORK/p/report.md"
  grep -qF "| tiny-hybrid | bf16 | 1 | 1 | 200 |" "$WORK/p/report.md"
  grep -qF "| tiny-hybrid | tiny-attn | 1 | 1 |" "$WORK/p/report.md"
  ! grep -qF "## Whole models: decode per token" "$WORK/p/report.md"
  [ -s "$WORK/p/fig_model_prefill_vs_prompt.pdf" ] && [ -s "$WORK/p/fig_model_prefill_vs_prompt.svg" ]
  expect_exit 0 "$PYTHON" scripts/report.py "$WORK/p" --format csv --table prefill
  head -1 "$WORK/out" | grep -q '^model,weights,threads,batch,prompt,TTFT ms,'
  [ "$(grep -c '^tiny-' "$WORK/out")" = 4 ]
}
