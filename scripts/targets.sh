#!/bin/sh
# Measure every speed target of the attention-family and recurrent-family issues and of
# issue 19 (each beside a limit of the same minutes) on this machine, then write the
# verdict table. Each sweep measures its own same-run roofline (roofline_frac) and
# interleaves the repetitions of all its configurations; the ratio targets (quantized vs
# f16, decode vs the read-only stream, 1 vs 2 threads) are taken from rows of one sweep.
#   scripts/targets.sh [OUTDIR] [--skip-long]
# OUTDIR defaults to results/targets. --skip-long leaves out the n = 16,384 causal prefill
# (about 80 s per repetition on one thread) that the sliding-window target divides by.
# Progress goes to stderr; CSVs are written as rows finish (Ctrl-C keeps them) and a rerun
# resumes: configurations already in a CSV are skipped.
set -eu
out=results/targets
skip_long=0
for arg in "$@"; do
    case "$arg" in
    --skip-long) skip_long=1 ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "targets.sh: unknown option $arg" >&2; exit 2 ;;
    *) out=$arg ;;
    esac
done
LONGMIX=${LONGMIX:-build/longmix}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$LONGMIX" ] || { echo "targets.sh: $LONGMIX not built (run make)" >&2; exit 2; }
mkdir -p "$out"

sweep() { # name, then sweep arguments
    name=$1
    shift
    echo "targets: $name" >&2
    # every configuration of a sweep interleaved: the ratios between its rows (1 -> 2
    # threads, quantized vs f16, chunked vs recurrent) compare the same minutes of this
    # drifting VM
    "$LONGMIX" sweep --resume --interleave all --out "$out/$name.csv" "$@"
}
GQA="--heads 32 --kv-heads 8 --head-dim 128"

"$LONGMIX" roofline --threads 1,2 --isa active --out "$out/roofline.csv"
# issue 4: attention family
# with the decode, in the same minutes: a read-only stream of the f16 cache's bytes
# (gemv_rowdot over n x 1024 floats), the bandwidth a read-only kernel can reach
sweep decode --kernel attn_decode,gemv_rowdot --dtype f32,f16,bf16 --ctx 32768,131072 --d-inner 1024 \
    --threads 1,2 --reps 9 $GQA
sweep decode_q --kernel attn_decode,kvq_decode \
    --dtype f16,int8,int4,kivi4,kivi2,kivi4g64,kivi2g64 \
    --ctx 131072 --threads 2 --reps 9 $GQA
sweep prefill --kernel attn_prefill --dtype f32,bf16 --ctx 4096 --threads 1,2 --reps 3 $GQA
sweep window --kernel attn_prefill_window --ctx 16384 --chunk 1024 --threads 2 --reps 3 $GQA
[ "$skip_long" = 1 ] || sweep causal_16k --kernel attn_prefill --ctx 16384 --threads 2 --reps 3 $GQA
sweep rolling --kernel attn_decode,window_decode --dtype f32 --ctx 1024 --chunk 1024 --threads 2 \
    --reps 31 $GQA
sweep rolling --kernel window_decode --dtype f32 --ctx 1000000 --chunk 1024 --threads 2 --reps 31 $GQA
sweep mla --kernel latent_mla,latent_mla_cached,latent_mla_expanded --ctx 32768 --heads 128 \
    --threads 2 --reps 3
# issue 5: recurrent family
sweep mamba1 --kernel mamba1_scan --ctx 4096 --d-inner 2048 --d-state 16 --disc zoh,euler \
    --threads 1,2 --reps 9
sweep ssd --kernel ssd_chunked,ssd_recurrent --dtype f32,bf16 --ctx 4096 --d-inner 2048 --d-state 128 \
    --chunk 32,64 --threads 1,2 --reps 5
sweep linear --kernel linear_chunked --dtype f32,bf16 --ctx 8192 --heads 32 --head-dim 128 \
    --chunk 32,64,128,256 --threads 1,2 --reps 3
sweep delta --kernel delta_chunked,delta_recurrent --dtype f32,bf16 --ctx 4096 --heads 32 \
    --head-dim 128 --chunk 16,32,64 --threads 1,2 --reps 3
sweep affine --kernel scan_affine --ctx 4194304 --d-inner 16 --chunk 4096,16384,65536 \
    --threads 1,2 --reps 9
# with the Mamba-1 step, in the same minutes: a read-only stream of its bytes (gemv_rowdot
# over 48 x 8192 floats = 1.5 MiB: the state read and written and A)
sweep steps --kernel mamba1_step,gemv_rowdot --ctx 48 --d-inner 8192 --d-state 16 \
    --disc zoh,euler --threads 1,2 --reps 51
sweep steps --kernel ssd_step --d-inner 2048 --d-state 128 --threads 1,2 --reps 9
"$PYTHON" scripts/targets.py "$out" >"$out/targets.md"
echo "targets: verdicts in $out/targets.md" >&2
