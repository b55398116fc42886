"""NumPy references and cases for the attention-family kernels (harness/kcases_attention.c
runs them in C; the recipes there and here draw the same inputs in the same order).

Tolerance (docs/kernels.md, "Attention: tolerances"): an output o[i, c] = sum_j p_ij v[j, c]
is scaled by sum_j p_ij |v[j, c]| times (1 + 2 max_j A_ij), where A_ij = sum_c |q_ic k_jc| /
sqrt(d) bounds the score s_ij's own terms: a float32 score error of about sqrt(d) u A_ij
moves a weight by that much relatively, twice (the weight and the normaliser). The chain
length is max(d, keys), so the dtype rule rtol = 4 sqrt(terms) u + 2 u applies unchanged.
"""
import numpy as np

import fpmath as fp
from build_kernel_contract import SAFETY, UNIT_ROUNDOFF, Result, round_to

MASKS = ("causal", "window", "window_global", "strided")


def mask_matrix(n, options):
    """Boolean {n, n}: True where query i may read key j (kernels/attention/attention.h)."""
    kind = options.get("mask", "causal")
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    back = i - j
    causal = back >= 0
    if kind == "causal":
        return causal
    if kind == "window":
        return causal & (back < options["window"])
    if kind == "window_global":
        g = options.get("n_global", 0)
        return causal & ((back < options["window"]) | (j < g) | (i < g))
    if kind == "strided":
        s = options["stride"]
        return causal & ((back < s) | (back % s == 0))
    raise ValueError(f"unknown mask {kind}")


def _attend(q, k, v, allowed):
    """q {m, d}, k, v {keys, d}, allowed {m, keys}: output and element scales."""
    d = q.shape[1]
    s = fp.matmul(q, k.T) / np.sqrt(d)
    a = fp.matmul(np.abs(q), np.abs(k).T) / np.sqrt(d)
    s = np.where(allowed, s, -np.inf)
    top = s.max(axis=1, keepdims=True)
    p = np.where(allowed, fp.exp(s - top), 0.0)
    p /= fp.sums(p, axis=1, keepdims=True)
    out = fp.matmul(p, v)
    amax = np.where(allowed, a, 0.0).max(axis=1, keepdims=True)
    scale = fp.matmul(p, np.abs(v)) * (1.0 + 2.0 * amax)
    return out, scale


def _round_storage(x, dtype):
    """As harness/kcases_attention.c stores the cache: float32 first, then f16 / bf16."""
    x32 = round_to(x, "f32")
    return x32 if dtype == "f32" else round_to(x32, dtype)


def attention_prefill(case, rng):
    s, dtype, options = case["shape"], case["dtype"], case.get("options", {})
    n, heads, kv_heads, d = s["n"], s["heads"], s["kv_heads"], s["head_dim"]
    q = round_to(rng.standard_normal((n, heads, d)), dtype)
    k = round_to(rng.standard_normal((n, kv_heads, d)), dtype)
    v = round_to(rng.standard_normal((n, kv_heads, d)), dtype)
    allowed = mask_matrix(n, options)
    group = heads // kv_heads
    out = np.empty((n, heads, d))
    scale = np.empty((n, heads, d))
    for h in range(heads):
        g = h // group
        out[:, h, :], scale[:, h, :] = _attend(q[:, h, :], k[:, g, :], v[:, g, :], allowed)
    keys = int(np.count_nonzero(allowed, axis=1).max())
    terms = max(d, keys)
    rtol = None
    if dtype == "bf16":
        # The avx512bf16 path rounds each softmax weight to bfloat16 before P V (relative
        # error <= 2^-8, the row sum kept from the unrounded weights): at most 2^-8 p|v|,
        # inside 2^-8 scale, on top of the float32 rule (docs/kernels.md, Tolerances).
        u = 2.0 ** -24
        rtol = 2.0 ** -8 + 4.0 * np.sqrt(terms) * u + 2.0 * u
    return Result(output=out, scale=scale, terms=terms, rtol=rtol)


def decode_lengths(batch, length):
    return [1 + (length - 1) * (batch - b) // batch for b in range(batch)]


def attention_decode(case, rng):
    s, dtype, options = case["shape"], case["dtype"], case.get("options", {})
    batch, heads, kv_heads, d, cap = (s["batch"], s["heads"], s["kv_heads"], s["head_dim"],
                                      s["capacity"])
    q = rng.standard_normal((batch, heads, d))
    k = rng.standard_normal((batch, kv_heads, cap, d))
    v = rng.standard_normal((batch, kv_heads, cap, d))
    if dtype != "f64":
        q, k, v = round_to(q, "f32"), _round_storage(k, dtype), _round_storage(v, dtype)
    lengths = decode_lengths(batch, options.get("length", cap))
    group = heads // kv_heads
    out = np.empty((batch, heads, d))
    scale = np.empty((batch, heads, d))
    for b in range(batch):
        for g in range(kv_heads):
            kb, vb = k[b, g, :lengths[b]], v[b, g, :lengths[b]]
            qs = q[b, g * group:(g + 1) * group]
            allowed = np.ones((group, lengths[b]), dtype=bool)
            out[b, g * group:(g + 1) * group], scale[b, g * group:(g + 1) * group] = _attend(
                qs, kb, vb, allowed)
    return Result(output=out, scale=scale, terms=max(d, max(lengths)))


def window_decode(case, rng):
    """Rolling-buffer decode = the window-masked prefill on the stored (rounded) k, v."""
    s, dtype, options = case["shape"], case["dtype"], case.get("options", {})
    n, heads, kv_heads, d = s["n"], s["heads"], s["kv_heads"], s["head_dim"]
    q = rng.standard_normal((n, heads, d))
    k = rng.standard_normal((n, kv_heads, d))
    v = rng.standard_normal((n, kv_heads, d))
    if dtype != "f64":
        q, k, v = round_to(q, "f32"), _round_storage(k, dtype), _round_storage(v, dtype)
    allowed = mask_matrix(n, {"mask": "window", "window": options["window"]})
    group = heads // kv_heads
    out, scale = np.empty((n, heads, d)), np.empty((n, heads, d))
    for h in range(heads):
        g = h // group
        out[:, h, :], scale[:, h, :] = _attend(q[:, h, :], k[:, g, :], v[:, g, :], allowed)
    return Result(output=out, scale=scale, terms=max(d, min(n, options["window"])))


BITS = {"int8": 8, "int4": 4, "kivi4": 4, "kivi2": 2, "kivi4g64": 4, "kivi2g64": 2}


def _group(fmt):
    """Tokens quantized together (lm_kvq_group): KIVI keys per channel over 32 tokens (64 for
    the g64 formats); INT8 and INT4 one token at a time."""
    if fmt.startswith("kivi"):
        return 64 if fmt.endswith("g64") else 32
    return 1


def _f32(x):
    return np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float64)


def _symmetric(x, bits):
    """Per-row symmetric codes as kernels/kvquant/cache.c stores them: (signed code, float32 s)."""
    qmax = 2.0 ** (bits - 1) - 1.0
    s = np.abs(x).max(axis=-1, keepdims=True) / qmax
    safe = np.where(s > 0, s, 1.0)
    code = np.where(s > 0, np.clip(np.rint(x / safe), -qmax, qmax), 0.0)
    return code, _f32(s)


def _affine(x, bits, axis):
    """Asymmetric min/max codes over `axis`: (u, float32 step, float32 minimum)."""
    levels = 2.0 ** bits - 1.0
    lo = x.min(axis=axis, keepdims=True)
    step = (x.max(axis=axis, keepdims=True) - lo) / levels
    safe = np.where(step > 0, step, 1.0)
    u = np.where(step > 0, np.clip(np.rint((x - lo) / safe), 0.0, levels), 0.0)
    return u, _f32(step), _f32(lo)


def _query_codes(x):
    """The decode's int8 query (kernels/kvquant/kvquant.h), bit for bit, for float32 values x
    {heads, d}: s_q = f32(max|x| / 127), r = f32(127 / max|x|), q8 = rint(f32(x r))."""
    amax = np.abs(x).max(axis=-1, keepdims=True)
    sq = _f32(amax / 127.0)
    r = np.where(amax > 0, _f32(127.0 / np.where(amax > 0, amax, 1.0)), 0.0)
    return np.rint(_f32(x * r)), sq


WEIGHT_LEVELS = 65535.0  # the VNNI kernel's per-block 16-bit weights (kvquant.h, "weights")
DECODE_BLOCK = 64      # LM_ATTN_DECODE_BLOCK: blocks of the quantized tokens, from token 0


def kvquant_decode(case, rng):
    """Decode over the cache as stored: codes of the oldest tokens scored with the int8
    query as the fast path does (kvquant.h), float32 recent rows with the float query.

    Scale: the attention rule on the score terms actually summed, plus (f32 only) the
    bound of the VNNI kernel's byte weights: per 64-token block b and head, the weights
    w_j = p_j s^v_j are rounded to multiples of max_b w / 255, so an output moves by at
    most sum_b max_b(P s^v) / 510 * sum_{j in b} |x_jc| (x = the integer the value code
    stands for), added as bound / rtol so that atol + rtol * scale covers both."""
    s, options, dtype = case["shape"], case.get("options", {}), case["dtype"]
    n, heads, kv_heads, d = s["n"], s["heads"], s["kv_heads"], s["head_dim"]
    fmt, recent = options.get("format", "int8"), options.get("recent", 0)
    k = _f32(rng.standard_normal((n, kv_heads, d)))
    v = _f32(rng.standard_normal((n, kv_heads, d)))
    q = _f32(rng.standard_normal((heads, d)))
    group = _group(fmt)
    quantized = 0
    for length in range(1, n + 1):  # the cache's append rule
        if length - quantized >= recent + group:
            quantized += group
    bits, nq = BITS[fmt], quantized
    gsize = heads // kv_heads
    out, scale = np.empty((heads, d)), np.empty((heads, d))
    bound = np.zeros((heads, d))
    root = np.sqrt(d)
    for g in range(kv_heads):
        kg, vg = k[:, g, :], v[:, g, :]
        qg = q[g * gsize:(g + 1) * gsize]  # {gsize, d}
        sc = np.empty((gsize, n))
        a = np.empty((gsize, n))
        vq = vg.copy()
        if fmt.startswith("int"):
            kc, ks = _symmetric(kg[:nq], bits)
            vc, vs = _symmetric(vg[:nq], bits)
            vq[:nq], vx = vc * vs, vc
            q8, sq = _query_codes(qg)
            sc[:, :nq] = fp.matmul(sq * q8, (kc * ks).T)
            a[:, :nq] = fp.matmul(sq * np.abs(q8), np.abs(kc * ks).T)
        else:
            vu, vs, vlo = _affine(vg[:nq], bits, axis=-1)
            vq[:nq], vx = vu * vs + vlo, vu
            for t0 in range(0, nq, group):  # keys: per channel over 32 or 64 tokens
                ku, kst, klo = _affine(kg[t0:t0 + group], bits, axis=0)
                q8, sq = _query_codes(_f32(qg * kst))
                cols = slice(t0, t0 + group)
                sc[:, cols] = sq * fp.matmul(q8, ku.T) + fp.matmul(qg, klo.T)
                a[:, cols] = sq * fp.matmul(np.abs(q8), ku.T) + fp.matmul(np.abs(qg), np.abs(klo).T)
        sc[:, nq:] = fp.matmul(qg, kg[nq:].T)
        a[:, nq:] = fp.matmul(np.abs(qg), np.abs(kg[nq:]).T)
        sc, a = sc / root, a / root
        p = fp.exp(sc - sc.max(axis=1, keepdims=True))
        p /= fp.sums(p, axis=1, keepdims=True)
        rows = slice(g * gsize, (g + 1) * gsize)
        out[rows] = fp.matmul(p, vq)
        scale[rows] = fp.matmul(p, np.abs(vq)) * (1.0 + 2.0 * a.max(axis=1, keepdims=True))
        for b0 in range(0, nq, DECODE_BLOCK):
            blk = slice(b0, min(b0 + DECODE_BLOCK, nq))
            wmax = (p[:, blk] * vs[blk, 0]).max(axis=1, keepdims=True)  # {gsize, 1}
            bound[rows] += wmax / (2.0 * WEIGHT_LEVELS) * fp.sums(np.abs(vx[blk]), axis=0)
    terms = max(d, n)
    if dtype == "f32":
        rtol = SAFETY * np.sqrt(terms) * UNIT_ROUNDOFF["f32"] + 2.0 * UNIT_ROUNDOFF["f32"]
        scale = scale + 1.01 * bound / rtol  # 1 % for the float32 arithmetic of the weights
    return Result(output=out, scale=scale, terms=terms)


def latent_mla(case, rng):
    """Latent attention, expanded in float64. Scale: sum_j p_j sum_l |c_jl W_uv[l, e]| times
    (1 + 2 max_j A_j), A_j bounding the score's terms through the absorbed or expanded
    product; terms latent + nope + keys (the longest chain of float32 sums behind an output)."""
    s, dtype, options = case["shape"], case["dtype"], case.get("options", {})
    H, L, R, N, V, n = s["heads"], s["latent"], s["rope"], s["nope"], s["v_dim"], s["n"]
    causal = bool(options.get("causal", False))
    n_q = n if causal else 1
    q = rng.standard_normal((n_q, H, N + R))
    ckv = rng.standard_normal((n, L + R))
    uk = rng.standard_normal((L, H * N)) / np.sqrt(L)
    uv = rng.standard_normal((L, H * V)) / np.sqrt(L)
    q, ckv, uk, uv = (round_to(x, dtype) for x in (q, ckv, uk, uv))
    c, krope = ckv[:, :L], ckv[:, L:]
    allowed = mask_matrix(n, {"mask": "causal"}) if causal else np.ones((1, n), dtype=bool)
    root = np.sqrt(N + R)
    # every head at once, heads first: wk {H, L, N}, wv {H, L, V}, qh {H, n_q, N + R}
    wk = uk.reshape(L, H, N).transpose(1, 0, 2)
    wv = uv.reshape(L, H, V).transpose(1, 0, 2)
    qh = q.transpose(1, 0, 2)
    k = np.concatenate([fp.matmul(c, wk), np.broadcast_to(krope, (H, n, R))], axis=2)
    v = fp.matmul(c, wv)                                              # {H, n, V}
    sc = np.where(allowed, fp.matmul(qh, k.transpose(0, 2, 1)) / root, -np.inf)  # {H, n_q, n}
    a = (fp.matmul(fp.matmul(np.abs(qh[:, :, :N]), np.abs(wk).transpose(0, 2, 1)), np.abs(c).T)
         + fp.matmul(np.abs(qh[:, :, N:]), np.abs(krope).T)) / root
    top = sc.max(axis=2, keepdims=True)
    p = np.where(allowed, fp.exp(sc - top), 0.0)
    p /= fp.sums(p, axis=2, keepdims=True)
    amax = np.where(allowed, a, 0.0).max(axis=2, keepdims=True)
    out = fp.matmul(p, v).transpose(1, 0, 2)                          # {n_q, H, V}
    scale = (fp.matmul(p, fp.matmul(np.abs(c), np.abs(wv))) * (1.0 + 2.0 * amax)).transpose(1, 0, 2)
    return Result(output=out, scale=scale, terms=L + N + n)


REFERENCES = {"attention_prefill": attention_prefill, "attention_decode": attention_decode,
              "window_decode": window_decode, "kvquant_decode": kvquant_decode,
              "latent_mla": latent_mla}


def _window(tag, n, heads, kv_heads, d, window, seed, dtype="f32"):
    return dict(id=f"window_decode.{dtype}.{tag}", kernel="window_decode", dtype=dtype,
                seed=seed, shape={"n": n, "heads": heads, "kv_heads": kv_heads, "head_dim": d},
                options={"window": window})


def _mla(tag, heads, latent, rope, nope, v_dim, n, path, causal, seed, dtype="f32", **extra):
    mode = "prefill" if causal else "decode"
    return dict(id=f"latent_mla.{dtype}.{path}_{mode}.{tag}", kernel="latent_mla", dtype=dtype,
                seed=seed, shape={"heads": heads, "latent": latent, "rope": rope, "nope": nope,
                                  "v_dim": v_dim, "n": n},
                options={"path": path, "causal": causal}, **extra)


def _kvq(tag, n, heads, kv_heads, d, fmt, recent, seed, dtype="f32"):
    return dict(id=f"kvquant_decode.{dtype}.{fmt}.{tag}", kernel="kvquant_decode", dtype=dtype,
                seed=seed, shape={"n": n, "heads": heads, "kv_heads": kv_heads, "head_dim": d},
                options={"format": fmt, "recent": recent})


def _prefill(tag, n, heads, kv_heads, d, seed, dtype="f32", **options):
    extra = {key: options.pop(key) for key in ("expect_status", "mention") if key in options}
    return dict(id=f"attention_prefill.{dtype}.{tag}", kernel="attention_prefill", dtype=dtype,
                seed=seed, shape={"n": n, "heads": heads, "kv_heads": kv_heads, "head_dim": d},
                options=options, **extra)


def _decode(tag, batch, heads, kv_heads, d, capacity, seed, dtype="f32", **options):
    extra = {key: options.pop(key) for key in ("expect_status", "mention") if key in options}
    return dict(id=f"attention_decode.{dtype}.{tag}", kernel="attention_decode", dtype=dtype,
                seed=seed, shape={"batch": batch, "heads": heads, "kv_heads": kv_heads,
                                  "head_dim": d, "capacity": capacity},
                options=options, **extra)


CASES = [
    # prefill: n never a multiple of the 64 x 32 tile; GQA ratios 1, 4, 32; d 64 and 128
    _prefill("causal_n77_h4_kv1_d64", 77, 4, 1, 64, 4100),
    _prefill("causal_n45_h32_kv1_d64", 45, 32, 1, 64, 4101),
    _prefill("causal_n97_h2_kv2_d128", 97, 2, 2, 128, 4102),
    _prefill("window17_n100_h2_kv2_d128", 100, 2, 2, 128, 4103, mask="window", window=17),
    _prefill("window300_n130_h4_kv1_d64", 130, 4, 1, 64, 4104, mask="window", window=300),
    _prefill("window40_n300_h4_kv1_d64", 300, 4, 1, 64, 4105, mask="window", window=40),
    _prefill("global_w20_g3_n150_h2_kv1_d64", 150, 2, 1, 64, 4106, mask="window_global",
             window=20, n_global=3),
    _prefill("strided8_n140_h2_kv2_d128", 140, 2, 2, 128, 4107, mask="strided", stride=8),
    _prefill("strided37_n200_h1_kv1_d16", 200, 1, 1, 16, 4108, mask="strided", stride=37),
    _prefill("causal_n70_h2_kv1_d40", 70, 2, 1, 40, 4109),  # d not a multiple of 16: scalar
    # bf16 inputs (BF16 dot products on avx512bf16, widened to float32 elsewhere)
    _prefill("causal_n77_h4_kv1_d64", 77, 4, 1, 64, 4130, dtype="bf16"),
    _prefill("causal_n97_h2_kv2_d128", 97, 2, 2, 128, 4131, dtype="bf16"),
    _prefill("window40_n300_h4_kv1_d64", 300, 4, 1, 64, 4132, dtype="bf16", mask="window",
             window=40),
    _prefill("strided37_n200_h1_kv1_d16", 200, 1, 1, 16, 4133, dtype="bf16", mask="strided",
             stride=37),
    _prefill("causal_n70_h2_kv1_d40", 70, 2, 1, 40, 4134, dtype="bf16"),
    _prefill("nan_k", 10, 2, 1, 16, 4135, dtype="bf16", poison="k", expect_status="non-finite",
             mention="k"),
    _prefill("causal_n20_h4_kv2_d16", 20, 4, 2, 16, 4110, dtype="f64"),
    _prefill("global_w5_g2_n31_h2_kv1_d16", 31, 2, 1, 16, 4111, dtype="f64",
             mask="window_global", window=5, n_global=2),
    # bad input
    _prefill("window0", 10, 2, 1, 16, 4120, mask="window", window=0,
             expect_status="argument", mention="window"),
    _prefill("n0", 0, 2, 1, 16, 4121, expect_status="shape", mention="n (tokens)"),
    _prefill("heads6_kv4", 10, 6, 4, 16, 4122, expect_status="shape", mention="kv_heads"),
    _prefill("nan_q", 10, 2, 1, 16, 4123, poison="q", expect_status="non-finite", mention="q"),
    _prefill("stride0", 10, 2, 1, 16, 4124, dtype="f64", mask="strided", stride=0,
             expect_status="argument", mention="stride"),
    # decode: f32, f16, bf16 caches; ragged batches; GQA 1, 4, 32
    _decode("b2_h8_kv2_d64_n700", 2, 8, 2, 64, 700, 4200),
    _decode("b2_h8_kv2_d64_n700", 2, 8, 2, 64, 700, 4201, dtype="f16"),
    _decode("b2_h8_kv2_d64_n700", 2, 8, 2, 64, 700, 4202, dtype="bf16"),
    _decode("b1_h32_kv1_d128_n333", 1, 32, 1, 128, 333, 4203),
    _decode("b1_h32_kv1_d128_n333", 1, 32, 1, 128, 333, 4204, dtype="f16"),
    _decode("b1_h32_kv1_d128_n333", 1, 32, 1, 128, 333, 4205, dtype="bf16"),
    _decode("b3_h2_kv2_d128_n130", 3, 2, 2, 128, 130, 4206),
    _decode("b3_h2_kv2_d128_n130", 3, 2, 2, 128, 130, 4207, dtype="bf16"),
    _decode("b1_h32_kv8_d128_n1500", 1, 32, 8, 128, 1500, 4208, dtype="f16"),
    _decode("b1_h32_kv8_d128_n1500", 1, 32, 8, 128, 1500, 4209),
    _decode("b2_h4_kv2_d24_n50", 2, 4, 2, 24, 50, 4210),  # d 24: scalar fallback
    _decode("b2_h4_kv1_d16_n10", 2, 4, 1, 16, 10, 4211, dtype="f64"),
    # bad input
    _decode("length0", 1, 2, 1, 16, 8, 4220, length=0, expect_status="shape",
            mention="lengths[0]"),
    _decode("nan_q", 1, 2, 1, 16, 8, 4221, poison="q", expect_status="non-finite", mention="q"),
    _decode("heads3_kv2", 1, 3, 2, 16, 8, 4222, dtype="f16", expect_status="shape",
            mention="kv_heads"),
    # rolling-buffer window decode: w < n, w > n, GQA 1 / 4 / 32, every storage dtype
    _window("n90_w17_h8_kv2_d64", 90, 8, 2, 64, 17, 4300),
    _window("n90_w17_h8_kv2_d64", 90, 8, 2, 64, 17, 4301, dtype="f16"),
    _window("n90_w17_h8_kv2_d64", 90, 8, 2, 64, 17, 4302, dtype="bf16"),
    _window("n40_w64_h32_kv1_d128", 40, 32, 1, 128, 64, 4303),
    _window("n70_w33_h2_kv2_d128", 70, 2, 2, 128, 33, 4304),
    _window("n12_w5_h2_kv1_d16", 12, 2, 1, 16, 5, 4305, dtype="f64"),
    # quantized cache decoded on the codes: every format, with and without a recent window
    _kvq("n300_h8_kv2_d64_r40", 300, 8, 2, 64, "int8", 40, 4400),
    _kvq("n300_h8_kv2_d64_r40", 300, 8, 2, 64, "int4", 40, 4401),
    _kvq("n300_h8_kv2_d64_r40", 300, 8, 2, 64, "kivi4", 40, 4402),
    _kvq("n300_h8_kv2_d64_r40", 300, 8, 2, 64, "kivi2", 40, 4403),
    _kvq("n257_h32_kv8_d128_r0", 257, 32, 8, 128, "int8", 0, 4404),
    _kvq("n257_h32_kv8_d128_r0", 257, 32, 8, 128, "int4", 0, 4405),
    _kvq("n257_h32_kv8_d128_r0", 257, 32, 8, 128, "kivi4", 0, 4406),
    _kvq("n257_h32_kv8_d128_r0", 257, 32, 8, 128, "kivi2", 0, 4407),
    _kvq("n100_h32_kv1_d128_r16", 100, 32, 1, 128, "kivi2", 16, 4408),
    _kvq("n50_h4_kv1_d16_r3", 50, 4, 1, 16, "kivi4", 3, 4409, dtype="f64"),
    _kvq("n50_h4_kv1_d16_r3", 50, 4, 1, 16, "int4", 3, 4410, dtype="f64"),
    # key groups of 64 tokens: a quantized part ending mid-block, GQA 4, 32 and 1
    _kvq("n300_h8_kv2_d64_r40", 300, 8, 2, 64, "kivi4g64", 40, 4411),
    _kvq("n300_h8_kv2_d64_r40", 300, 8, 2, 64, "kivi2g64", 40, 4412),
    _kvq("n257_h32_kv8_d128_r0", 257, 32, 8, 128, "kivi2g64", 0, 4413),
    _kvq("n200_h32_kv1_d128_r16", 200, 32, 1, 128, "kivi2g64", 16, 4414),
    _kvq("n150_h3_kv3_d128_r5", 150, 3, 3, 128, "kivi4g64", 5, 4415),
    _kvq("n140_h4_kv1_d16_r3", 140, 4, 1, 16, "kivi2g64", 3, 4416, dtype="f64"),
    # latent attention: absorbed and expanded, decode and prefill; DeepSeek-V2 geometry once
    _mla("h4_l32_r16_n70", 4, 32, 16, 32, 32, 70, "absorbed", False, 4500),
    _mla("h4_l32_r16_n70", 4, 32, 16, 32, 32, 70, "expanded", False, 4501),
    _mla("h4_l32_r16_n37", 4, 32, 16, 32, 32, 37, "absorbed", True, 4502),
    _mla("h4_l32_r16_n37", 4, 32, 16, 32, 32, 37, "expanded", True, 4503),
    _mla("h3_l40_r8_n33", 3, 40, 8, 24, 20, 33, "absorbed", True, 4504),  # 48-wide: scalar
    _mla("deepseek_v2_n12", 128, 512, 64, 128, 128, 12, "absorbed", False, 4505),
    _mla("deepseek_v2_n12", 128, 512, 64, 128, 128, 12, "expanded", False, 4506),
    _mla("deepseek_v2_n5", 128, 512, 64, 128, 128, 5, "absorbed", True, 4507),
    _mla("h2_l16_r8_n9", 2, 16, 8, 16, 16, 9, "absorbed", True, 4508, dtype="f64"),
    _mla("bad_vdim", 2, 16, 8, 4, 16, 9, "absorbed", False, 4509, expect_status="shape",
         mention="v_dim"),
]
