#!/usr/bin/python3
"""Figures of the longmix report, drawn from the CSV files longmix writes (matplotlib, Agg).

Every function takes already-parsed rows (lists of dicts of strings, as csv.DictReader
gives; measurement rows carry "_file", the results file they came from) and a PNG path,
draws, saves the figure as PNG, PDF and SVG beside each other and returns the PNG path (or
None when there is nothing to draw). No function computes model math: the lesson figures
plot `longmix lesson --csv` output, the measurement figures plot sweep / crossover /
roofline rows.

Sizes are those of print: COLUMN (3.4 in, one column of a two-column paper) or PAGE (7 in,
both columns), fonts 7-8.5 pt at that size, so a figure placed at its width keeps them.
PDFs embed TrueType fonts (pdf.fonttype 42; many publishers refuse Type 3).
"""
import math
import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator  # noqa: E402

COLUMN, PAGE = 3.4, 7.0  # inches
plt.rcParams.update({
    "font.size": 8, "axes.titlesize": 8.5, "axes.labelsize": 8, "xtick.labelsize": 7,
    "ytick.labelsize": 7, "legend.fontsize": 7, "figure.titlesize": 9,
    "lines.linewidth": 1.2, "lines.markersize": 4, "axes.linewidth": 0.6,
    "axes.spines.top": False, "axes.spines.right": False, "legend.frameon": False,
    "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "path", "savefig.dpi": 200,
})

BLUE, RED, ORANGE, GREEN, PURPLE, MUTED = "#2563eb", "#dc2626", "#d97706", "#059669", "#7c3aed", "#9ca3af"
INK = "#374151"
# 20 colours that stay apart on white and in greyscale pairs, then 10 marker shapes: kernel
# i gets colour i % 20 and marker i % 10, a pair no other of the first 20 kernels shares.
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22", "#0b3d91", "#a50f15", "#006d2c", "#b35806",
           "#54278f", "#4d4d4d", "#c51b7d", "#01665e", "#fdae61", "#80b1d3"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h"]
CYCLE = PALETTE[:10]
FILLS = ["full", "none", "left", "top"]  # 1st, 2nd, ... thread count of a figure

NAMES = {"attn_decode": "attention", "kvq_decode": "attention",
         "mamba1_step": "Mamba-1 step", "ssd_step": "Mamba-2 SSD step",
         "attn_prefill": "causal attention", "mamba1_scan": "Mamba-1 scan",
         "ssd_chunked": "Mamba-2 SSD, chunked", "linear_chunked": "linear attention, chunked",
         "delta_chunked": "gated delta rule, chunked", "scan_affine": "affine scan",
         "attn_prefill_window": "sliding-window prefill (x: window)"}


def _num(row, key, default=0.0):
    try:
        return float(row.get(key, default))
    except (TypeError, ValueError):
        return default


def _save(fig, path, tight=True):
    """PNG at `path`, PDF and SVG beside it (same stem); tight bounds keep outside legends
    (tight=False: the figure's own size, for layouts placed by hand)."""
    stem = os.path.splitext(path)[0]
    for ext in (".png", ".pdf", ".svg"):
        fig.savefig(stem + ext, bbox_inches="tight" if tight else None, pad_inches=0.03)
    plt.close(fig)
    return path


def _ok(rows):
    return [r for r in rows if r.get("status") == "ok" and _num(r, "median_s") > 0]


def _tokens(n, _pos=None):
    """Axis text of a token count: 64, 256, 1k, 4k, 16k, 1M (k = 1024)."""
    n = int(round(n))
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20}M"
    if n >= 1024 and n % 1024 == 0:
        return f"{n >> 10}k"
    return str(n)


def _seconds(s, _pos=None):
    """Axis text of a time: 10 µs, 1 ms, 100 ms, 2 s."""
    if s <= 0:
        return ""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if s >= scale * 0.999:
            v = s / scale
            return f"{v:.0f} {unit}" if v >= 10 or abs(v - round(v)) < 0.05 else f"{v:.1f} {unit}"
    return f"{s:.0e} s"


def _log2_ticks(ax, lo, hi, axis="x", fmt=_tokens):
    """Ticks at powers of two from lo to hi, every other one when there are more than 7."""
    if lo <= 0 or hi <= 0:
        return
    e0, e1 = math.floor(math.log2(lo) + 1e-9), math.ceil(math.log2(hi) - 1e-9)
    step = 1 if e1 - e0 <= 6 else 2
    ticks = [2.0 ** e for e in range(e0, e1 + 1, step)]
    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_locator(FixedLocator(ticks))
    a.set_major_formatter(FuncFormatter(fmt))
    a.set_minor_locator(NullLocator())


def _time_axis(ax, axis="y"):
    """Log time axis labelled in s / ms / µs: decades when the data spans two or more,
    1-2-5 steps down to 0.8 of a decade, 1-1.5-2-3-5-7 below, so each panel has labels."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    span = math.log10(hi / lo) if lo > 0 and hi > lo else 3
    subs = (1.0,) if span >= 2 else (1.0, 2.0, 5.0) if span >= 0.8 else (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)
    a.set_major_locator(LogLocator(base=10, subs=subs, numticks=12))
    a.set_major_formatter(FuncFormatter(_seconds))
    a.set_minor_locator(NullLocator() if len(subs) > 1 else LogLocator(base=10, subs=range(2, 10), numticks=12))
    a.set_minor_formatter(NullFormatter())


def _crosses(a, b, c, d):
    """True when segment a-b crosses segment c-d (display coordinates)."""
    def side(p, q, r):
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])
    return side(a, b, c) * side(a, b, d) < 0 and side(c, d, a) * side(c, d, b) < 0


def _place_labels(ax, points, fontsize=6.5):
    """Text labels near points, clear of each other, of the points, of the lines drawn and
    of each other's leader lines: each (x, y, text) tries offsets on growing rings around its
    point and takes the first whose box touches nothing (else the one touching least), with a
    thin leader line when it sits away from its point. Call after the figure's layout."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    paths = [line.get_transform().transform_path(line.get_path()) for line in ax.get_lines()
             if len(line.get_xdata()) > 1]
    marks = [ax.transData.transform((x, y)) for x, y, _ in points]
    taken, leaders = [], []
    rings = [(r * math.cos(a), r * math.sin(a)) for r in (9, 16, 24, 34, 46)
             for a in (math.pi / 2, -math.pi / 2, 0, math.pi, math.pi / 4, -math.pi / 4,
                       3 * math.pi / 4, -3 * math.pi / 4)]
    for x, y, text in sorted(points):
        best = None
        anchor = ax.transData.transform((x, y))
        for dx, dy in rings:
            label = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points",
                                ha="center", va="center", fontsize=fontsize, color=INK)
            box = label.get_window_extent(renderer).expanded(1.15, 1.3)
            inside = (box.x0 >= ax.bbox.x0 + 4 and box.x1 <= ax.bbox.x1 - 2 and
                      box.y0 >= ax.bbox.y0 + 2 and box.y1 <= ax.bbox.y1 - 2)
            center = ((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2)
            hits = (sum(box.overlaps(b) for b in taken) * 3 + (not inside) * 20
                    + sum(box.contains(px, py) for px, py in marks) * 3
                    + sum(_crosses(anchor, center, a, b) for a, b in leaders) * 3
                    + sum(p.intersects_bbox(box, filled=False) for p in paths))
            if best is None or hits < best[0]:
                if best is not None:
                    best[1].remove()
                best = (hits, label, (dx, dy), center)
            else:
                label.remove()
            if hits == 0:
                break
        _, label, (dx, dy), center = best
        if math.hypot(dx, dy) > 12:
            label.remove()
            label = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points",
                                ha="center", va="center", fontsize=fontsize, color=INK,
                                arrowprops=dict(arrowstyle="-", lw=0.5, color=MUTED, shrinkA=0, shrinkB=3))
        taken.append(label.get_window_extent(renderer))
        leaders.append((tuple(anchor), center))


# ---- measurements -----------------------------------------------------------------------

DECODE_GROWING = {"attn_decode", "kvq_decode"}
DECODE_FLAT = {"mamba1_step", "ssd_step"}
PREFILL_GROWING = {"attn_prefill"}
PREFILL_OTHER = {"mamba1_scan", "linear_chunked", "ssd_chunked"}


CONFIG = ("chunk", "heads", "kv_heads", "head_dim", "d_inner", "d_state", "batch", "bits",
          "disc")


def _context_sources(rows):
    """The rows the time-vs-context figure draws: crossover.csv's alone when it has any (the
    crossover table was computed from them), else every file's, each file its own line; and
    of each kernel, dtype, threads and file, only the configuration (chunk, geometry) measured
    at the most contexts, so that a line varies n alone (a chunk study at one n is
    fig_chunk's)."""
    wanted = DECODE_GROWING | DECODE_FLAT | PREFILL_GROWING | PREFILL_OTHER
    rows = [r for r in _ok(rows) if r["kernel"] in wanted]
    rows = [r for r in rows if r.get("_file") == "crossover.csv"] or rows
    contexts = defaultdict(set)
    for r in rows:
        line = (r["kernel"], r["dtype"], r["threads"], r.get("_file"))
        contexts[line, tuple(r.get(c, "") for c in CONFIG)].add(r["n_ctx"])
    best = {}
    for (line, config), ns in sorted(contexts.items()):
        if line not in best or len(ns) > len(contexts[line, best[line]]):
            best[line] = config
    return [r for r in rows if best[(r["kernel"], r["dtype"], r["threads"], r.get("_file"))]
            == tuple(r.get(c, "") for c in CONFIG)]


def _series_label(r, phase, files):
    k = r["kernel"]
    name = NAMES.get(k, k)
    if k in DECODE_GROWING:
        name = f"{name}, {r['dtype']} KV"
    elif k in DECODE_FLAT | {"mamba1_scan", "ssd_chunked"} and _num(r, "d_state") > 0:
        name = f"{name} (N={r['d_state']})"
    if len(files) > 1:
        name += f" [{r.get('_file', '?')}]"
    return name


def _interp_loglog(pts, x):
    """y at x on the log-log line through the two points of pts (sorted (x, y)) around x."""
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 <= x <= x1 and x1 > x0:
            f = math.log(x / x0) / math.log(x1 / x0)
            return math.exp(math.log(y0) + f * (math.log(y1) - math.log(y0)))
    return None


def _context_panel(ax, rows, summary, phase, threads, files, styles):
    """One panel: time vs context for one phase and thread count; returns the crossover
    marks to label [(n*, time, text)], or None when there is nothing to draw."""
    growing = DECODE_GROWING if phase == "decode" else PREFILL_GROWING
    others = DECODE_FLAT if phase == "decode" else PREFILL_OTHER
    series, flats = defaultdict(list), {}
    for r in rows:
        if int(_num(r, "threads")) != threads or r["kernel"] not in growing | others:
            continue
        label = _series_label(r, phase, files)
        if phase == "decode" and r["kernel"] in DECODE_FLAT:
            flats[label] = _num(r, "median_s")
        elif _num(r, "n_ctx") > 0:
            series[label].append((_num(r, "n_ctx"), _num(r, "median_s")))
    if not series:
        return None
    ns = sorted({n for pts in series.values() for n, _ in pts})
    for label, pts in sorted(series.items()):
        pts.sort()
        color, marker = styles[label]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=marker, ms=3, color=color,
                label=label)
    for label, t in sorted(flats.items()):
        ax.axhline(t, ls="--", color=styles[label][0], label=label + ", per token")
    marks = []
    for s in summary:
        if s.get("phase") != phase or s.get("found") != "found" or int(_num(s, "threads")) != threads:
            continue
        n_star = _num(s, "n_star")
        attention = [k for k in series if k.startswith(NAMES["attn_decode" if phase == "decode" else "attn_prefill"])
                     and (phase != "decode" or f", {s.get('dtype')} KV" in k)]
        y = _interp_loglog(sorted(series[attention[0]]), n_star) if attention else None
        if y is None:
            continue
        ax.plot([n_star], [y], "o", ms=5, mfc="white", mec=INK, mew=1.0, zorder=5)
        marks.append((n_star, y, f"{n_star:,.0f}"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    _log2_ticks(ax, ns[0], ns[-1])
    _time_axis(ax)
    return marks


def time_vs_context(rows, summary, path):
    """Log-log time per layer vs context, one panel per phase (rows: decode, prefill) and
    thread count (columns): decode attention per KV dtype against the SSM steps (flat lines),
    prefill attention against the scans; each measured crossover n* marked (open circle) and
    labelled with its value. One line per kernel, dtype and results file."""
    rows = _context_sources(rows)
    if not rows:
        return None
    files = sorted({r.get("_file", "?") for r in rows})
    phases = [p for p, kernels in (("decode", DECODE_GROWING), ("prefill", PREFILL_GROWING))
              if any(r["kernel"] in kernels for r in rows)]
    threads = sorted({int(_num(r, "threads")) for r in rows})
    if not phases:
        return None
    labels = sorted({_series_label(r, p, files) for r in rows for p in phases})
    styles = {lab: (PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)]) for i, lab in enumerate(labels)}
    fig, axes = plt.subplots(len(phases), len(threads), figsize=(PAGE, 2.35 * len(phases)),
                             squeeze=False)
    marks = []
    for i, phase in enumerate(phases):
        for j, t in enumerate(threads):
            ax = axes[i][j]
            drawn = _context_panel(ax, rows, summary, phase, t, files, styles)
            marks.append((ax, drawn or []))
            ax.set_title(f"{phase}, {t} thread{'s' if t > 1 else ''}")
            if drawn is None:
                ax.text(0.5, 0.5, f"no {phase} rows", ha="center", transform=ax.transAxes)
            if i == len(phases) - 1:
                ax.set_xlabel("context n (tokens)")
            if j == 0:
                ax.set_ylabel("time per layer, one token" if phase == "decode" else "time per layer, n-token prompt")
        handles, names = [], []
        for ax in axes[i]:
            for h, n in zip(*ax.get_legend_handles_labels()):
                if n not in names:
                    handles.append(h)
                    names.append(n)
        if any(s.get("phase") == phase and s.get("found") == "found" for s in summary):
            handles.append(Line2D([], [], ls="", marker="o", ms=5, mfc="white", mec=INK))
            names.append("crossover n* (measured)")
        axes[i][-1].legend(handles, names, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                           borderaxespad=0, handlelength=2.2)
    fig.tight_layout()
    for ax, points in marks:  # after the layout: the places tried are the places drawn
        if points:
            _place_labels(ax, points)
    return _save(fig, path)


def _kernel_styles(kernels):
    return {k: (PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)]) for i, k in enumerate(sorted(kernels))}


def roofline(roof_rows, rows, path):
    """The machine's roofline (best peak per ISA and best triad over thread counts) with
    every measured kernel configuration as a point at its arithmetic intensity: a colour and
    marker per kernel, filled for the first thread count and open for the second."""
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
    fig, ax = plt.subplots(figsize=(PAGE, 3.7))
    intensities = [_num(r, "flops") / _num(r, "bytes") for r in points] or [0.1, 100]
    x_lo, x_hi = min(intensities) / 2, max(intensities) * 2
    xs = [x_lo * (x_hi / x_lo) ** (i / 200) for i in range(201)]
    for i, (isa, peak) in enumerate(sorted(peaks.items(), key=lambda p: p[1])):
        ys = [min(peak, x * bw) if bw else peak for x in xs]
        ax.plot(xs, ys, color=MUTED if i < len(peaks) - 1 else INK, lw=1.0, zorder=1)
        ax.text(xs[-1], peak * 1.08, f"{isa} peak {peak:.0f} GFLOP/s", ha="right", va="bottom",
                fontsize=6.5, color=INK)
    styles = _kernel_styles({r["kernel"] for r in points})
    threads = sorted({int(_num(r, "threads")) for r in points})
    above = 0
    for k, (color, marker) in styles.items():
        for ti, t in enumerate(threads):
            pts = [r for r in points if r["kernel"] == k and int(_num(r, "threads")) == t]
            if not pts:
                continue
            x = [_num(r, "flops") / _num(r, "bytes") for r in pts]
            y = [_num(r, "gflops") for r in pts]
            for xi, yi, r in zip(x, y, pts):
                roof = min(peaks.get(r["isa"], max(peaks.values() or [float("inf")])), xi * bw) if bw else None
                above += roof is not None and yi > 1.05 * roof
            ax.plot(x, y, ls="", marker=marker, color=color, mec=color, ms=4.2, mew=0.9,
                    fillstyle=FILLS[ti % len(FILLS)], zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title("Roofline (best peak and triad over thread counts) and every measured configuration",
                 loc="left")
    if bw:  # along the slope, below it, at the left
        fig.canvas.draw()
        x0 = xs[1]
        (px0, py0), (px1, py1) = ax.transData.transform([(x0, x0 * bw), (x0 * 10, x0 * 10 * bw)])
        ax.annotate(f"DRAM triad {bw:.1f} GB/s", (x0, x0 * bw), xytext=(4, -9), textcoords="offset points",
                    fontsize=6.5, color=INK, rotation=math.degrees(math.atan2(py1 - py0, px1 - px0)),
                    rotation_mode="anchor")
    kernel_handles = [Line2D([], [], ls="", marker=m, color=c, ms=4.2, label=k)
                      for k, (c, m) in styles.items()]
    thread_handles = [Line2D([], [], ls="", marker="o", color=INK, ms=4.2, fillstyle=FILLS[i % len(FILLS)],
                             label=f"{t} thread{'s' if t > 1 else ''}") for i, t in enumerate(threads)]
    columns = 1 if len(kernel_handles) <= 12 else 2
    fig.subplots_adjust(left=0.08, right=0.98 - 0.19 * columns, bottom=0.2 if above else 0.12, top=0.92)
    fig.legend(handles=kernel_handles, loc="upper left", bbox_to_anchor=(1.0 - 0.19 * columns, 0.92),
               ncol=columns, title="kernel", title_fontsize=7, handletextpad=0.2, columnspacing=0.6,
               borderaxespad=0)
    fig.legend(handles=thread_handles, loc="lower left", bbox_to_anchor=(1.0 - 0.19 * columns, 0.2 if above else 0.12),
               borderaxespad=0, handletextpad=0.2)
    if above:
        fig.text(0.08, 0.03, f"{above} point{'s' if above > 1 else ''} above the roof: working sets that "
                 "stay in cache between runs, faster than the DRAM roof drawn here.", fontsize=7, color=INK)
    return _save(fig, path, tight=False)


def roofline_fraction(rows, path, clip=1.25):
    """Each kernel's fraction of the same run's roofline: a bar per thread count for the
    median configuration, a diamond for the best. Fractions above 1 (working sets held in
    cache, beyond the DRAM roof) sit in a grey band; those above `clip` are cut at its edge
    with their values printed beside it, so they do not squash the rest."""
    from matplotlib.patches import Patch
    rows = [r for r in _ok(rows) if _num(r, "roofline_frac") > 0]
    if not rows:
        return None
    isas = sorted({r["isa"] for r in rows})
    groups = defaultdict(list)
    for r in rows:
        name = r["kernel"] + (f" ({r['isa']})" if len(isas) > 1 else "")
        groups[(name, int(_num(r, "threads")))].append(_num(r, "roofline_frac"))
    kernels = sorted({k for k, _ in groups}, reverse=True)
    threads = sorted({t for _, t in groups})
    height = 0.84 / len(threads)
    fig, ax = plt.subplots(figsize=(COLUMN, 0.15 * len(kernels) * (1 + 0.35 * (len(threads) - 1)) + 0.9))
    ax.axvspan(1.0, clip, color="#e5e7eb", lw=0, zorder=0)
    handles = []
    for ti, t in enumerate(threads):
        color = [BLUE, ORANGE, GREEN, PURPLE][ti % 4]
        handles.append(Patch(color=color, label=f"{t} thread{'s' if t > 1 else ''}: median configuration"))
        for ki, k in enumerate(kernels):
            vals = sorted(groups.get((k, t), []))
            if not vals:
                continue
            y = ki - (ti - (len(threads) - 1) / 2) * height
            med, best = vals[len(vals) // 2], vals[-1]
            ax.barh(y, min(med, clip), height=height * 0.9, color=color, zorder=2)
            ax.plot([min(best, clip)], [y], marker="D", ms=2.8, color=INK, ls="", zorder=3)
            if best > clip:
                text = f"best {best:.1f}" if med <= clip else f"median {med:.1f}, best {best:.1f}"
                ax.text(clip - 0.04, y, text, va="center", ha="right", fontsize=5.5, zorder=4,
                        color="white" if med > clip else INK)
    handles += [Line2D([], [], ls="", marker="D", ms=2.8, color=INK, label="best configuration"),
                Patch(color="#e5e7eb", label="above 1: faster than the DRAM roof (cache-resident)")]
    ax.set_yticks(range(len(kernels)))
    ax.set_yticklabels(kernels, fontsize=6.5)
    ax.set_ylim(-0.6, len(kernels) - 0.4)
    ax.set_xlim(0, clip)
    ax.axvline(1.0, color=MUTED, ls="--", lw=0.7, zorder=1.5)
    ax.set_xlabel("rate / min(peak FMA, intensity × triad),\nsame run, ISA and threads")
    fig.suptitle("Fraction of the same run's roofline, per kernel", x=0.02, ha="left", fontsize=8.5)
    fig.tight_layout()
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.02, 0.0), ncol=1, borderaxespad=0,
               handlelength=1.4)
    return _save(fig, path)


def quant_error(lesson_rows, rows, path):
    """Attention output error vs bits: the lesson's reference schemes (longmix lesson) and
    the measured quantized decode kernels (err_max of kvq_decode rows)."""
    quantized = [r for r in _ok(rows) if r["kernel"] == "kvq_decode" and _num(r, "err_max") > 0]
    if not lesson_rows and not quantized:
        return None
    fig, ax = plt.subplots(figsize=(COLUMN * 1.35, 2.6))
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
        ax.semilogy([p[0] for p in pts], [p[1] for p in pts], MARKERS[(i + 1) % len(MARKERS)], ms=5,
                    color=PALETTE[(i + 3) % len(PALETTE)], label=f"measured kernel: {fmt}")
    ax.set_xlabel("bits per cached value")
    ax.set_ylabel("relative error of attention's output")
    ax.set_title("Quantized KV cache: error vs bits")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    return _save(fig, path)


def chunk_vs_time(rows, path):
    """Time vs chunk length, one panel per kernel with a chunk (the window of
    attn_prefill_window): a line per context (colour), thread count (line style) and file;
    only series of two or more chunk lengths."""
    rows = [r for r in _ok(rows) if _num(r, "chunk") > 0]
    series = defaultdict(list)
    for r in rows:
        key = (r["kernel"], int(_num(r, "n_ctx")), int(_num(r, "threads")), r["isa"], r.get("_file", ""))
        series[key].append((_num(r, "chunk"), _num(r, "median_s")))
    series = {k: sorted(v) for k, v in series.items() if len({c for c, _ in v}) > 1}
    if not series:
        return None
    kernels = sorted({k[0] for k in series})
    cols = min(3, len(kernels))
    nrows = math.ceil(len(kernels) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(PAGE, 2.25 * nrows), squeeze=False)
    styles = ["-", "--", ":", "-."]
    for idx, kernel in enumerate(kernels):
        ax = axes[idx // cols][idx % cols]
        mine = {k: v for k, v in series.items() if k[0] == kernel}
        ctxs = sorted({k[1] for k in mine})
        threads = sorted({k[2] for k in mine})
        files = sorted({k[4] for k in mine})
        isas = sorted({k[3] for k in mine})
        for (k, n, t, isa, f), pts in sorted(mine.items()):
            label = f"n={_tokens(n)}, {t} thread{'s' if t > 1 else ''}" + (f" {isa}" if len(isas) > 1 else "") + (f" [{f}]" if len(files) > 1 else "")
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=2.5,
                    color=PALETTE[ctxs.index(n) % len(PALETTE)], ls=styles[threads.index(t) % 4], label=label)
        chunks = [c for v in mine.values() for c, _ in v]
        ax.set_xscale("log")
        ax.set_yscale("log")
        _log2_ticks(ax, min(chunks), max(chunks), fmt=lambda v, _p=None: _tokens(v))
        _time_axis(ax)
        ax.set_title(kernel, fontsize=8)
        ax.set_xlabel("window (tokens)" if kernel == "attn_prefill_window" else "chunk length")
        if idx % cols == 0:
            ax.set_ylabel("time per call")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, fontsize=6, borderaxespad=0,
                  handlelength=2.0, columnspacing=0.8)
    for idx in range(len(kernels), nrows * cols):
        axes[idx // cols][idx % cols].axis("off")
    fig.tight_layout(h_pad=1.2)
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
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(PAGE * 0.8, 2.5))
    labels = [r["label"] for r in rows]
    a1.bar(labels, [_num(r, "pairs_per_head_per_layer") for r in rows], color=RED)
    a1.set_yscale("log")
    a1.set_ylabel("pairs per head per layer")
    a1.set_title("Compute: pairs scored grow with n²")
    gb = [_num(r, "kv_cache_bytes") / 1e9 for r in rows]
    a2.bar(labels, gb, color=BLUE)
    for i, g in enumerate(gb):
        a2.text(i, g + 2, f"{g:.1f} GB", ha="center", fontsize=7)
    a2.axhline(80, color=MUTED, ls="--")
    a2.text(-0.4, 84, "one 80 GB GPU", color="#4b5563", fontsize=7)
    a2.set_ylabel("KV cache, GB")
    a2.set_ylim(0, 160)
    a2.set_title("Memory: the KV cache grows with n")
    for a in (a1, a2):
        a.set_xlabel("context length")
    fig.tight_layout()
    return _save(fig, path)


def lesson_window_reach(rows, path):
    panels = _panels(rows)
    fig, axes = plt.subplots(1, len(panels), figsize=(PAGE, PAGE / len(panels) + 0.5))
    for a, p in zip(axes, panels):
        a.imshow(_matrix(rows, p), cmap="Blues", vmin=0, vmax=1.3)
        a.set_title(p)
        a.set_xlabel("key position (being read)")
        a.set_ylabel("query position (reading)")
    fig.tight_layout()
    return _save(fig, path)


def lesson_sparse_masks(rows, path):
    panels = _panels(rows)
    fig, axes = plt.subplots(1, len(panels), figsize=(PAGE, PAGE / len(panels) + 0.5))
    for a, p in zip(axes, panels):
        name, _, pairs = p.partition("|")
        a.imshow(_matrix(rows, p), cmap="Blues", vmin=0, vmax=1.3)
        a.set_title(f"{name}\n{pairs}")
        a.set_xlabel("key")
    axes[0].set_ylabel("query")
    fig.tight_layout()
    return _save(fig, path)


def lesson_linear_vs_softmax(rows, path):
    panels = _panels(rows)
    fig, axes = plt.subplots(1, len(panels), figsize=(PAGE * 0.8, 2.9))
    im = None
    for a, p in zip(axes, panels):
        im = a.imshow(_matrix(rows, p), cmap="Blues", vmin=0, vmax=1)
        a.set_title(p)
        a.set_xlabel("key")
        a.set_ylabel("query")
    fig.colorbar(im, ax=list(axes), fraction=0.03, label="attention weight")
    return _save(fig, path)


def lesson_ssm_kernel(rows, path):
    fig, ax = plt.subplots(figsize=(COLUMN, 2.3))
    by_a = defaultdict(list)
    for r in rows:
        by_a[r["A"]].append((int(r["k"]), _num(r, "kernel")))
    for (a, pts), color in zip(sorted(by_a.items(), key=lambda x: float(x[0])), (RED, ORANGE, BLUE)):
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, label=f"A = {a}")
    ax.set_xlabel("steps since the input arrived (k)")
    ax.set_ylabel("weight still carried, C·A^k·B")
    ax.set_title("How fast a fixed SSM forgets")
    ax.legend()
    fig.tight_layout()
    return _save(fig, path)


def lesson_selective_recall(rows, path):
    fig, ax = plt.subplots(figsize=(PAGE * 0.7, 2.5))
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
            ax.plot(xs, [p[1] for p in series[name]], "o-", color=color, ms=3, label=label)
    ax.set_xlabel("position in the sequence")
    ax.set_ylabel("value / state")
    ax.set_title("Remembering one marked token through noise")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    return _save(fig, path)


def lesson_kv_per_token(rows, path):
    fig, ax = plt.subplots(figsize=(COLUMN * 1.5, 2.2))
    kb = [_num(r, "bytes_per_token") / 1024 for r in rows]
    names = [r["design"] for r in rows]
    ax.barh(names[::-1], kb[::-1], color=[GREEN, ORANGE, PURPLE, BLUE, RED][: len(kb)])
    for i, v in enumerate(kb[::-1]):
        ax.text(v + 5, i, f"{v:.0f} KB", va="center", fontsize=7)
    ax.set_xlabel("KV cache per token, all 32 layers (KB)")
    ax.set_xlim(0, 620)
    ax.set_title("Shrinking the cache per token")
    return _save(fig, path)


def lesson_memory_vs_context(rows, path):
    fig, ax = plt.subplots(figsize=(PAGE * 0.75, 2.8))
    series = defaultdict(list)
    order = []
    for r in rows:
        if r["method"] not in series:
            order.append(r["method"])
        series[r["method"]].append((_num(r, "context"), _num(r, "bytes")))
    for i, name in enumerate(order):
        pts = series[name]
        ax.loglog([p[0] for p in pts], [p[1] / 1e9 for p in pts], color=PALETTE[i % len(PALETTE)], label=name)
    ax.axhline(80, color=MUTED, ls="--")
    ax.text(1_200, 95, "80 GB GPU", color="#4b5563", fontsize=7)
    ax.set_xlabel("context length n (tokens)")
    ax.set_ylabel("cache for one conversation (GB)")
    ax.set_title("What each design must keep, as context grows")
    # outside the axes: inside, every corner holds a line (state-space runs along the bottom)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
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

def model_decode_vs_context(rows, crossings, path):
    """Whole-model decode ms/token against context (log-log), one line per model, a panel
    per batch (the largest thread count), the measured model-level crossovers marked."""
    rows = [r for r in rows if r.get("status") == "ok" and _num(r, "ms_per_token") > 0]
    if not rows:
        return None
    threads = max(int(_num(r, "threads")) for r in rows)
    rows = [r for r in rows if int(_num(r, "threads")) == threads]
    batches = sorted({int(_num(r, "batch")) for r in rows})
    models = sorted({r["model"] for r in rows})
    fig, axes = plt.subplots(1, len(batches), figsize=(min(PAGE, COLUMN * len(batches)), 2.6),
                             squeeze=False)
    for ax, b in zip(axes[0], batches):
        for i, m in enumerate(models):
            pts = sorted((_num(r, "n_ctx"), _num(r, "ms_per_token")) for r in rows
                         if r["model"] == m and int(_num(r, "batch")) == b)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=MARKERS[i % 10],
                        color=PALETTE[i % 20], label=m, ms=3)
        for c in crossings:
            if int(_num(c, "batch")) == b and int(_num(c, "threads")) == threads and _num(c, "nstar_ctx") > 0:
                n = _num(c, "nstar_ctx")
                lo, hi = _num(c, "lower_ctx"), _num(c, "upper_ctx")
                f = (math.log(n) - math.log(lo)) / (math.log(hi) - math.log(lo)) if hi > lo > 0 else 0
                y = math.exp(math.log(_num(c, "lower_baseline_ms")) +
                             f * (math.log(_num(c, "upper_baseline_ms")) - math.log(_num(c, "lower_baseline_ms"))))
                ax.plot([n], [y], marker="*", ms=8, color=INK, ls="", zorder=5)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("context (tokens per sequence)")
        ax.set_ylabel("decode step (ms)")
        ax.set_title(f"batch {b}, {threads} thread{'s' if threads > 1 else ''}")
    axes[0][-1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=6)
    return _save(fig, path)


if __name__ == "__main__":
    print(__doc__)
