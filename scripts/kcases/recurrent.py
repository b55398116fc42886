"""NumPy references and cases for the recurrent-family kernels (harness/kcases_recurrent.c
runs them in C; the recipes there and here draw the same inputs in the same order).

Tolerances of recurrences (docs/kernels.md, the recurrent sections): the scale of an
output element is the same recurrence evaluated on absolute values (a bound on every term
that reached it), and rtol follows the square-root rule of the other kernels with the
chain length (L + N for a scan) plus a few ulps for the transcendental functions: the
roundings of the steps behind a state are independent and of both signs.
"""
import math

import numpy as np

import fpmath as fp
from build_kernel_contract import Result, round_to

UNIT = {"f64": 2.0 ** -53, "f32": 2.0 ** -24, "bf16": 2.0 ** -24}  # bf16: float32 sums
# BF16 dot products of the chunked linear attention (LM_LINEAR_BF16_RTOL): each product's
# operands rounded to bfloat16 (relative 2^-8 each: 8 significant bits) at most three times
# along any term of an
# output (phi(q), phi(k) and the weight; phi(q), the state operand and the state's own
# carry), 3 x 2^-8 of the absolute-value scale to first order, 2^-14 for the rest
# ((1 + 2^-8)^3 - 1 = 3 x 2^-8 + 3 x 2^-16 + 2^-24).
BF16_RTOL = 3.0 * 2.0 ** -8 + 2.0 ** -14


def _flags(case, *names):
    options = case.get("options", {})
    return [bool(options.get(name, False)) for name in names]


def ssm_mamba1_scan(case, rng):
    """Mamba-1 selective scan; recipe in harness/kcases_recurrent.c. Output y {B,L,D}
    then h_final {B,D,N}."""
    s, dtype = case["shape"], case["dtype"]
    B, L, D, N = s["batch"], s["length"], s["channels"], s["state"]
    exact, use_bias, use_skip, gate, use_h0, zero_modes, positive = _flags(
        case, "exact_zoh", "bias", "skip", "gate", "h0", "zero_modes", "positive_a")
    x = rng.standard_normal((B, L, D))
    dr = rng.standard_normal((B, L, D))
    bias = rng.uniform(-3.0, 0.0, D)
    a = rng.uniform(-8.0, -0.05, (D, N))
    b = rng.standard_normal((B, L, N))
    c = rng.standard_normal((B, L, N))
    skip = rng.standard_normal(D)
    z = rng.standard_normal((B, L, D))
    h0 = rng.standard_normal((B, D, N))
    if zero_modes:
        a[np.arange(D), np.arange(D) % N] = 0.0
    if positive:
        a[0, N - 1] = 0.5
    x, dr, bias, a, b, c, skip, z, h0 = (round_to(v, dtype) for v in
                                         (x, dr, bias, a, b, c, skip, z, h0))
    if not use_bias:
        bias = np.zeros(D)
    h = h0.copy() if use_h0 else np.zeros((B, D, N))
    habs = np.abs(h)
    y = np.empty((B, L, D))
    yscale = np.empty((B, L, D))
    safe_a = np.where(a == 0.0, 1.0, a)
    for t in range(L):
        delta = fp.softplus(dr[:, t, :] + bias)                       # {B, D}
        da = delta[:, :, None] * a[None, :, :]                      # {B, D, N}
        abar = fp.exp(da)
        if exact:
            factor = np.where(a == 0.0, delta[:, :, None], fp.expm1(da) / safe_a)
        else:
            factor = np.broadcast_to(delta[:, :, None], da.shape)
        u = factor * b[:, t, None, :] * x[:, t, :, None]
        h = abar * h + u
        habs = abar * habs + np.abs(u)
        yt = fp.dot(h, c[:, t, None, :])                           # {B, D}
        st = fp.dot(habs, np.abs(c[:, t, None, :]))
        if use_skip:
            yt = yt + skip * x[:, t, :]
            st = st + np.abs(skip * x[:, t, :])
        if gate:
            g = fp.silu(z[:, t, :])
            yt, st = yt * g, st * np.abs(g)
        y[:, t, :], yscale[:, t, :] = yt, st
    # Each output is also off by a few ulps of its own size (exp, softplus, gate): add |y|.
    output = np.concatenate([y.ravel(), h.ravel()])
    scale = np.concatenate([(yscale + np.abs(y)).ravel(), (habs + np.abs(h)).ravel()])
    # terms: the L steps of the recurrence plus the N-term readout. rtol: the default
    # probabilistic rule 4 sqrt(terms) u plus 8 u for the transcendental functions (SLEEF's
    # 1-ulp exp/expm1/log1p, softplus as two of them, the gate as a third).
    terms = L + N
    u = UNIT[dtype]
    return Result(output=output, scale=scale, terms=terms,
                  rtol=4.0 * math.sqrt(terms) * u + 8.0 * u, atol=1e-30)


def conv_causal(case, rng):
    """Causal depthwise conv with tail; output y {B,L,D} then tail_out {B,K-1,D}."""
    s, dtype = case["shape"], case["dtype"]
    B, L, D, K = s["batch"], s["length"], s["channels"], s["width"]
    use_bias, use_tail, silu = _flags(case, "bias", "tail", "silu")
    x = round_to(rng.standard_normal((B, L, D)), dtype)
    w = round_to(rng.standard_normal((D, K)), dtype)
    bias = round_to(rng.standard_normal(D), dtype)
    tail = round_to(rng.standard_normal((B, K - 1, D)), dtype)
    if not use_bias:
        bias = np.zeros(D)
    if not use_tail:
        tail = np.zeros((B, K - 1, D))
    xx = np.concatenate([tail, x], axis=1)                          # {B, K-1+L, D}
    y = np.broadcast_to(bias, (B, L, D)).copy()
    scale = np.broadcast_to(np.abs(bias), (B, L, D)).copy()
    for k in range(K):
        term = w[:, k] * xx[:, k:k + L, :]
        y += term
        scale += np.abs(term)
    if silu:
        # silu' is within [-0.1, 1.1]: the sum's error passes through scaled by <= 1.1;
        # the exp and the division add a few ulps of |silu(y)|.
        out = fp.silu(y)
        scale = 1.1 * scale + np.abs(out)
        y = out
    tail_out = xx[:, L:, :]
    output = np.concatenate([y.ravel(), tail_out.ravel()])
    full_scale = np.concatenate([scale.ravel(), np.abs(tail_out).ravel()])
    return Result(output=output, scale=full_scale, terms=K + 1)


def scan_affine(case, rng):
    """h_t = a_t h_{t-1} + b_t; recipe in harness/kcases_recurrent.c; output states {T, W}.
    Scale: the same scan on |b| and |h0| (a > 0). terms T: the default sqrt rule."""
    s, dtype = case["shape"], case["dtype"]
    T, W = s["steps"], s["width"]
    use_h0 = bool(case.get("options", {}).get("h0", False))
    a = round_to(rng.uniform(0.7, 0.999, (T, W)), dtype)
    b = round_to(rng.standard_normal((T, W)), dtype)
    h0 = round_to(rng.standard_normal(W), dtype)
    h = h0.copy() if use_h0 else np.zeros(W)
    habs = np.abs(h)
    out = np.empty((T, W))
    scale = np.empty((T, W))
    for t in range(T):
        h = a[t] * h + b[t]
        habs = a[t] * habs + np.abs(b[t])
        out[t], scale[t] = h, habs
    return Result(output=out, scale=scale, terms=T)


def _phi(x, feature):
    return x if feature == "identity" else np.where(x > 0.0, x + 1.0, fp.exp(np.minimum(x, 0.0)))


def linear_attention(case, rng):
    """Multi-head linear attention; recipe in harness/kcases_recurrent.c. Output y, then
    s_final, then z_final. Scale: the recurrence on absolute values (|phi(q)|, |phi(k)|, |v|,
    |s0|); for the normalized form scale_y = scale_num / den + |y| (den's own scale is den:
    the elu+1 feature is positive). rtol = (4 sqrt(L + dk) + 8 + G) u, G the largest
    cumulative |log gate| of a head and channel (the chunked form's gate products).
    dtype bf16 (chunked form, slot linear_chunked_bf16): q, k, v rounded to bfloat16 (the
    reference reads the rounded values), the rest to float32; rtol adds BF16_RTOL, the
    bound of the BF16 dot products (kernels/linear/avx512bf16.c, docs/kernels.md)."""
    s, dtype = case["shape"], case["dtype"]
    H, L, dk, dv = s["heads"], s["length"], s["d_key"], s["d_value"]
    o = case.get("options", {})
    feature, gate_kind = o.get("feature", "identity"), o.get("gate", "none")
    normalize, use_s0 = bool(o.get("normalize", False)), bool(o.get("s0", False))
    r = 1.0 / math.sqrt(dk)
    rest = "f32" if dtype == "bf16" else dtype  # gates and states stay float32
    q = round_to(rng.standard_normal((H, L, dk)) * r, dtype)
    k = round_to(rng.standard_normal((H, L, dk)) * r, dtype)
    v = round_to(rng.standard_normal((H, L, dv)), dtype)
    g = round_to(rng.uniform(0.8, 1.0, (H, L, dk) if gate_kind == "channel" else (H, L)),
                 rest)
    s0 = round_to(rng.standard_normal((H, dk, dv)) * 0.5, rest)
    z0 = round_to(rng.uniform(0.5, 2.0, (H, dk)), rest)
    if gate_kind == "none":
        a = np.ones((H, L, dk))
    elif gate_kind == "scalar":
        a = np.broadcast_to(g[:, :, None], (H, L, dk))
    else:
        a = g
    fq, fk = _phi(q, feature), _phi(k, feature)
    S = s0.copy() if use_s0 else np.zeros((H, dk, dv))
    z = z0.copy() if use_s0 else np.zeros((H, dk))
    Sa, za = np.abs(S), np.abs(z)
    y = np.empty((H, L, dv))
    ys = np.empty((H, L, dv))
    for t in range(L):
        at = a[:, t, :]
        S = at[:, :, None] * S + fk[:, t, :, None] * v[:, t, None, :]
        Sa = at[:, :, None] * Sa + np.abs(fk[:, t, :, None] * v[:, t, None, :])
        z = at * z + fk[:, t, :]
        za = at * za + np.abs(fk[:, t, :])
        num = fp.dot(S, fq[:, t, :, None], axis=1)                 # {H, dv}
        nums = fp.dot(Sa, np.abs(fq[:, t, :, None]), axis=1)
        if normalize:
            den = fp.dot(z, fq[:, t, :])[:, None]
            y[:, t, :] = num / den
            ys[:, t, :] = nums / den + np.abs(num / den)
        else:
            y[:, t, :], ys[:, t, :] = num, nums
    G = 0.0 if gate_kind == "none" else float(np.max(fp.sums(-fp.log(a), axis=1)))
    u = UNIT[dtype]
    output = np.concatenate([y.ravel(), S.ravel(), z.ravel()])
    scale = np.concatenate([ys.ravel(), Sa.ravel(), za.ravel()])
    extra = BF16_RTOL if dtype == "bf16" else 0.0
    return Result(output=output, scale=scale, terms=L + dk,
                  rtol=(4.0 * math.sqrt(L + dk) + 8.0 + G) * u + extra, atol=1e-30)


def ssm_ssd(case, rng):
    """Mamba-2 SSD; recipe in harness/kcases_recurrent.c. Output y {B,L,H,P} then h_final
    {B,H,P,N}. Scale: the recurrence on absolute values. rtol = (4 sqrt(L + N) + 8 + G) u,
    G the largest sum over the sequence of |delta A| of a head (the exponents' rounding)."""
    s, dtype = case["shape"], case["dtype"]
    B, L, H, P, G, N = (s[k] for k in ("batch", "length", "heads", "head_dim", "groups",
                                       "state"))
    o = case.get("options", {})
    extras, positive = bool(o.get("extras", False)), bool(o.get("positive_a", False))
    r = 1.0 / math.sqrt(N)
    x = rng.standard_normal((B, L, H, P))
    dt = rng.standard_normal((B, L, H))
    bias = rng.uniform(-4.0, -1.0, H)
    a = rng.uniform(-8.0, 0.0, H)
    b = rng.standard_normal((B, L, G, N)) * r
    c = rng.standard_normal((B, L, G, N)) * r
    skip = rng.standard_normal(H)
    h0 = rng.standard_normal((B, H, P, N))
    a[0] = 0.0
    if positive:
        a[H - 1] = 0.5
    # bf16: x, b and c in bfloat16 (float32 first), the rest float32 (harness/kcases_recurrent.c)
    small = "f32" if dtype == "bf16" else dtype
    x, b, c = (round_to(v, dtype) for v in (x, b, c))
    dt, bias, a, skip, h0 = (round_to(v, small) for v in (dt, bias, a, skip, h0))
    if not extras:
        bias, skip, h0 = np.zeros(H), np.zeros(H), np.zeros((B, H, P, N))
    group = np.arange(H) // (H // G)
    S, Sa = h0.copy(), np.abs(h0)
    y, ys = np.empty((B, L, H, P)), np.empty((B, L, H, P))
    logsum = np.zeros((B, H))
    for t in range(L):
        delta = fp.softplus(dt[:, t, :] + bias)                        # {B, H}
        abar = fp.exp(delta * a)
        logsum += np.abs(delta * a)
        bt, ct = b[:, t, group, :], c[:, t, group, :]                # {B, H, N}
        u = (delta[:, :, None] * x[:, t, :, :])[:, :, :, None] * bt[:, :, None, :]
        S = abar[:, :, None, None] * S + u
        Sa = abar[:, :, None, None] * Sa + np.abs(u)
        y[:, t] = fp.dot(S, ct[:, :, None, :]) + skip[:, None] * x[:, t]
        ys[:, t] = fp.dot(Sa, np.abs(ct[:, :, None, :])) + np.abs(skip[:, None] * x[:, t])
    # Each abar (or segment product exp(sum delta A)) is exp of a rounded argument: its
    # relative error is u |argument|, and along a state's history these add up to at most
    # u * sum_t |delta_t A| (logsum), whatever the chunking.
    Gmax = float(np.max(logsum))
    u = UNIT[small]
    output = np.concatenate([y.ravel(), S.ravel()])
    scale = np.concatenate([(ys + np.abs(y)).ravel(), (Sa + np.abs(S)).ravel()])
    rtol = (4.0 * math.sqrt(L + N) + 8.0 + Gmax) * u
    if dtype == "bf16":
        # The avx512bf16 kernel rounds the float32 operands of its products to bfloat16
        # (relative 2^-8 each: 8 significant bits): the state S and the weighted inputs w x
        # once, the scores
        # C . B and w x together in the intra-chunk product; the state stays float32, so
        # each term of y and S is off by at most (2^-7 + 2^-16) of its magnitude, and 2^-15
        # covers the products of those errors (docs/kernels.md, Chunked SSD in bf16).
        rtol += 2.0 ** -7 + 2.0 ** -15
    return Result(output=output, scale=scale, terms=L + N, rtol=rtol, atol=1e-30)


def delta_rule(case, rng):
    """(Gated) delta rule with unit keys; recipe in harness/kcases_recurrent.c. Output y
    {H,L,dv} then s_final {H,dv,dk}. The update contracts (|I - beta k k^T| <= 1), so errors
    do not grow through it; scale: |S| and |y| bounds from the recurrence on absolute values
    of the additive parts, S_abs = g S_abs + beta (|v| + g S_abs |k^|) |k^|^T, plus the
    values themselves. rtol = (4 sqrt(L + dk) + 8 + G) u, G = the largest sum of |log g|.
    dtype bf16: q, k and v rounded to bfloat16 (the keys before their normalization, as the
    kernel reads them), beta, gate and s0 to float32; the chunked form's rtol adds
    bf16_delta_rtol (the BF16 dot products of the state, docs/kernels.md)."""
    s, dtype = case["shape"], case["dtype"]
    H, L, dk, dv = s["heads"], s["length"], s["d_key"], s["d_value"]
    o = case.get("options", {})
    gated, use_s0, zero_key = (bool(o.get(n, False)) for n in ("gated", "s0", "zero_key"))
    small = "f32" if dtype == "bf16" else dtype  # the type of beta, gate and s0
    r = 1.0 / math.sqrt(dk)
    q = round_to(rng.standard_normal((H, L, dk)) * r, dtype)
    k = rng.standard_normal((H, L, dk))
    v = round_to(rng.standard_normal((H, L, dv)), dtype)
    beta = rng.uniform(0.0, 1.0, (H, L))
    g = round_to(rng.uniform(0.7, 1.0, (H, L)), small)
    s0 = round_to(rng.standard_normal((H, dv, dk)) * 0.5, small)
    beta[0, 0] = 1.0
    k, beta = round_to(k, dtype), round_to(beta, small)
    if zero_key:
        k[0, L - 1, :] = 0.0
    if not gated:
        g = np.ones((H, L))
    S = s0.copy() if use_s0 else np.zeros((H, dv, dk))
    Sa = np.abs(S)
    y, ys = np.empty((H, L, dv)), np.empty((H, L, dv))
    for t in range(L):
        kt = k[:, t, :]
        top = np.max(np.abs(kt), axis=1, keepdims=True)
        kh = kt / top
        kh = kh / fp.norm(kh, axis=1, keepdims=True)
        gt, bt = g[:, t, None, None], beta[:, t, None]
        base = gt * S
        pred = fp.dot(base, kh[:, None, :])                         # {H, dv}
        S = base + (bt * (v[:, t, :] - pred))[:, :, None] * kh[:, None, :]
        pa = fp.dot(gt * Sa, np.abs(kh[:, None, :]))
        Sa = gt * Sa + (bt * (np.abs(v[:, t, :]) + pa))[:, :, None] * np.abs(kh)[:, None, :]
        y[:, t, :] = fp.dot(S, q[:, t, None, :])
        ys[:, t, :] = fp.dot(Sa, np.abs(q[:, t, None, :]))
    G = float(np.max(fp.sums(-fp.log(g), axis=1)))
    u = UNIT[dtype]
    output = np.concatenate([y.ravel(), S.ravel()])
    scale = np.concatenate([(ys + np.abs(y)).ravel(), (Sa + np.abs(S)).ravel()])
    rtol = (4.0 * math.sqrt(L + dk) + 8.0 + G) * u
    if dtype == "bf16" and "chunk" in o:
        rtol += bf16_delta_rtol(L, int(o["chunk"]))
    return Result(output=output, scale=scale, terms=L + dk, rtol=rtol, atol=1e-30)


def bf16_delta_rtol(L, chunk):
    """The bf16 chunked delta rule's error above the float32 rule, relative to the scale
    (derivation: docs/kernels.md, "bf16" of the delta rule; kernels/delta/delta_bf16.h).
    With b = 2^-8 the relative error of one rounding to bfloat16 (8 significant bits), a
    chunk adds at most 3 b Sa to the state: b for the chunk run from S_0 rounded (its
    products K S_0 and Q S_0), b for the carried gamma S_0 that is not rounded, b for the
    scaled corrections rounded in K^T U. An error E already in the state moves with the
    homogeneous part of the absolute-value recurrence Sa, so |E| <= e Sa stays so later:
    the chunks' shares add, e = 3 b n_chunks; (1 + e) covers rounding a state that already
    carries e."""
    n_chunks = -(-L // min(chunk, L))
    e = 3.0 * 2.0 ** -8 * n_chunks
    return e * (1.0 + e)


REFERENCES = {"ssm_mamba1_scan": ssm_mamba1_scan, "conv_causal": conv_causal,
              "scan_affine": scan_affine, "linear_attention": linear_attention,
              "ssm_ssd": ssm_ssd, "delta_rule": delta_rule}


def _mamba1(B, L, D, N, seed, dtype="f32", tag="", **options):
    extra = {k: options.pop(k) for k in ("expect_status", "mention") if k in options}
    mode = "zoh" if options.get("exact_zoh") else "euler"  # sweep --disc zoh | euler
    return dict(id=f"ssm_mamba1_scan.{dtype}.{mode}.b{B}_l{L}_d{D}_n{N}{tag}",
                kernel="ssm_mamba1_scan", dtype=dtype, seed=seed,
                shape={"batch": B, "length": L, "channels": D, "state": N},
                options=options, **extra)


def _conv(B, L, D, K, seed, dtype="f32", tag="", **options):
    extra = {k: options.pop(k) for k in ("expect_status", "mention") if k in options}
    return dict(id=f"conv_causal.{dtype}.b{B}_l{L}_d{D}_k{K}{tag}", kernel="conv_causal",
                dtype=dtype, seed=seed, shape={"batch": B, "length": L, "channels": D,
                                               "width": K}, options=options, **extra)


def _scan(T, W, seed, dtype="f32", tag="", **options):
    extra = {k: options.pop(k) for k in ("expect_status", "mention") if k in options}
    split = f".c{options['chunk']}_p{options.get('parts', 1)}" if "chunk" in options else ".seq"
    return dict(id=f"scan_affine.{dtype}.t{T}_w{W}{split}{tag}", kernel="scan_affine",
                dtype=dtype, seed=seed, shape={"steps": T, "width": W}, options=options,
                **extra)


def _linear(H, L, dk, dv, seed, dtype="f32", tag="", **options):
    extra = {k: options.pop(k) for k in ("expect_status", "mention") if k in options}
    form = ("norm" if options.get("normalize") else "add") + "." + options.get("gate", "none")
    split = f".c{options['chunk']}" if "chunk" in options else ".rec"
    return dict(id=f"linear_attention.{dtype}.{form}.h{H}_l{L}_k{dk}_v{dv}{split}{tag}",
                kernel="linear_attention", dtype=dtype, seed=seed,
                shape={"heads": H, "length": L, "d_key": dk, "d_value": dv}, options=options,
                **extra)


def _ssd(B, L, H, P, G, N, seed, dtype="f32", tag="", **options):
    extra = {k: options.pop(k) for k in ("expect_status", "mention") if k in options}
    split = (".decode" if options.get("decode") else
             f".c{options['chunk']}" if "chunk" in options else ".rec")
    return dict(id=f"ssm_ssd.{dtype}.b{B}_l{L}_h{H}_p{P}_g{G}_n{N}{split}{tag}",
                kernel="ssm_ssd", dtype=dtype, seed=seed,
                shape={"batch": B, "length": L, "heads": H, "head_dim": P, "groups": G,
                       "state": N}, options=options, **extra)


def _delta(H, L, dk, dv, seed, dtype="f32", tag="", **options):
    extra = {k: options.pop(k) for k in ("expect_status", "mention") if k in options}
    form = "gated" if options.get("gated") else "plain"
    split = f".c{options['chunk']}" if "chunk" in options else ".rec"
    return dict(id=f"delta_rule.{dtype}.{form}.h{H}_l{L}_k{dk}_v{dv}{split}{tag}",
                kernel="delta_rule", dtype=dtype, seed=seed,
                shape={"heads": H, "length": L, "d_key": dk, "d_value": dv}, options=options,
                **extra)


ALL = dict(bias=True, skip=True, gate=True, h0=True)
NORM = dict(feature="elu1", normalize=True)

CASES = [
    # Mamba-1: both discretizations, odd lengths, D not a multiple of 4/8/16, a = 0 modes.
    _mamba1(1, 1, 16, 16, 31001),
    _mamba1(1, 1, 16, 16, 31002, exact_zoh=True),
    # one token (the decode path): a = 0 modes, both discretizations, N not a multiple of W
    _mamba1(2, 1, 37, 16, 31016, tag=".zero", exact_zoh=True, zero_modes=True, **ALL),
    _mamba1(2, 1, 37, 21, 31017, tag=".zero", zero_modes=True, **ALL),
    _mamba1(1, 1, 40, 5, 31018, tag=".zero", exact_zoh=True, zero_modes=True, h0=True),
    _mamba1(2, 37, 37, 16, 31003, **ALL),
    _mamba1(2, 37, 37, 16, 31004, exact_zoh=True, **ALL),
    _mamba1(1, 53, 21, 5, 31005, tag=".zero", exact_zoh=True, zero_modes=True, bias=True),
    _mamba1(1, 53, 21, 5, 31006, tag=".zero", zero_modes=True, h0=True),
    _mamba1(3, 9, 40, 1, 31007, exact_zoh=True, gate=True, h0=True),
    _mamba1(1, 129, 48, 16, 31008, tag=".zero", exact_zoh=True, zero_modes=True, **ALL),
    _mamba1(1, 257, 33, 16, 31009, **ALL),
    _mamba1(1, 17, 19, 33, 31010, exact_zoh=True, skip=True, h0=True),
    _mamba1(2, 23, 24, 16, 31011, dtype="f64", exact_zoh=True, zero_modes=True, **ALL),
    _mamba1(1, 11, 7, 3, 31012, dtype="f64", **ALL),
    # bad input: a positive mode is rejected by the oracle and by every fast path
    _mamba1(1, 4, 8, 4, 31013, tag=".positive_a", positive_a=True,
            expect_status="domain", mention="a must be non-positive"),
    _mamba1(1, 4, 8, 4, 31014, dtype="f64", tag=".positive_a", exact_zoh=True,
            positive_a=True, expect_status="domain", mention="a must be non-positive"),
    _mamba1(1, 2, 3, 257, 31015, tag=".state_too_large", expect_status="shape",
            mention="state must be at most"),
    # causal conv: width 4 (Mamba), other widths, L shorter than the tail, D odd
    _conv(1, 1, 16, 4, 32001, bias=True, tail=True, silu=True),
    _conv(2, 2, 37, 4, 32002, bias=True, tail=True),
    _conv(2, 19, 37, 4, 32003, bias=True, tail=True, silu=True),
    _conv(1, 33, 40, 4, 32004, silu=True),
    _conv(3, 11, 21, 3, 32005, tail=True),
    _conv(1, 5, 9, 1, 32006, bias=True, silu=True),
    _conv(1, 64, 48, 8, 32007, bias=True, tail=True, silu=True),
    _conv(2, 13, 19, 4, 32008, dtype="f64", bias=True, tail=True, silu=True),
    _conv(1, 3, 5, 9, 32009, tag=".too_wide", expect_status="shape", mention="width"),
    # affine scan: sequential and three-phase chunked, any length and width, chunk 1,
    # chunk > T, uneven last chunk, more parts than cores
    _scan(1, 1, 33001),
    _scan(53, 6, 33002, h0=True),
    _scan(53, 6, 33003, chunk=16, parts=2, h0=True),
    _scan(53, 6, 33004, chunk=1, parts=2, h0=True),
    _scan(64, 16, 33005, chunk=7, parts=3),
    _scan(257, 17, 33006, chunk=40, parts=2, h0=True),
    _scan(100, 37, 33007, chunk=500, parts=2, h0=True),
    _scan(300, 128, 33008, chunk=64, parts=2, h0=True),
    _scan(1000, 3, 33009, h0=True),
    _scan(53, 6, 33010, dtype="f64", chunk=16, h0=True),
    _scan(41, 5, 33011, dtype="f64", h0=True),
    _scan(10, 4, 33012, chunk=0, parts=2, expect_status="argument", mention="chunk"),
    _scan(10, 4, 33013, dtype="f64", chunk=0, expect_status="argument", mention="chunk"),
    # linear attention: M8's additive form (the notebook's shape), the lesson's normalized
    # elu+1 form, scalar and per-channel decay; recurrent and chunked (chunk 1, uneven,
    # chunk > L), carried initial state
    _linear(1, 50, 8, 6, 34001),
    _linear(1, 50, 8, 6, 34002, chunk=16),
    _linear(1, 50, 8, 6, 34003, chunk=1),
    _linear(1, 50, 8, 6, 34004, chunk=64),
    _linear(2, 37, 16, 33, 34005, s0=True, chunk=7, **NORM),
    _linear(2, 37, 16, 33, 34006, s0=True, **NORM),
    _linear(3, 29, 9, 64, 34007, gate="scalar", s0=True, feature="elu1"),
    _linear(3, 29, 9, 64, 34008, gate="scalar", s0=True, feature="elu1", chunk=8),
    _linear(2, 41, 17, 20, 34009, gate="channel", s0=True, chunk=16, **NORM),
    _linear(2, 41, 17, 20, 34010, gate="channel", s0=True, **NORM),
    _linear(1, 64, 32, 32, 34011, gate="channel", chunk=100),
    _linear(2, 100, 64, 64, 34012, gate="scalar", s0=True, chunk=32),
    _linear(2, 23, 5, 4, 34013, dtype="f64", gate="channel", s0=True, **NORM),
    _linear(1, 8, 4, 4, 34014, gate="scalar", gate_value=1.5, chunk=4, tag=".gate_above_one",
            expect_status="domain", mention="gate must lie in (0, 1]"),
    _linear(1, 8, 4, 4, 34015, chunk=0, tag=".chunk0", expect_status="argument",
            mention="chunk must be positive"),
    _linear(1, 8, 4, 4, 34016, dtype="f64", normalize=True, tag=".identity_normalized",
            expect_status="argument", mention="normalize needs feature elu1"),
    # bf16 q, k, v (slot linear_chunked_bf16: BF16 dot products on avx512bf16, widened to
    # float32 elsewhere): the lesson's normalized form, additive with and without a scalar
    # gate, a partial last chunk; then the shapes that widen on avx512bf16 too (odd d_key,
    # d_value not a multiple of 16, a channel gate), a NaN in k, and the recurrent form
    # (bf16 is chunked only)
    _linear(2, 77, 64, 64, 34101, dtype="bf16", s0=True, chunk=32, **NORM),
    _linear(2, 70, 32, 48, 34102, dtype="bf16", gate="scalar", s0=True, chunk=16),
    _linear(1, 100, 128, 128, 34103, dtype="bf16", chunk=64),
    _linear(1, 45, 16, 32, 34104, dtype="bf16", gate="scalar", feature="elu1", chunk=7),
    _linear(1, 37, 17, 32, 34105, dtype="bf16", s0=True, chunk=16),
    _linear(1, 30, 16, 20, 34106, dtype="bf16", gate="scalar", s0=True, chunk=8, **NORM),
    _linear(2, 33, 16, 16, 34107, dtype="bf16", gate="channel", s0=True, chunk=16, **NORM),
    _linear(1, 8, 4, 4, 34108, dtype="bf16", chunk=4, poison="k", tag=".nan_k",
            expect_status="non-finite", mention="k"),
    _linear(1, 8, 4, 4, 34109, dtype="bf16", tag=".recurrent", expect_status="argument",
            mention="chunked only"),
    # Mamba-2 SSD: N = 64 and 128 (and odd), groups shared by heads, recurrent, chunked
    # (1, uneven, > L) and decode, a = 0 head
    _ssd(1, 37, 2, 8, 1, 64, 35001, extras=True),
    _ssd(1, 37, 2, 8, 1, 64, 35002, extras=True, chunk=16),
    _ssd(1, 37, 2, 8, 1, 64, 35003, extras=True, chunk=1),
    _ssd(1, 37, 2, 8, 1, 64, 35004, extras=True, decode=True),
    _ssd(2, 19, 4, 5, 2, 128, 35005, chunk=7),
    _ssd(1, 50, 2, 16, 2, 128, 35006, extras=True, chunk=64),
    _ssd(1, 50, 2, 16, 2, 128, 35007, extras=True, chunk=100),
    _ssd(2, 9, 3, 3, 3, 7, 35008, extras=True, chunk=4),
    _ssd(1, 13, 2, 4, 1, 16, 35009, dtype="f64", extras=True),
    # bf16 x, b, c (BF16 dot products on avx512bf16 where P % 16 == 0 and N is even,
    # widened to float32 elsewhere); the recurrent form and the decode step refuse them
    _ssd(1, 130, 2, 64, 1, 128, 35020, dtype="bf16", extras=True, chunk=64),
    _ssd(2, 50, 3, 16, 1, 16, 35021, dtype="bf16", extras=True, chunk=7),
    _ssd(1, 60, 4, 32, 2, 10, 35022, dtype="bf16", chunk=16),
    _ssd(1, 37, 2, 8, 1, 64, 35023, dtype="bf16", extras=True, chunk=16),
    _ssd(1, 20, 2, 16, 1, 7, 35024, dtype="bf16", extras=True, chunk=8),
    _ssd(1, 4, 2, 2, 1, 4, 35025, dtype="bf16", expect_status="argument",
         mention="chunked form"),
    _ssd(1, 4, 2, 2, 1, 4, 35026, dtype="bf16", extras=True, decode=True,
         expect_status="argument", mention="chunked form"),
    _ssd(1, 4, 2, 2, 1, 4, 35010, tag=".positive_a", positive_a=True, chunk=2,
         expect_status="domain", mention="a must be non-positive"),
    _ssd(1, 4, 2, 2, 1, 4, 35011, dtype="f64", tag=".positive_a", positive_a=True,
         expect_status="domain", mention="a must be non-positive"),
    _ssd(1, 4, 3, 2, 2, 4, 35012, tag=".groups", chunk=2, expect_status="shape",
         mention="multiple of groups"),
    _ssd(1, 4, 2, 2, 1, 4, 35013, tag=".chunk0", chunk=0, expect_status="argument",
         mention="chunk must be positive"),
    # delta rule and gated delta rule: recurrent and chunked WY (1, uneven, > L)
    _delta(1, 37, 8, 6, 36001),
    _delta(1, 37, 8, 6, 36002, chunk=16),
    _delta(2, 41, 16, 33, 36003, gated=True, s0=True),
    _delta(2, 41, 16, 33, 36004, gated=True, s0=True, chunk=1),
    _delta(2, 41, 16, 33, 36005, gated=True, s0=True, chunk=7),
    _delta(3, 29, 9, 64, 36006, gated=True, chunk=64),
    _delta(1, 70, 32, 32, 36007, s0=True, chunk=32),
    _delta(2, 23, 5, 4, 36008, dtype="f64", gated=True, s0=True),
    _delta(1, 6, 4, 3, 36009, tag=".zero_key", zero_key=True, chunk=4,
           expect_status="domain", mention="k must have non-zero"),
    _delta(1, 6, 4, 3, 36010, dtype="f64", tag=".zero_key", zero_key=True,
           expect_status="domain", mention="k must have non-zero"),
    _delta(1, 6, 4, 3, 36011, tag=".chunk0", chunk=0, expect_status="argument",
           mention="chunk must be positive"),
    # bf16 q, k, v (chunked only): BF16 dot products on avx512bf16 where d_key and d_value
    # are multiples of 16, the float32 products on widened inputs elsewhere
    _delta(2, 41, 16, 32, 36020, dtype="bf16", gated=True, s0=True, chunk=16),
    _delta(2, 70, 32, 48, 36021, dtype="bf16", chunk=7),
    _delta(1, 100, 64, 64, 36022, dtype="bf16", gated=True, s0=True, chunk=32),
    _delta(2, 41, 16, 33, 36023, dtype="bf16", gated=True, s0=True, chunk=7),  # dv: fallback
    _delta(3, 29, 9, 64, 36024, dtype="bf16", gated=True, chunk=64),  # odd dk: fallback
    _delta(1, 6, 16, 16, 36025, dtype="bf16", tag=".nan_key", nan_key=True, chunk=4,
           expect_status="domain", mention="k must have non-zero (finite) norm"),
    _delta(1, 6, 16, 16, 36026, dtype="bf16", tag=".recurrent", expect_status="argument",
           mention="needs the chunked form"),
]
