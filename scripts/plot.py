#!/usr/bin/python3
"""Figures of the longmix report, drawn from the CSV files longmix writes (matplotlib, Agg).

Every function takes already-parsed rows (lists of dicts of strings, as csv.DictReader
gives) and a PNG path, draws, saves and returns the path (or None when there is nothing to
draw). No function computes model math: the lesson figures plot `longmix lesson --csv`
output, the measurement figures plot sweep / crossover / roofline rows.
"""
import math
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BLUE, RED, ORANGE, GREEN, PURPLE, MUTED = "#2563eb", "#dc2626", "#d97706", "#059669", "#7c3aed", "#9ca3af"
CYCLE = [BLUE, RED, ORANGE, GREEN, PURPLE, "#0891b2", "#be185d", "#4b5563", "#65a30d", "#92400e"]


def _num(row, key, default=0.0):
    try:
        return float(row.get(key, default))
    except (TypeError, ValueError):
        return default


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _ok(rows):
    return [r for r in rows if r.get("status") == "ok" and _num(r, "median_s") > 0]


# ---- measurements -----------------------------------------------------------------------

def time_vs_context(rows, summary, path):
    """Log-log time per layer vs context: decode (attention per KV dtype vs SSM steps as
    flat lines) and prefill (attention vs scans), at the largest thread count measured,
    with each measured crossover n* marked."""
    rows = _ok(rows)
    if not rows:
        return None
    threads = max(int(_num(r, "threads")) for r in rows)
    rows = [r for r in rows if int(_num(r, "threads")) == threads]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    panels = (("decode", {"attn_decode", "kvq_decode", "attn_decode_q"}, {"mamba1_step", "ssd_step"}),
              ("prefill", {"attn_prefill"}, {"mamba1_scan", "linear_chunked", "ssd_chunked"}))
    drew = False
    for ax, (phase, growing, flat_kernels) in zip(axes, panels):
        series = defaultdict(list)
        flats = {}
        for r in rows:
            k = r["kernel"]
            if k in growing and _num(r, "n_ctx") > 0:
                series[f"{k} {r['dtype']}"].append((_num(r, "n_ctx"), _num(r, "median_s")))
            elif k in flat_kernels:
                if phase == "decode":
                    flats[f"{k} N={r['d_state']}"] = _num(r, "median_s")
                else:
                    label = f"{k} N={r['d_state']}" if _num(r, "d_state") > 0 else k
                    series[label].append((_num(r, "n_ctx"), _num(r, "median_s")))
        ns = sorted({n for pts in series.values() for n, _ in pts})
        if not series:
            ax.text(0.5, 0.5, f"no {phase} measurements", ha="center", transform=ax.transAxes)
            ax.set_title(f"{phase}: time vs context")
            continue
        for i, (name, pts) in enumerate(sorted(series.items())):
            pts.sort()
            ax.loglog([p[0] for p in pts], [p[1] for p in pts], "o-", color=CYCLE[i % len(CYCLE)],
                      label=name, ms=3)
            drew = True
        for j, (name, t) in enumerate(sorted(flats.items())):
            if ns:
                ax.loglog([ns[0], ns[-1]], [t, t], "--", color=CYCLE[(j + 5) % len(CYCLE)],
                          label=f"{name} (per token)")
        for s in summary:
            if s.get("phase") != phase or s.get("found") != "found" or int(_num(s, "threads")) != threads:
                continue
            n_star = _num(s, "n_star")
            ax.axvline(n_star, color=MUTED, lw=0.8)
            ax.text(n_star, ax.get_ylim()[0] * 1.3 if ax.get_ylim()[0] > 0 else 1e-6,
                    f" n*={n_star:.0f}\n {s['method_b'][:14]} {s['dtype']}", fontsize=7,
                    color="#374151", rotation=90, va="bottom")
        ax.set_xlabel("context n (tokens)")
        ax.set_ylabel("seconds per layer" + (" per token" if phase == "decode" else ""))
        ax.set_title(f"{phase}: time vs context ({threads} thread{'s' if threads > 1 else ''})")
        ax.legend(frameon=False, fontsize=7)
    if not drew:
        plt.close(fig)
        return None
    return _save(fig, path)


def roofline(roof_rows, rows, path):
    """The machine's roofline (best peak per ISA and best triad over thread counts) with
    every measured kernel configuration as a point at its arithmetic intensity."""
    peaks = defaultdict(float)
    bw = 0.0
    for r in roof_rows:  # the best over thread counts: the limit of any point drawn
        if r.get("status") != "ok":
            continue
        if r["kernel"] == "peak_fma":
            peaks[r["isa"]] = max(peaks[r["isa"]], _num(r, "gflops"))
        elif r["kernel"] == "stream_triad":
            bw = max(bw, _num(r, "gbps"))
    points = [r for r in _ok(rows) if _num(r, "flops") > 0 and _num(r, "bytes") > 0]
    if not peaks and not points:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    xs = [10 ** (e / 10) for e in range(-20, 31)]
    for i, (isa, peak) in enumerate(sorted(peaks.items())):
        ax.loglog(xs, [min(peak, x * bw) if bw else peak for x in xs], color=CYCLE[i], lw=1.5,
                  label=f"{isa} peak {peak:.0f} GFLOP/s")
    if bw:
        ax.text(xs[2], xs[2] * bw * 1.2, f"triad {bw:.1f} GB/s", fontsize=8, rotation=30)
    kernels = sorted({r["kernel"] for r in points})
    for i, k in enumerate(kernels):
        pts = [r for r in points if r["kernel"] == k]
        ax.scatter([_num(r, "flops") / _num(r, "bytes") for r in pts], [_num(r, "gflops") for r in pts],
                   s=14, color=CYCLE[(i + 3) % len(CYCLE)], label=k, zorder=3)
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title("Roofline of this machine (best over thread counts) and the kernels")
    ax.legend(frameon=False, fontsize=7, loc="lower right")
    return _save(fig, path)


def roofline_fraction(rows, path):
    """Each kernel's best and median fraction of the attainable roofline, per ISA/threads."""
    rows = [r for r in _ok(rows) if _num(r, "roofline_frac") > 0]
    if not rows:
        return None
    groups = defaultdict(list)
    for r in rows:
        groups[(r["kernel"], r["isa"], r["threads"])].append(_num(r, "roofline_frac"))
    keys = sorted(groups)
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(keys) + 1.5))
    labels = [f"{k} {i} t{t}" for k, i, t in keys]
    med = [sorted(groups[k])[len(groups[k]) // 2] for k in keys]
    best = [max(groups[k]) for k in keys]
    y = range(len(keys))
    ax.barh(list(y), best, color="#bfdbfe", label="best configuration")
    ax.barh(list(y), med, color=BLUE, height=0.5, label="median configuration")
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=8)
    ax.axvline(1.0, color=MUTED, ls="--")
    ax.set_xlabel("fraction of min(peak FMA, intensity x triad bandwidth), same run")
    ax.set_title("How close each kernel gets to the roofline")
    ax.legend(frameon=False, fontsize=8)
    return _save(fig, path)


def quant_error(lesson_rows, rows, path):
    """Attention output error vs bits: the lesson's reference schemes (longmix lesson) and
    the measured quantized decode kernels (err_max of kvq_decode rows; attn_decode_q is its old name)."""
    quantized = [r for r in _ok(rows) if r["kernel"] in ("kvq_decode", "attn_decode_q") and _num(r, "err_max") > 0]
    if not lesson_rows and not quantized:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    schemes = defaultdict(list)
    for r in lesson_rows:
        schemes[r["scheme"]].append((_num(r, "bits"), _num(r, "relative_error")))
    for i, (name, pts) in enumerate(sorted(schemes.items())):
        pts.sort()
        ax.semilogy([p[0] for p in pts], [p[1] for p in pts], "o-", color=CYCLE[i], label=f"reference: {name}")
    measured = defaultdict(list)
    for r in quantized:
        measured[r["dtype"]].append((_num(r, "bits"), _num(r, "err_max")))
    for i, (fmt, pts) in enumerate(sorted(measured.items())):
        ax.semilogy([p[0] for p in pts], [p[1] for p in pts], "s", ms=8, color=CYCLE[(i + 3) % len(CYCLE)],
                    label=f"measured decode kernel: {fmt} (max error / max |o|)")
    ax.set_xlabel("bits per cached value")
    ax.set_ylabel("relative error of attention's output")
    ax.set_title("Quantized KV cache: error vs bits")
    ax.legend(frameon=False, fontsize=7)
    return _save(fig, path)


def chunk_vs_time(rows, path):
    """Time vs chunk length (chunked scans; the window of attn_prefill_window)."""
    rows = [r for r in _ok(rows) if _num(r, "chunk") > 0]
    if not rows:
        return None
    series = defaultdict(list)
    for r in rows:
        series[(r["kernel"], r["n_ctx"], r["isa"], r["threads"])].append((_num(r, "chunk"), _num(r, "median_s")))
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, (key, pts) in enumerate(sorted(series.items())):
        pts.sort()
        ax.loglog([p[0] for p in pts], [p[1] for p in pts], "o-", color=CYCLE[i % len(CYCLE)],
                  label=f"{key[0]} n={key[1]} {key[2]} t{key[3]}", base=2)
    ax.set_xlabel("chunk length (window for attn_prefill_window)")
    ax.set_ylabel("seconds per call")
    ax.set_title("Chunk size vs time")
    ax.legend(frameon=False, fontsize=7)
    return _save(fig, path)


# ---- the lesson's eight figures, from `longmix lesson --csv` ---------------------------

def _matrix(rows, panel):
    cells = [r for r in rows if r["panel"] == panel]
    n = max(int(r["query"]) for r in cells) + 1
    m = [[0.0] * n for _ in range(n)]
    for r in cells:
        m[int(r["query"])][int(r["key"])] = float(r.get("value", r.get("weight", 0)))
    return m


def _panels(rows):
    seen = []
    for r in rows:
        if r["panel"] not in seen:
            seen.append(r["panel"])
    return seen


def lesson_context_cost(rows, path):
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.4))
    labels = [r["label"] for r in rows]
    a1.bar(labels, [_num(r, "pairs_per_head_per_layer") for r in rows], color=RED)
    a1.set_yscale("log")
    a1.set_ylabel("pairs per head per layer")
    a1.set_title("Compute: pairs scored grow with n²")
    gb = [_num(r, "kv_cache_bytes") / 1e9 for r in rows]
    a2.bar(labels, gb, color=BLUE)
    for i, g in enumerate(gb):
        a2.text(i, g + 2, f"{g:.1f} GB", ha="center")
    a2.axhline(80, color=MUTED, ls="--")
    a2.text(-0.4, 84, "one 80 GB GPU", color="#4b5563")
    a2.set_ylabel("KV cache, GB")
    a2.set_ylim(0, 160)
    a2.set_title("Memory: the KV cache grows with n")
    for a in (a1, a2):
        a.set_xlabel("context length")
    return _save(fig, path)


def lesson_window_reach(rows, path):
    panels = _panels(rows)
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.8))
    for a, p in zip(axes, panels):
        a.imshow(_matrix(rows, p), cmap="Blues", vmin=0, vmax=1.3)
        a.set_title(p)
        a.set_xlabel("key position (being read)")
        a.set_ylabel("query position (reading)")
    return _save(fig, path)


def lesson_sparse_masks(rows, path):
    panels = _panels(rows)
    fig, axes = plt.subplots(1, len(panels), figsize=(3 * len(panels), 3.4))
    for a, p in zip(axes, panels):
        name, _, pairs = p.partition("|")
        a.imshow(_matrix(rows, p), cmap="Blues", vmin=0, vmax=1.3)
        a.set_title(f"{name}\n{pairs}", fontsize=9)
        a.set_xlabel("key")
    axes[0].set_ylabel("query")
    return _save(fig, path)


def lesson_linear_vs_softmax(rows, path):
    panels = _panels(rows)
    fig, axes = plt.subplots(1, len(panels), figsize=(8.4, 3.8))
    im = None
    for a, p in zip(axes, panels):
        im = a.imshow(_matrix(rows, p), cmap="Blues", vmin=0, vmax=1)
        a.set_title(p)
        a.set_xlabel("key")
        a.set_ylabel("query")
    fig.colorbar(im, ax=list(axes), fraction=0.03, label="attention weight")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def lesson_ssm_kernel(rows, path):
    fig, ax = plt.subplots(figsize=(6, 3.4))
    by_a = defaultdict(list)
    for r in rows:
        by_a[r["A"]].append((int(r["k"]), _num(r, "kernel")))
    for (a, pts), color in zip(sorted(by_a.items(), key=lambda x: float(x[0])), (RED, ORANGE, BLUE)):
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, label=f"A = {a}")
    ax.set_xlabel("steps since the input arrived (k)")
    ax.set_ylabel("how much it still counts, C·A^k·B")
    ax.set_title("The kernel: how fast a fixed SSM forgets")
    ax.legend(frameon=False)
    return _save(fig, path)


def lesson_selective_recall(rows, path):
    fig, ax = plt.subplots(figsize=(7, 3.6))
    series = defaultdict(list)
    deltas = {}
    for r in rows:
        series[r["series"]].append((int(r["position"]), _num(r, "value")))
        if r.get("delta"):
            deltas[r["series"]] = _num(r, "delta")
    xs = [p[0] for p in series["input"]]
    ax.bar(xs, [p[1] for p in series["input"]], color=MUTED, label="input (marked 7 at position 2)")
    styles = {"selective": (BLUE, "selective: Δ set by each token"),
              "best fixed": (RED, f"best fixed Δ = {deltas.get('best fixed', 0):.2f}"),
              "large fixed": (ORANGE, "large fixed Δ = 5")}
    for name, (color, label) in styles.items():
        if series.get(name):
            ax.plot(xs, [p[1] for p in series[name]], "o-", color=color, label=label)
    ax.set_xlabel("position in the sequence")
    ax.set_ylabel("value / state")
    ax.set_title("Remembering one marked token through noise")
    ax.legend(frameon=False, fontsize=8, loc="center right")
    return _save(fig, path)


def lesson_kv_per_token(rows, path):
    fig, ax = plt.subplots(figsize=(7, 3.2))
    kb = [_num(r, "bytes_per_token") / 1024 for r in rows]
    names = [r["design"] for r in rows]
    ax.barh(names[::-1], kb[::-1], color=[GREEN, ORANGE, PURPLE, BLUE, RED][: len(kb)])
    for i, v in enumerate(kb[::-1]):
        ax.text(v + 5, i, f"{v:.0f} KB", va="center")
    ax.set_xlabel("KV cache per token, all 32 layers (KB)")
    ax.set_xlim(0, 600)
    ax.set_title("Shrinking the cache per token")
    return _save(fig, path)


def lesson_memory_vs_context(rows, path):
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    series = defaultdict(list)
    order = []
    for r in rows:
        if r["method"] not in series:
            order.append(r["method"])
        series[r["method"]].append((_num(r, "context"), _num(r, "bytes")))
    for name in order:
        pts = series[name]
        ax.loglog([p[0] for p in pts], [p[1] / 1e9 for p in pts], label=name)
    ax.axhline(80, color=MUTED, ls="--")
    ax.text(1_200, 95, "80 GB GPU", color="#4b5563")
    ax.set_xlabel("context length n (tokens)")
    ax.set_ylabel("cache for one conversation (GB)")
    ax.set_title("What each design must keep, as context grows")
    ax.legend(frameon=False, fontsize=8, loc="lower right")
    return _save(fig, path)


LESSON_FIGURES = (
    ("context_cost", lesson_context_cost, "The two bills: pairs scored (n²) and KV cache (n) at 8k, 128k, 1M tokens"),
    ("window_reach", lesson_window_reach, "Sliding window: one layer vs what three layers reach"),
    ("sparse_masks", lesson_sparse_masks, "Four 16 x 16 masks and the pairs each scores"),
    ("linear_vs_softmax", lesson_linear_vs_softmax, "Softmax vs linear attention weights on the same queries and keys"),
    ("ssm_kernel", lesson_ssm_kernel, "SSM kernels: A sets how long an input keeps counting"),
    ("selective_recall", lesson_selective_recall, "Selective recall of one marked token"),
    ("kv_per_token", lesson_kv_per_token, "Cache per token, by design"),
    ("memory_vs_context", lesson_memory_vs_context, "Memory vs context, every design"),
)

if __name__ == "__main__":
    print(__doc__)
