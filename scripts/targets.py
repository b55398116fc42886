#!/usr/bin/python3
"""Verdict table of the speed targets of the attention-family and recurrent-family issues,
and of issue 19 (each beside the limit measured in the same minutes), from the CSVs scripts/targets.sh writes into DIR (longmix sweep rows: medians of timed
repetitions, roofline_frac against the same run's limits).

    scripts/targets.py DIR > DIR/targets.md

A target whose rows are missing is reported as "not measured", never as met."""
import csv
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_names import canonical  # noqa: E402


def load(directory):
    rows = []
    for path in sorted(glob.glob(os.path.join(directory, "*.csv"))):
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r.get("status", "ok") == "ok" and "median_s" in r:
                    r["_file"] = os.path.splitext(os.path.basename(path))[0]
                    canonical(r)
                    rows.append(r)
    return rows


def pick(rows, **want):
    """The rows whose columns equal the given values (compared as text or numbers)."""
    out = []
    for r in rows:
        ok = True
        for k, v in want.items():
            got = r.get(k)
            if got is None:
                ok = False
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                ok = abs(float(got) - v) <= 1e-9 * max(1.0, abs(v))
            else:
                ok = got == v
            if not ok:
                break
        if ok:
            out.append(r)
    return out


def one(rows, prefer=None, **want):
    """The last row matching `want`; from the sweep file `prefer` (targets.sh's name, e.g.
    "decode") when that file has one, so that a ratio compares rows of one invocation."""
    found = pick(rows, **want)
    if prefer is not None and any(r["_file"] == prefer for r in found):
        found = [r for r in found if r["_file"] == prefer]
    return found[-1] if found else None


def f(r, key):
    return float(r[key])


# The roofline row that is a dtype's compute peak (f32 FMA, or bf16 dot products).
PEAK_KERNEL = {"bf16": "peak_dot_bf16"}


def fma_frac(rows, r):
    """r's fraction of the peak of its dtype (f32: FMA; bf16: VDPBF16PS dot products) and
    a note. A peak measurement can only read low (a disturbed minute, a shared core), never
    high, so the peak is the larger of the row's own sweep roofline (gflops /
    roofline_frac) and the opening roofline of the run (roofline.csv, same thread count);
    the note says when the sweep's own read low."""
    frac = f(r, "roofline_frac")
    if frac <= 0 or f(r, "gflops") <= 0:
        return frac, ""
    own = f(r, "gflops") / frac
    opening = one(rows, "roofline", kernel=PEAK_KERNEL.get(r.get("dtype"), "peak_fma"),
                  threads=int(r["threads"]))
    peak = max(own, f(opening, "gflops") if opening is not None else 0.0)
    note = ""
    if peak > 1.1 * own:
        note = (f"; of the opening roofline's {peak:.0f} GFLOP/s: this sweep's own peak read "
                f"{own:.0f}, which would make it {100 * frac:.0f} %")
    return f(r, "gflops") / peak, note


class Table:
    """The verdicts as Markdown lines (targets.md) and as rows (family, target, measured,
    verdict) for the report's LaTeX and CSV tables."""

    def __init__(self):
        self.lines = []
        self.rows = []
        self.family = ""
        self.met = self.missed = self.unmeasured = 0

    def add(self, target, measured, ok):
        verdict = "not measured" if ok is None else ("met" if ok else "missed")
        if ok is None:
            self.unmeasured += 1
        elif ok:
            self.met += 1
        else:
            self.missed += 1
        self.lines.append(f"| {target} | {measured} | {'**missed**' if ok is False else verdict} |")
        self.rows.append((self.family, target, measured, verdict))

    def info(self, target, measured):
        self.lines.append(f"| {target} | {measured} | reported |")
        self.rows.append((self.family, target, measured, "reported"))


def ms(r):
    return f"{f(r, 'median_s') * 1e3:.3g} ms"


def triad(r):
    """The STREAM triad (GB/s) of the sweep that measured memory-bound row r: its
    roofline_frac is gbps over that triad."""
    frac = f(r, "roofline_frac")
    return f(r, "gbps") / frac if frac > 0 else None


def scaling_text(r1, r2, read1=None, read2=None):
    """1 -> 2 thread speed-up of two memory-bound rows, beside the machine's own: the
    triad scaling of the same sweep, and (given) a read-only stream measured in the same
    minutes (read1, read2: gemv_rowdot rows on 1 and 2 threads). Reading faster than that
    stream is out of reach, so read2's rate over r1's is the most 2 threads can give."""
    s = f(r1, "median_s") / f(r2, "median_s")
    t1, t2 = triad(r1), triad(r2)
    text = f"{s:.2f}x"
    if t1 is not None and t2 is not None:
        text += f" (the sweep's triad: {t1:.1f} -> {t2:.1f} GB/s = {t2 / t1:.2f}x)"
    if read1 is not None and read2 is not None and f(r1, "gbps") > 0:
        g1, g2 = f(read1, "gbps"), f(read2, "gbps")
        bound = g2 / f(r1, "gbps")
        text += (f"; a read-only stream of the same minutes (gemv_rowdot, {g1:.1f} -> "
                 f"{g2:.1f} GB/s = {g2 / g1:.2f}x) bounds it at {g2:.1f} / "
                 f"{f(r1, 'gbps'):.1f} GB/s = {bound:.2f}x")
        if s > bound:  # the 2-thread decode out-read the stream, or the 1-thread one lagged
            text += (f"; above that bound: the 2-thread decode read {f(r2, 'gbps'):.1f} GB/s, "
                     f"{100 * f(r2, 'gbps') / g2:.0f} % of the stream"
                     + (f", and the 1-thread median is {f(r1, 'median_s') / f(r1, 'min_s'):.2f}x"
                        f" its minimum" if "min_s" in r1 and f(r1, "min_s") > 0 else ""))
    return s, text


def vnni_floor_text(rows, r):
    """The quantized decode's VPDPBUSD count against the roofline's int8 dot rate at the row's
    thread count: d / 64 instructions per token and query head for the scores, 2 d / 64 for
    the values (16-bit weights as two bytes); '' without a peak_dot_i8 row."""
    peak = one(rows, kernel="peak_dot_i8", threads=int(r["threads"]))
    if peak is None or "head_dim" not in r or f(peak, "gflops") <= 0:
        return ""
    instr = f(r, "n_ctx") * f(r, "heads") * 3 * f(r, "head_dim") / 64
    rate = f(peak, "gflops") / 128  # G instructions/s: 64 byte products of 2 operations
    floor = instr / (rate * 1e9)
    return (f"; VPDPBUSD floor {floor * 1e3:.2g} ms ({instr / 1e6:.1f} M at the roofline's "
            f"{rate:.1f} G/s: the kernel runs at {100 * floor / f(r, 'median_s'):.0f} % of it)")


def attention(rows, t):
    t.family = "attention"
    t.lines += ["", "## Attention family (GQA 32/8, head_dim 128)", "",
                "| target | measured (median) | verdict |", "|---|---|---|"]
    for dtype in ("f32", "f16"):
        for n in (32768, 131072):
            r = one(rows, "decode", kernel="attn_decode", dtype=dtype, n_ctx=n, threads=2)
            name = f"decode {dtype}, n = {n}, 2 threads: >= 75 % of triad"
            # the read-only stream: gemv_rowdot over n x 1024 floats, the f16 cache's bytes
            g1, g2 = (one(rows, "decode", kernel="gemv_rowdot", n_ctx=n, d_inner=1024, threads=k)
                      for k in (1, 2))
            if r is None:
                t.add(name, "-", None)
            else:
                read = ""
                if g2 is not None and f(g2, "gbps") > 0:
                    read = (f" (the read-only stream of the same minutes: {f(g2, 'gbps'):.1f} GB/s,"
                            f" {100 * f(r, 'gbps') / f(g2, 'gbps'):.0f} % of it)")
                t.add(name, f"{ms(r)}, {f(r, 'gbps'):.1f} GB/s = "
                      f"{100 * f(r, 'roofline_frac'):.0f} %{read}", f(r, "roofline_frac") >= 0.75)
            r1 = one(rows, "decode", kernel="attn_decode", dtype=dtype, n_ctx=n, threads=1)
            if r is not None and r1 is not None:
                s, text = scaling_text(r1, r, g1, g2)
                t.add(f"decode {dtype}, n = {n}: 1 -> 2 threads >= 1.7x", text, s >= 1.7)
    f16 = one(rows, "decode_q", kernel="attn_decode", dtype="f16", n_ctx=131072, threads=2,
              heads=32)
    # KIVI 2-bit: the target is read on key groups of 64 tokens (kivi2g64); KIVI's own
    # groups of 32 (kivi2) are reported beside it, each with its error
    for dtype, want, what in (("int8", 1.6, ""), ("int4", 2.5, ""),
                              ("kivi4", None, " (key groups of 32 tokens)"),
                              ("kivi4g64", None, " (key groups of 64 tokens)"),
                              ("kivi2", None, " (key groups of 32 tokens, KIVI's setting)"),
                              ("kivi2g64", 4.0, " (key groups of 64 tokens)")):
        r = one(rows, kernel="kvq_decode", dtype=dtype, n_ctx=131072, threads=2)
        name = f"{dtype} decode at n = 131072, 2 threads{what}" + (
            f": >= {want}x faster than f16" if want else "")
        if r is None or f16 is None:
            t.add(name, "-", None)
            continue
        s = f(f16, "median_s") / f(r, "median_s")
        text = (f"{ms(r)} vs f16 {ms(f16)} = {s:.2f}x, error {float(r['err_max']):.3g}"
                + vnni_floor_text(rows, r))
        if want is None:
            t.info(name, text)
        else:
            t.add(name, text, s >= want)
    p1 = one(rows, kernel="attn_prefill", dtype="f32", n_ctx=4096, threads=1)
    p2 = one(rows, kernel="attn_prefill", dtype="f32", n_ctx=4096, threads=2)
    for r, th in ((p1, 1), (p2, 2)):
        name = f"causal prefill n = 4096 f32, {th} thread(s): >= 50 % of peak FMA"
        if r is None:
            t.add(name, "-", None)
        else:
            frac, note = fma_frac(rows, r)
            t.add(name, f"{f(r, 'median_s'):.3g} s, {f(r, 'gflops'):.0f} GFLOP/s = "
                        f"{100 * frac:.0f} %{note}", frac >= 0.5)
    if p1 is not None and p2 is not None:
        s = f(p1, "median_s") / f(p2, "median_s")
        t.add("prefill 1 -> 2 threads >= 1.8x", f"{s:.2f}x", s >= 1.8)
    else:
        t.add("prefill 1 -> 2 threads >= 1.8x", "-", None)
    causal = one(rows, kernel="attn_prefill", dtype="f32", n_ctx=16384, threads=2)
    window = one(rows, kernel="attn_prefill_window", n_ctx=16384, chunk=1024, threads=2)
    n, w = 16384, 1024
    pair_ratio = (n * (n + 1) / 2) / (w * (w + 1) / 2 + (n - w) * w)
    name = "window w = 1024 at n = 16384: speed-up within 30 % of the pair-count ratio"
    if causal is None or window is None:
        t.add(name, "-", None)
    else:
        s = f(causal, "median_s") / f(window, "median_s")
        t.add(name, f"{s:.2f}x vs pair ratio {pair_ratio:.2f}x ({100 * (s / pair_ratio - 1):+.0f} %)",
              abs(s / pair_ratio - 1) <= 0.30)
    plain = one(rows, "rolling", kernel="attn_decode", dtype="f32", n_ctx=1024, threads=2)
    ring = one(rows, kernel="window_decode", dtype="f32", n_ctx=1000000, chunk=1024, threads=2)
    name = "rolling decode at position 10^6 (w = 1024) vs decode at n = 1024: within 20 %"
    if plain is None or ring is None:
        t.add(name, "-", None)
    else:
        d = f(ring, "median_s") / f(plain, "median_s") - 1
        t.add(name, f"{f(ring, 'median_s') * 1e6:.0f} us vs {f(plain, 'median_s') * 1e6:.0f} us "
                    f"({100 * d:+.1f} %)", abs(d) <= 0.20)
    near = one(rows, "rolling", kernel="window_decode", dtype="f32", n_ctx=1024, chunk=1024,
               threads=2)
    if ring is not None and near is not None:
        d = f(ring, "median_s") / f(near, "median_s") - 1
        t.info("rolling decode at position 10^6 vs the same ring at position 1024",
               f"{f(ring, 'median_s') * 1e6:.0f} us vs {f(near, 'median_s') * 1e6:.0f} us "
               f"({100 * d:+.1f} %)")
    labels = {"absorbed": "absorbed (latent cache)", "cached": "expanded cache (MHA-sized)",
              "expanded": "expanded, K/V rebuilt every step"}
    for form, kernel, old in (("absorbed", "latent_mla", "mla_decode_absorbed"),
                              ("cached", "latent_mla_cached", "mla_decode_cached"),
                              ("expanded", "latent_mla_expanded", "mla_decode_expanded")):
        r = one(rows, kernel=kernel, n_ctx=32768, threads=2) or one(rows, kernel=old, n_ctx=32768,
                                                                    threads=2)
        name = f"MLA decode at n = 32768, {labels[form]}"
        if r is None:
            t.add(name, "-", None)
        else:
            h, lat, rope, d = (float(r[k]) for k in ("heads", "d_inner", "d_state", "head_dim"))
            cache = 4 * (lat + rope) if form != "cached" else 4 * h * (2 * d + rope)
            t.info(f"{name}, heads {r['heads']}",
                   f"{ms(r)}; cache {cache:.0f} bytes per token; {f(r, 'bytes') / 1e6:.0f} MB "
                   f"per step by the bench's cost model; {f(r, 'gflops'):.0f} GFLOP/s, "
                   f"{f(r, 'gbps'):.1f} GB/s")


def ratio_target(rows, t, name, fast, slow, want, **where):
    best = None
    for r in pick(rows, kernel=fast, **where):
        base = one(rows, kernel=slow, threads=int(r["threads"]), n_ctx=int(r["n_ctx"]))
        if base is None:
            continue
        s = f(base, "median_s") / f(r, "median_s")
        if best is None or s > best[0]:
            best = (s, r, base)
    if best is None:
        t.add(name, "-", None)
        return
    s, r, base = best
    # Both forms of each pair do the same multiply-adds (the benches count the same flops),
    # so the chunked form's gain is an efficiency ratio: 1 / (the baseline's fraction of
    # peak FMA) is what it could reach at 100 % of peak with zero overhead.
    frac = fma_frac(rows, base)[0]
    bound = (f"; the recurrent form runs at {100 * frac:.0f} % of peak FMA, so the same FMAs "
             f"at peak would give at most {1 / frac:.2f}x") if frac > 0 else ""
    t.add(name, f"{ms(r)} (chunk {r['chunk']}, {r['threads']} thread(s)) vs {ms(base)} = "
                f"{s:.2f}x{bound}", s >= want)


def recurrent(rows, t):
    t.family = "recurrent"
    t.lines += ["", "## Recurrent family", "", "| target | measured (median) | verdict |",
                "|---|---|---|"]
    m1 = one(rows, kernel="mamba1_scan", n_ctx=4096, d_inner=2048, d_state=16, threads=1,
             disc="zoh")
    m2 = one(rows, kernel="mamba1_scan", n_ctx=4096, d_inner=2048, d_state=16, threads=2,
             disc="zoh")
    if m1 is None:
        t.add("Mamba-1 scan exact ZOH, 1 thread: <= 2.0 ns per element", "-", None)
    else:
        ns = f(m1, "median_s") / (4096 * 2048 * 16) * 1e9
        t.add("Mamba-1 scan exact ZOH, 1 thread: <= 2.0 ns per element", f"{ns:.2f} ns", ns <= 2.0)
    if m1 is not None and m2 is not None:
        s = f(m1, "median_s") / f(m2, "median_s")
        t.add("Mamba-1 scan 1 -> 2 threads >= 1.8x", f"{s:.2f}x", s >= 1.8)
    ratio_target(rows, t, "SSD (32 x 64, N = 128, L = 4096) chunked >= 3x the recurrent scan",
                 "ssd_chunked", "ssd_recurrent", 3.0, dtype="f32")
    best = max(pick(rows, kernel="ssd_chunked", threads=1, dtype="f32"),
               key=lambda r: f(r, "gflops"), default=None)
    name = "SSD chunked: >= 40 % of peak FMA (whole kernel, 1 thread)"
    if best is None:
        t.add(name, "-", None)
    else:
        frac, note = fma_frac(rows, best)
        t.add(name, f"{100 * frac:.0f} % (chunk {best['chunk']}){note}", frac >= 0.4)
    for th in (1, 2):
        lin = pick(rows, kernel="linear_chunked", dtype="f32", n_ctx=8192,
                   threads=th)
        best = max(lin, key=lambda r: f(r, "gflops"), default=None)
        name = f"linear attention chunked, {th} thread(s): >= 40 % of peak FMA (best chunk)"
        if best is None:
            t.add(name, "-", None)
        else:
            sweep = ", ".join(f"{r['chunk']}: {f(r, 'gflops'):.0f}" for r in lin)
            frac, note = fma_frac(rows, best)
            t.add(name, f"{f(best, 'gflops'):.0f} GFLOP/s = {100 * frac:.0f} % "
                        f"at chunk {best['chunk']} (GFLOP/s by chunk: {sweep}){note}",
                  frac >= 0.4)
    ratio_target(rows, t, "gated delta rule chunked >= 4x the recurrent form", "delta_chunked",
                 "delta_recurrent", 4.0, dtype="f32")
    aff = pick(rows, kernel="scan_affine", n_ctx=4194304, threads=2)
    best = max(aff, key=lambda r: f(r, "roofline_frac"), default=None)
    t.add("affine scan T = 2^22, width 16, 2 threads: >= 70 % of triad",
          "-" if best is None else f"{f(best, 'gbps'):.1f} GB/s = {100 * f(best, 'roofline_frac'):.0f} % "
                                   f"(chunk {best['chunk']})",
          None if best is None else f(best, "roofline_frac") >= 0.7)
    for kernel, label in (("mamba1_step", "Mamba-1 decode step (D = 8192, N = 16)"),
                          ("ssd_step", "SSD decode step (32 x 64, N = 128)")):
        for r in pick(rows, kernel=kernel, **({"disc": "zoh"} if kernel == "mamba1_step" else {})):
            cached = ("; above the DRAM triad: the state stays in the caches between steps"
                      if f(r, "roofline_frac") > 1 else "")
            t.info(f"{label}, {r['threads']} thread(s)",
                   f"{f(r, 'median_s') * 1e6:.1f} us per token, {f(r, 'gbps'):.1f} GB/s = "
                   f"{100 * f(r, 'roofline_frac'):.0f} % of triad{cached}")


def peak_of(r):
    """The peak (GFLOP/s) of the sweep that measured compute-bound row r: gflops over its
    roofline_frac (the same run's peak for the row's dtype and thread count)."""
    frac = f(r, "roofline_frac")
    return f(r, "gflops") / frac if frac > 0 and f(r, "gflops") > 0 else None


def scaling_target(t, name, r1, r2, want=1.85):
    """2 threads >= want x 1 thread for a compute-bound row pair, beside the bound the same
    run's roofline sets: its 2-thread peak over its 1-thread peak."""
    if r1 is None or r2 is None:
        t.add(f"{name}: 2 threads >= {want}x 1 thread", "-", None)
        return
    s = f(r1, "median_s") / f(r2, "median_s")
    p1, p2 = peak_of(r1), peak_of(r2)
    bound = (f" (the same run's peak: {p1:.0f} -> {p2:.0f} GFLOP/s = {p2 / p1:.2f}x)"
             if p1 and p2 else "")
    t.add(f"{name}: 2 threads >= {want}x 1 thread", f"{s:.2f}x{bound}", s >= want)


def chunked_targets(rows, t, kernel, label, where):
    """A chunked form's best chunk per dtype and thread count against the same run's peak
    of that dtype (>= 70 %), its 1 -> 2 thread scaling, and bf16's speed-up over f32."""
    best = {}
    for dtype, peak_name in (("f32", "peak FMA"), ("bf16", "the bf16 dot peak")):
        for th in (1, 2):
            cands = [r for r in pick(rows, kernel=kernel, threads=th, **where)
                     if r.get("dtype", "f32") == dtype]
            best[dtype, th] = max(cands, key=lambda r: f(r, "gflops"), default=None)
            name = f"{label} {dtype}, {th} thread(s): >= 70 % of {peak_name} (best chunk)"
            r = best[dtype, th]
            if r is None:
                t.add(name, "- (no rows: this build has no bf16 kernel for it)"
                      if dtype == "bf16" else "-", None)
                continue
            frac, note = fma_frac(rows, r)
            over = ""
            if dtype == "bf16" and best["f32", th] is not None:
                over = (f"; the f32 row of the same run takes "
                        f"{f(best['f32', th], 'median_s') / f(r, 'median_s'):.2f}x as long")
            t.add(name, f"{f(r, 'gflops'):.0f} GFLOP/s = {100 * frac:.0f} % at chunk "
                        f"{r['chunk']}{over}{note}", frac >= 0.70)
        r1 = best[dtype, 1]
        r2 = None
        if r1 is not None:
            r2 = next((r for r in reversed(pick(rows, kernel=kernel, threads=2,
                                                chunk=int(r1["chunk"]), **where))
                       if r.get("dtype", "f32") == dtype), None)
        if dtype == "f32" or r1 is not None:
            scaling_target(t, f"{label} {dtype} at chunk {r1['chunk'] if r1 else '-'}", r1, r2)


def limits(rows, t):
    """Issue 19's targets, each beside the limit of the same minutes: the decode against
    the read-only stream measured interleaved with it (gemv_rowdot over n x 1024 floats),
    compute-bound kernels against the same run's peak of their dtype, the Mamba-1 step
    against the time the stream would take over its bytes."""
    t.family = "limits"
    t.lines += ["", "## Against the same minutes' limits (issue 19)", "",
                "| target | measured (median) | verdict |", "|---|---|---|"]
    for dtype in ("f32", "f16", "bf16"):
        for n in (32768, 131072):
            for th in (1, 2):
                name = (f"decode {dtype}, n = {n}, {th} thread(s): >= 90 % of the read-only "
                        "stream")
                r = one(rows, "decode", kernel="attn_decode", dtype=dtype, n_ctx=n, threads=th)
                g = one(rows, "decode", kernel="gemv_rowdot", n_ctx=n, d_inner=1024, threads=th)
                if r is None or g is None or f(g, "gbps") <= 0:
                    t.add(name, "-", None)
                    continue
                frac = f(r, "gbps") / f(g, "gbps")
                half = " (the stream reads half the f32 cache's bytes)" if dtype == "f32" else ""
                t.add(name, f"{ms(r)}, {f(r, 'gbps'):.1f} GB/s = {100 * frac:.0f} % of "
                            f"{f(g, 'gbps'):.1f} GB/s{half}", frac >= 0.90)
    p = {th: one(rows, "prefill", kernel="attn_prefill", dtype="f32", n_ctx=4096, threads=th)
         for th in (1, 2)}
    for th in (1, 2):
        name = f"causal prefill n = 4096 f32, {th} thread(s): >= 65 % of peak FMA"
        if p[th] is None:
            t.add(name, "-", None)
        else:
            frac, note = fma_frac(rows, p[th])
            t.add(name, f"{f(p[th], 'median_s'):.3g} s, {f(p[th], 'gflops'):.0f} GFLOP/s = "
                        f"{100 * frac:.0f} %{note}", frac >= 0.65)
    b = one(rows, "prefill", kernel="attn_prefill", dtype="bf16", n_ctx=4096, threads=2)
    name = "causal prefill n = 4096 bf16: >= 1.7x the f32 prefill of the same run"
    if b is None or p[2] is None:
        t.add(name, "- (no bf16 prefill rows: this build has no bf16 causal prefill kernel)"
              if b is None else "-", None)
    else:
        s = f(p[2], "median_s") / f(b, "median_s")
        peak = peak_of(b)  # the bf16 row's roofline: the bf16 dot-product peak where there is one
        of_peak = (f" ({f(b, 'gflops'):.0f} GFLOP/s = {100 * f(b, 'gflops') / peak:.0f} % of the "
                   f"same run's {peak:.0f} GFLOP/s peak for bf16)") if peak else ""
        t.add(name, f"{ms(b)} vs f32 {ms(p[2])} = {s:.2f}x{of_peak}", s >= 1.7)
    scaling_target(t, "causal prefill n = 4096 f32", p[1], p[2])
    for kernel, label, where in (("ssd_chunked", "chunked SSD (32 x 64, N = 128, L = 4096)", {}),
                                 ("delta_chunked", "chunked gated delta (32 x 128, L = 4096)", {}),
                                 ("linear_chunked", "chunked linear attention (32 x 128, L = 8192)",
                                  {"n_ctx": 8192})):
        chunked_targets(rows, t, kernel, label, where)
    for disc, want, label in (("euler", 0.8, "delta B"), ("zoh", 1.0, "exact ZOH")):
        m = {th: one(rows, "mamba1", kernel="mamba1_scan", n_ctx=4096, d_inner=2048, d_state=16,
                     threads=th, disc=disc) for th in (1, 2)}
        name = f"Mamba-1 scan {label} (D 2048, N 16, L 4096), 1 thread: <= {want} ns per element"
        if m[1] is None:
            t.add(name, "-", None)
        else:
            ns = f(m[1], "median_s") / (4096 * 2048 * 16) * 1e9
            frac, note = fma_frac(rows, m[1])
            t.add(name, f"{ns:.2f} ns ({f(m[1], 'gflops'):.1f} GFLOP/s = {100 * frac:.0f} % of "
                        f"peak FMA{note})", ns <= want)
        scaling_target(t, f"Mamba-1 scan {label}", m[1], m[2])
    g = one(rows, "steps", kernel="gemv_rowdot", threads=1)
    for disc, label in (("euler", "delta B"), ("zoh", "exact ZOH")):
        r = one(rows, "steps", kernel="mamba1_step", d_inner=8192, d_state=16, threads=1,
                disc=disc)
        name = f"Mamba-1 decode step {label} (D 8192, N 16), 1 thread: <= 100 us"
        if r is None:
            t.add(name, "-", None)
            continue
        us = f(r, "median_s") * 1e6
        bound = ""
        if g is not None and f(g, "gbps") > 0 and f(r, "bytes") > 0:
            floor = f(r, "bytes") / (f(g, "gbps") * 1e9) * 1e6
            bound = (f"; the read-only stream of the same minutes ({f(g, 'gbps'):.1f} GB/s, "
                     f"gemv_rowdot over {f(g, 'bytes') / 2**20:.1f} MiB) takes {floor:.0f} us over "
                     f"the step's {f(r, 'bytes') / 2**20:.1f} MiB")
        t.add(name, f"{us:.1f} us, {f(r, 'gbps'):.1f} GB/s{bound}", us <= 100)


NOISY = 0.20  # (p75 - min) / median above which a row's repetitions are called unsteady


def noisy(rows, t):
    """Rows whose repetitions spread widely: (p75 - min) / median > NOISY. A verdict drawn
    from such a row says more about the machine's minutes than about the kernel."""
    out = []
    for r in rows:
        try:
            spread = (f(r, "p75_s") - f(r, "min_s")) / f(r, "median_s")
        except (KeyError, ValueError, ZeroDivisionError):
            continue
        if spread > NOISY and r["kernel"] not in ("stream_triad", "peak_fma", "peak_dot_i8"):
            config = ", ".join(f"{k} {r[k]}" for k in ("dtype", "n_ctx", "chunk", "threads")
                               if r.get(k) not in (None, "", "0"))
            out.append(f"| {r['_file']} | {r['kernel']} ({config}) | {ms(r)} | "
                       f"min {f(r, 'min_s') * 1e3:.3g} ms, p75 {f(r, 'p75_s') * 1e3:.3g} ms "
                       f"= {100 * spread:.0f} % |")
    if out:
        t.lines += ["", f"## Unsteady rows: (p75 - min) / median above {100 * NOISY:.0f} %", "",
                    "| sweep | row | median | spread |", "|---|---|---|---|"] + out
    return len(out)


def evaluate(rows):
    """Every target's verdict from the rows of load(): (Table, number of unsteady rows)."""
    t = Table()
    attention(rows, t)
    recurrent(rows, t)
    limits(rows, t)
    return t, noisy(rows, t)


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.stderr.write("usage: scripts/targets.py DIR  (the CSVs of scripts/targets.sh)\n")
        return 2
    rows = load(sys.argv[1])
    if not rows:
        sys.stderr.write(f"targets.py: no sweep rows in {sys.argv[1]}\n")
        return 2
    t, unsteady = evaluate(rows)
    head = rows[0]
    print(f"# Speed targets: {head['cpu_model']}, {head['cores']} cores, git {head['git_rev']}")
    print()
    print(f"{t.met} met, {t.missed} missed, {t.unmeasured} not measured. Medians of timed "
          "repetitions; percentages are of the same sweep's roofline (peak FMA or STREAM "
          "triad at the row's thread count). Ratios compare rows of one sweep invocation."
          + (f" {unsteady} rows had unsteady repetitions (listed at the end)." if unsteady else ""))
    print("\n".join(t.lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
