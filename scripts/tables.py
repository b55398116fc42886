#!/usr/bin/python3
"""Tables of the longmix report in three renderings from one set of typed cells:
Markdown (report.md), LaTeX (booktabs, plain numbers, a caption naming the machine and the
git revision) and CSV (raw values: seconds in full, no unit text).

A Table holds columns (Col: a name, a kind and, for numbers, the digits shown) and rows of
raw cell values: str for text, float or int for numbers and times (seconds), None for a
missing value. Markdown shows times as "239.5 µs" / "1.52 ms"; LaTeX puts one unit per time
column in its heading and plain numbers below; CSV keeps seconds (heading "name (s)").
"""
import csv
import io
import math
import re


class Col:
    """A column: kind "text", "int", "num" (fixed `digits` after the point) or "time"
    (seconds). Numbers align right; right=True aligns a text column of numbers with
    bounds ("<= 64") too. width: for prose columns, a LaTeX p{} column of that fraction of
    the line width. brief: LaTeX keeps a prose cell's first clause (up to " (" or "; "), the
    figure a paper quotes; Markdown and CSV keep it whole."""

    def __init__(self, name, kind="text", digits=2, right=None, width=None, brief=False):
        self.name, self.kind, self.digits, self.width, self.brief = name, kind, digits, width, brief
        self.right = kind != "text" if right is None else right

    @property
    def numeric(self):
        return self.right


class Table:
    """name: the file stem (tables/<name>.tex); title: one line saying what it shows;
    note: a paragraph printed under it in Markdown (not in LaTeX or CSV). page_rows: LaTeX
    splits a longer table into floats of at most that many rows, each with the header and a
    caption "(part k of m)", since one float cannot run over a page."""

    def __init__(self, name, title, columns, rows, note=None, wide=False, page_rows=None):
        self.name, self.title, self.columns, self.rows, self.note = name, title, columns, rows, note
        self.wide = wide  # LaTeX: table* (both columns of a two-column paper)
        self.page_rows = page_rows


def fmt_time(s):
    """Seconds as text for a reader: "239.5 µs", "1.52 ms", "6.81 s"; "-" when absent."""
    if s is None or s <= 0:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def _plain(col, v):
    if v is None:
        return "-"
    if col.kind == "int":
        return f"{int(round(v))}"
    if col.kind == "num":
        return f"{v:.{col.digits}f}"
    return str(v)


def markdown(t):
    head = "| " + " | ".join(c.name for c in t.columns) + " |"
    rule = "|" + "|".join("--:" if c.numeric else "---" for c in t.columns) + "|"
    body = ["| " + " | ".join(fmt_time(v) if c.kind == "time" else _plain(c, v)
                              for c, v in zip(t.columns, r)) + " |" for r in t.rows]
    out = [head, rule] + body
    if t.note:
        out += ["", t.note]
    return "\n".join(out)


# ---- LaTeX ---------------------------------------------------------------------------------

_TEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                "^": r"\textasciicircum{}", "µ": r"$\mu$", "≤": r"$\le$", "≥": r"$\ge$", "×": r"$\times$",
                "→": r"$\to$", "−": "-", "–": "--", "…": r"\ldots{}", "<": r"$<$", ">": r"$>$"}


def tex_escape(text):
    """Text for LaTeX: specials escaped, <= >= -> as symbols, 10^6 and 2^22 as powers."""
    text = str(text).replace("<=", "≤").replace(">=", "≥").replace("->", "→").replace("**", "")
    parts = re.split(r"(\d+)\^(\d+)", text)  # text, base, exponent, text, ...
    out = []
    for i, part in enumerate(parts):
        if i % 3 == 0:
            out.append("".join(_TEX_ESCAPES.get(ch, ch) for ch in part))
        elif i % 3 == 1:
            out.append(f"${part}^{{{parts[i + 1]}}}$")
    return "".join(out)


_UNITS = ((1e-6, r"$\mu$s"), (1e-3, "ms"), (1.0, "s"))


def _time_unit(values):
    """The largest unit in which the column's typical time (geometric mean) reads at least
    0.1: one column of decode microseconds and prefill seconds reads in ms (0.273, 306)."""
    present = [v for v in values if v is not None and v > 0]
    if not present:
        return 1.0, "s"
    mid = math.exp(sum(math.log(v) for v in present) / len(present))
    scale, name = _UNITS[0]
    for s, n in _UNITS:
        if mid / s >= 0.1:
            scale, name = s, n
    return scale, name


def _sig(v, digits=3):
    """A plain number with `digits` significant digits, no exponent for ordinary sizes."""
    if v == 0:
        return "0"
    places = max(0, digits - 1 - int(math.floor(math.log10(abs(v)))))
    return f"{v:.{places}f}"


def latex(t, caption_suffix):
    """A booktabs table (several when it has more than t.page_rows rows): `caption_suffix`
    names the machine and the git revision."""
    units = {i: _time_unit([r[i] for r in t.rows]) for i, c in enumerate(t.columns)
             if c.kind == "time"}
    n = t.page_rows or max(1, len(t.rows))
    parts = [t.rows[k:k + n] for k in range(0, len(t.rows), n)] or [[]]
    return "\n".join(_latex_float(t, caption_suffix, units, rows, k + 1, len(parts))
                     for k, rows in enumerate(parts))


# A table of more columns than this stacks its headings' words (at most STACK_CHARS a line)
# and sets its cells a size smaller, so that it fits across a two-column page.
STACK_COLUMNS, STACK_CHARS = 10, 6


def _stacked(head):
    """A heading as lines of at most STACK_CHARS characters (words kept whole), in a
    one-column tabular aligned at its bottom line."""
    lines = []
    for w in head.split(" "):
        if lines and len(lines[-1]) + 1 + len(w) <= STACK_CHARS:
            lines[-1] += " " + w
        else:
            lines.append(w)
    if len(lines) == 1:
        return head
    return r"\begin{tabular}[b]{@{}c@{}}" + "\\\\".join(lines) + r"\end{tabular}"


def _latex_float(t, caption_suffix, units, rows, part, parts):
    """One float of table t holding `rows`, part `part` of `parts`."""
    heads = [tex_escape(c.name) + (f" ({units[i][1]})" if i in units else "")
             for i, c in enumerate(t.columns)]
    many = len(t.columns) > STACK_COLUMNS
    if many:
        heads = [_stacked(h) for h in heads]
    spec = "".join(f"p{{{c.width}\\linewidth}}" if c.width else "r" if c.numeric else "l"
                   for c in t.columns)
    env = "table*" if t.wide else "table"
    of = f" (part {part} of {parts})" if parts > 1 else ""
    label = t.name.replace("_", "-") + (f"-{part}" if part > 1 else "")
    lines = [r"\begin{" + env + "}[t]", r"\centering", r"\footnotesize" if many else r"\small",
             r"\setlength{\tabcolsep}{3pt}" if many else r"\setlength{\tabcolsep}{4pt}",
             r"\caption{" + tex_escape(t.title + of) + ". " + tex_escape(caption_suffix) + "}",
             r"\label{tab:longmix-" + label + "}",
             r"\begin{tabular}{" + spec + "}", r"\toprule", " & ".join(heads) + r" \\",
             r"\midrule"]
    for r in rows:
        cells = []
        for i, (c, v) in enumerate(zip(t.columns, r)):
            if v is None:
                cells.append("--")
            elif c.kind == "time":
                cells.append(_sig(v / units[i][0]))
            elif c.brief:
                cells.append(tex_escape(re.split(r" \(|; ", str(v), maxsplit=1)[0]))
            else:
                cells.append(tex_escape(_plain(c, v)))
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{" + env + "}"]
    return "\n".join(lines)


# ---- CSV -------------------------------------------------------------------------------------

def csv_text(t):
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow([c.name + (" (s)" if c.kind == "time" else "") for c in t.columns])
    for r in t.rows:
        w.writerow(["" if v is None else (f"{v:.6g}" if c.kind == "time" else
                                          str(v).replace("**", "") if c.kind == "text" else
                                          _plain(c, v))
                    for c, v in zip(t.columns, r)])
    return out.getvalue()


FORMATS = ("markdown", "latex", "csv")


def render(t, fmt, caption_suffix=""):
    if fmt == "markdown":
        return markdown(t)
    if fmt == "latex":
        return latex(t, caption_suffix)
    if fmt == "csv":
        return csv_text(t)
    raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
