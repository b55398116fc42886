"""Float64 arithmetic for the contract builders that gives the same bits on every machine.

NumPy's fast paths do not: `@`, dot, einsum and linalg call the BLAS the machine has
(reference BLAS, OpenBLAS, MKL), whose summation order, blocking and FMA use differ, and
np.exp / expm1 / log1p pick a SIMD loop by CPU (AVX-512 machines round about a quarter of
exp's results differently from AVX2 ones). Even the C library's exp differs between its
FMA and SSE2 variants in a few results per ten thousand. Expected values built with those
change in their last digits from machine to machine, so a rebuilt contract would not be
byte-identical to the pinned one.

Everything here is made of IEEE-754 operations that are correctly rounded by definition
(+ - * / sqrt, exact scalings and comparisons), applied elementwise by NumPy in a fixed
order, plus math.fsum (a correctly rounded sum). The result is a function of the inputs
alone: no BLAS, no CPU dispatch, no thread count, no NumPy version behind it.

    dot(a, b, axis)   sum over `axis` of a * b (broadcast): compensated sum in index order
    matmul(a, b)      a {..., m, k} @ b {..., k, n}, each element a dot product as above
    sums(x, axis)     compensated sum over an axis; total(x): math.fsum of every element
    exp, expm1, log, log1p, log10, exp10, geomspace, softplus, silu
Accuracy: a compensated sum (TwoSum, Knuth) is as accurate as a float64 sum carried in
twice the precision, then rounded: within about 1 ulp of the exact sum of the (rounded)
terms unless they cancel to far below their magnitude. exp and exp10 are within about 0.52 ulp, log
and log1p within 1, expm1 within 2, log10 within 2.5 (checked against decimal by
`fpmath.py --self-test`).
"""
import decimal
import math
import sys

import numpy as np


# ---- sums --------------------------------------------------------------------------

def _compensated(a, b, shape):
    """sum_k a[k] * b[k] (b None: sum_k a[k]), each term of `shape`, in index order, with
    TwoSum: t = s + x; z = t - s; the rounding error (s - (t - z)) + (x - z) is summed
    apart and added at the end. In place, so that long sums allocate nothing per term."""
    s, c = np.zeros(shape), np.zeros(shape)
    t, z, w, x = (np.empty(shape) for _ in range(4))
    for k in range(a.shape[0]):
        if b is None:
            np.copyto(x, a[k])
        else:
            np.multiply(a[k], b[k], out=x)
        np.add(s, x, out=t)
        np.subtract(t, s, out=z)
        np.subtract(t, z, out=w)
        np.subtract(s, w, out=w)       # s - (t - z)
        np.subtract(x, z, out=z)       # x - z
        w += z
        c += w
        s, t = t, s
    return s + c


_BLOCK = 1 << 14  # output elements summed together: their buffers stay in the caches


def _blocked(a, b):
    """_compensated over blocks of the output (a, b: the summed axis first, broadcast)."""
    shape = a.shape[1:]
    size = math.prod(shape)
    if size <= _BLOCK or not shape:
        return _compensated(a, b, shape)
    axis = int(np.argmax(shape))                 # cut the longest output axis
    step = max(1, shape[axis] * _BLOCK // size)
    out = np.empty(shape)
    for lo in range(0, shape[axis], step):
        cut = (slice(None),) * (axis + 1) + (slice(lo, lo + step),)
        part = out[cut[1:]]
        part[...] = _blocked(a[cut], None if b is None else b[cut])
    return out


def sums(x, axis=-1, keepdims=False):
    """Compensated sum of x over one axis (index order)."""
    x = np.moveaxis(np.asarray(x, dtype=np.float64), axis, 0)
    out = _blocked(x, None)
    return np.expand_dims(out, axis) if keepdims else out


def dot(a, b, axis=-1, keepdims=False):
    """sum_k a[..k..] * b[..k..] over `axis` of the broadcast shape (index order, compensated).
    The products are rounded once each; only the sum is compensated."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    a, b = np.moveaxis(a, axis, 0), np.moveaxis(b, axis, 0)
    out = _blocked(a, b)
    return np.expand_dims(out, axis) if keepdims else out


def matmul(a, b):
    """a {..., m, k} @ b {..., k, n} (or b {k} for a matrix-vector product), BLAS-free."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if b.ndim == 1:
        return dot(a, b, axis=-1)
    if a.ndim == 1:
        return dot(a[:, None], b, axis=-2)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} do not chain")
    # a[..., :, k, None] * b[..., None, k, :] summed over k: k first, as views
    return dot(a[..., :, :, None], b[..., None, :, :], axis=-2)


def total(x):
    """The correctly rounded sum of every element of x (math.fsum)."""
    return math.fsum(np.asarray(x, dtype=np.float64).ravel().tolist())


def mean(x):
    x = np.asarray(x, dtype=np.float64)
    return total(x) / x.size


def norm(x, axis=-1, keepdims=False):
    """Euclidean norm over an axis."""
    return np.sqrt(dot(x, x, axis=axis, keepdims=keepdims))


# ---- exp and log from basic operations ----------------------------------------------

_ctx = decimal.Context(prec=40)


def _split(value):
    """A decimal value as hi + lo, two floats (hi the nearest float to it)."""
    hi = float(value)
    return hi, float(value - decimal.Decimal(hi))


_TABLE = 64  # exp(x) = 2^(k / 64) * exp(r), |r| <= ln 2 / 128
_T_HI, _T_LO = (np.array(v) for v in zip(*(
    _split(_ctx.power(decimal.Decimal(2), _ctx.divide(decimal.Decimal(i), _TABLE)))
    for i in range(_TABLE))))
_LN2 = _ctx.ln(decimal.Decimal(2))


def _short(value, bits):
    """value (a decimal) to a float with at most `bits` significant bits, and the rest:
    n * hi stays exact for integers n below 2^(53 - bits)."""
    exponent = math.frexp(float(value))[1]
    hi = math.ldexp(math.floor(math.ldexp(float(value), bits - exponent)), exponent - bits)
    return hi, float(_ctx.subtract(value, decimal.Decimal(hi)))


_LN2_HI, _LN2_LO = _short(_LN2, 42)                               # e * hi exact, |e| < 2^11
_STEP_HI, _STEP_LO = _short(_ctx.divide(_LN2, _TABLE), 32)        # k * hi exact, |k| < 2^21
_INV_STEP = float(_ctx.divide(_TABLE, _LN2))
_EXP_MAX, _EXP_MIN = 709.782712893384, -745.1332191019412


def _horner(x, coefficients):
    """sum_i c_i x^i, Horner's rule from the highest coefficient."""
    acc = np.full_like(x, coefficients[-1])
    for c in coefficients[-2::-1]:
        acc = acc * x + c
    return acc


_EXPM1_SMALL = [1.0 / math.factorial(i) for i in range(2, 8)]     # exp(r) - 1 - r, / r^2
_EXPM1_SERIES = [1.0 / math.factorial(i) for i in range(2, 17)]   # expm1(x) - x, / x^2


def exp(x, tail=0.0):
    """e^(x + tail), within about 0.52 ulp: x = (64 m + j) ln2 / 64 + r, e^x = 2^m 2^(j/64) e^r
    with the table entry as a float pair and e^r - 1 as a polynomial on |r| <= ln2 / 128.
    tail: a correction far below x's last bit (exp10 passes the low part of x ln 10)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        xc = np.clip(np.where(np.isnan(x), 0.0, x), _EXP_MIN - 1.0, _EXP_MAX + 1.0)
        k = np.rint(xc * _INV_STEP)
        r = ((xc - k * _STEP_HI) - k * _STEP_LO) + tail
        s = r + r * r * _horner(r, _EXPM1_SMALL)                 # e^r - 1
        j = np.mod(k, _TABLE).astype(np.int64)
        m = ((k - j) / _TABLE).astype(np.int64)
        hi, lo = _T_HI[j], _T_LO[j]
        body = hi + (hi * s + lo)
        # 2^m in two steps so that neither factor overflows or underflows on its own
        out = np.ldexp(np.ldexp(body, m // 2), m - m // 2)
    out = np.where(x > _EXP_MAX, np.inf, np.where(x < _EXP_MIN, 0.0, out))
    return np.where(np.isnan(x), np.nan, out)


def expm1(x):
    """e^x - 1 with relative accuracy near 0: a series for |x| < ln2 / 2, else exp(x) - 1."""
    x = np.asarray(x, dtype=np.float64)
    small = np.abs(x) < 0.5 * _LN2_HI
    xs = np.where(small, x, 0.0)
    series = xs + xs * xs * _horner(xs, _EXPM1_SERIES)
    return np.where(small, series, exp(np.where(small, 0.0, x)) - 1.0)


_LOG_SERIES = [2.0 / (2 * i + 1) for i in range(1, 13)]  # R(z) / z, z = s^2 (below)
_SQRT_HALF = math.sqrt(0.5)


def _log1p_core(f):
    """log(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1], f exact: with s = f / (2 + f),
    log(1 + f) = 2s + s R(s^2), R(z) = 2z/3 + 2z^2/5 + ..., written as
    f - (f^2/2 - s (f^2/2 + R)) so that f, exact, carries the leading bits."""
    s = f / (2.0 + f)
    z = s * s
    r = z * _horner(z, _LOG_SERIES)
    hfsq = 0.5 * f * f
    return f - (hfsq - s * (hfsq + r))


def _log_parts(y):
    """y > 0 finite as (e, f) with y = 2^e (1 + f), 1 + f in [sqrt(1/2), sqrt(2)), f exact."""
    m, e = np.frexp(y)                       # m in [0.5, 1)
    low = m < _SQRT_HALF
    m = np.where(low, 2.0 * m, m)
    e = np.where(low, e - 1, e).astype(np.float64)
    return e, m - 1.0                        # m - 1 exact (Sterbenz)


def log(x):
    """Natural log: x = 2^e (1 + f), log x = e ln2 + log(1 + f) (ln2 as a float pair)."""
    x = np.asarray(x, dtype=np.float64)
    bad = ~(x > 0) | ~np.isfinite(x)
    e, f = _log_parts(np.where(bad, 1.0, x))
    out = e * _LN2_HI + (_log1p_core(f) + e * _LN2_LO)
    with np.errstate(invalid="ignore"):
        special = np.where(x == 0, -np.inf, np.where(x == np.inf, np.inf, np.nan))
    return np.where(bad, special, out)


def log1p(x):
    """log(1 + x), x > -1, with relative accuracy near 0: directly the series for
    x in [sqrt(1/2) - 1, sqrt(2) - 1); else y = 1 + x rounded, log(y) plus the first-order
    correction (x - (y - 1)) / y for the rounding of y."""
    x = np.asarray(x, dtype=np.float64)
    near = (x >= _SQRT_HALF - 1.0) & (x < math.sqrt(2.0) - 1.0)
    bad = ~(x > -1.0) | ~np.isfinite(x)
    far = ~near & ~bad
    y = np.where(far, 1.0 + x, 2.0)
    c = np.where(far, (x - (y - 1.0)) / y, 0.0)
    e, f = _log_parts(y)
    wide = e * _LN2_HI + (_log1p_core(f) + (e * _LN2_LO + c))
    out = np.where(near, _log1p_core(np.where(near, x, 0.0)), wide)
    with np.errstate(invalid="ignore"):
        special = np.where(x == -1.0, -np.inf, np.where(x == np.inf, np.inf, np.nan))
    return np.where(bad, special, out)


_LN10 = _ctx.ln(decimal.Decimal(10))
_LN10_HI, _LN10_LO = _split(_LN10)


def _two_product(a, b):
    """a * b = p + e exactly, without FMA (Dekker: each factor split in 26-bit halves)."""
    def halves(v):
        c = 134217729.0 * v                    # 2^27 + 1
        hi = c - (c - v)
        return hi, v - hi
    p = a * b
    (ah, al), (bh, bl) = halves(a), halves(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def log10(x):
    """log x / ln 10 (within about 2 ulp)."""
    return log(x) / _LN10_HI


def exp10(x):
    """10^x = e^(x ln 10), x ln 10 carried as an exact product plus ln 10's low part."""
    x = np.asarray(x, dtype=np.float64)
    p, e = _two_product(x, _LN10_HI)
    return exp(p, tail=e + x * _LN10_LO)


def geomspace(start, stop, num):
    """numpy.geomspace(start, stop, num) for 0 < start, stop: 10^(lo + i (hi - lo) / (num - 1)),
    lo, hi = log10 of the ends, with both ends set to start and stop exactly."""
    lo, hi = float(log10(start)), float(log10(stop))
    if num == 1:
        return np.array([float(start)])
    out = exp10(np.arange(num) * ((hi - lo) / (num - 1)) + lo)
    out[0], out[-1] = start, stop
    return out


def softplus(u):
    """log(1 + e^u) = max(u, 0) + log1p(e^-|u|)."""
    u = np.asarray(u, dtype=np.float64)
    return np.maximum(u, 0.0) + log1p(exp(-np.abs(u)))


def silu(v):
    """v / (1 + e^-v)."""
    v = np.asarray(v, dtype=np.float64)
    return v / (1.0 + exp(-v))


# ---- self-test: accuracy against decimal, and independence of the order of sums ------

def _ulps(got, want):
    """|got - want| in units of the last place of want (a float)."""
    if want == 0.0:
        return 0.0 if got == 0.0 else math.inf
    return abs(decimal.Decimal(got) - want) / decimal.Decimal(math.ulp(float(want)))


def self_test(count=4000):
    rng = np.random.default_rng(2026)
    u = rng.uniform
    ex = lambda v: _ctx.exp(decimal.Decimal(v))                          # noqa: E731
    em1 = lambda v: _ctx.subtract(ex(v), 1)                              # noqa: E731
    ln = lambda v: _ctx.ln(decimal.Decimal(v))                           # noqa: E731
    ln1p = lambda v: _ctx.ln(_ctx.add(1, decimal.Decimal(v)))            # noqa: E731
    lg = lambda v: _ctx.divide(ln(v), _LN10)                             # noqa: E731
    e10 = lambda v: _ctx.exp(_ctx.multiply(decimal.Decimal(v), _LN10))   # noqa: E731
    checks = {  # name: (function, inputs, exact value, limit in ulp)
        "exp": (exp, u(-708.0, 709.0, count), ex, 0.53),
        "exp_small": (exp, u(-1.0, 1.0, count), ex, 0.53),
        "expm1": (expm1, u(-20.0, 5.0, count), em1, 2.0),
        "expm1_tiny": (expm1, u(-1e-3, 1e-3, count), em1, 2.0),
        "log": (log, np.exp2(u(-60.0, 60.0, count)), ln, 1.0),
        "log_near_1": (log, u(0.9, 1.1, count), ln, 1.0),
        "log1p": (log1p, u(-0.9, 3.0, count), ln1p, 1.0),
        "log1p_tiny": (log1p, u(-1e-9, 1e-9, count), ln1p, 1.0),
        "log10": (log10, np.exp2(u(-30.0, 30.0, count)), lg, 2.5),
        "exp10": (exp10, u(-30.0, 30.0, count), e10, 0.53),
    }
    failed = 0
    for name, (function, values, exact, limit) in checks.items():
        got = function(values)
        worst = max(_ulps(float(g), exact(float(v))) for g, v in zip(got, values))
        verdict = "ok" if worst <= limit else "FAIL"
        failed += verdict != "ok"
        print(f"{name:11s} max error {float(worst):.3f} ulp (limit {limit}) {verdict}")
    edge = exp(np.array([-np.inf, -800.0, 0.0, 800.0, np.nan]))
    if not (edge[0] == 0 and edge[1] == 0 and edge[2] == 1 and np.isinf(edge[3])
            and np.isnan(edge[4])):
        print(f"exp edges wrong: {edge}")
        failed += 1
    # sums: close to math.fsum on ill-conditioned rows, and exactly the same result for a
    # row and its copy in another layout
    x = rng.standard_normal((64, 1000)) * np.exp2(rng.integers(-30, 30, (64, 1000)))
    want = [math.fsum(row) for row in x.tolist()]
    got = sums(x, axis=1)
    worst = max(abs(g - w) / math.ulp(w) for g, w in zip(got.tolist(), want))
    same = np.array_equal(got, sums(np.asfortranarray(x), axis=1))
    print(f"sums        max error {worst:.3f} ulp of math.fsum (limit 1), same in any layout: {same}")
    failed += not (worst <= 1.0 and same)
    a, b = rng.standard_normal((5, 300)), rng.standard_normal((300, 7))
    want = [[math.fsum((a[i] * b[:, j]).tolist()) for j in range(7)] for i in range(5)]
    worst = float(np.max(np.abs(matmul(a, b) - np.array(want)) / matmul(np.abs(a), np.abs(b))))
    print(f"matmul      max error {worst:.2e} of |a| @ |b| (limit 1e-16)")
    failed += not worst <= 1e-16
    return failed


if __name__ == "__main__":
    if sys.argv[1:] != ["--self-test"]:
        sys.exit("usage: fpmath.py --self-test")
    sys.exit(1 if self_test() else 0)
