"""The decoder written in ptox: one program runs a whole step — the prefill of T new tokens, or
one decode step — through every layer as one task graph. The layers are a sequential ptox loop
over the stacked per-layer weights carrying the residual stream, so a layer's code is generated
and compiled once, whatever the depth.

Inputs: token ids; the RoPE cos / sin of their positions past .. P-1; the weights (constant
inputs: each kind of matrix stacked per layer as row blocks [L * out, in] and each kind of
vector as [L * n], so a layer's is a slice, read in place); the KV caches as views [L * KV, P, hd] of the first P = past + T
positions of caches allocated once for the whole context (so the past length comes from their
shape, and attention reads exactly the positions filled), written in place at rows past .. P-1.
Output: the logits of the last token, or of every new token.

The projections, the embedding and the LM head are f32, bf16 / f16 (widened exactly where the
matmuls and the gather read them), or GGUF blocks read in place (the
constants W_Q / E_Q / H_Q: int8 rows of K / 32 blocks, `tensor.qmatmul` with int8 activations and
a quantized `tensor.gather`; kernels/quant.h). The residual adds sit outside those constant ifs.

Tensor parallel over TP ranks (docs/distributed.md): each rank holds H / TP query heads, KV / TP
KV heads, F / TP of the MLP and D / TP of the outputs of wo and wd (their rows: every projection
is column-parallel). Allgathers give every rank the whole attention output and MLP activation
before wo and wd, and their whole outputs after: each output sums its whole K on one rank, as in
one process, so the ranks compute the single process's bits (with GGUF blocks too, whose int8
activations are quantized over whole rows). The rest is replicated.

Specialized by `ptox.jit(constants=...)` on the model's configuration (see `compile_step`)."""

from __future__ import annotations  # the annotations name compile-time constants

import math

import ptox
import ptox.lang as pl


@ptox.inline
def project(x, w, row0, n, k, kq):
    """x @ W^T for the rows [row0, row0 + n) of the stacked weight w, a layer's block: float rows
    k wide (widened exactly where the matmul reads 16-bit ones), or GGUF / w8a8 rows of kq
    bytes read in place with int8 activations (W_Q; kernels/quant.h)."""
    if W_Q:
        return pl.qmatmul(x, pl.slice(w, [row0, 0], shape=(n, kq)), format=W_FMT)
    return pl.matmul(x, pl.slice(w, [row0, 0], shape=(n, k)), transpose_b=True)


@ptox.inline
def rope(x1, x2, c1, c2, s1, s2, per_row):
    """RoPE (rotate-half) of a head's halves x1, x2 as tiles, each output element the
    definition's x * cos + rot * sin: per_row, cos / sin hold one row per row of x (prefill's
    tokens); else one row for all (the decode step's token, over its heads)."""
    if per_row:
        return (pl.tile.add(pl.tile.mul(x1, c1), pl.tile.mul(pl.tile.neg(x2), s1)),
                pl.tile.add(pl.tile.mul(x2, c2), pl.tile.mul(x1, s2)))
    return (pl.tile.add(pl.tile.col_expand_mul(x1, c1),
                        pl.tile.col_expand_mul(pl.tile.neg(x2), s1)),
            pl.tile.add(pl.tile.col_expand_mul(x2, c2), pl.tile.col_expand_mul(x1, s2)))


@ptox.inline
def attend(sc, vt, m, den, acc):
    """One tile of scores sc (and the values vt of its positions) into an online softmax: the
    running max m, denominator den and output acc, rescaled by exp(m_old - m_new) when the tile
    raises the max."""
    mn = pl.tile.max(m, pl.tile.row_max(sc))
    alpha = pl.tile.exp(pl.tile.sub(m, mn))
    e = pl.tile.exp(pl.tile.row_expand_sub(sc, mn))
    den = pl.tile.add(pl.tile.mul(den, alpha), pl.tile.row_sum(e))
    acc = pl.tile.matmul_acc(pl.tile.row_expand_mul(acc, alpha), e, vt)
    return mn, den, acc


@ptox.inline
def gather_ranks(x, n):
    """Every rank's [TOKENS, n] columns side by side, in rank order: [TOKENS, n * TP]."""
    xg = pl.empty(shape=(TP, TOKENS, n), dtype=pl.f32)
    pl.dist.allgather(xg, pl.reshape(x, shape=(1, TOKENS, n)))
    return pl.reshape(pl.transpose(xg, dim0=0, dim1=1), shape=(TOKENS, n * TP))


@ptox.inline
def embed_tokens(embed, ids):
    """The rows of the embedding for ids, as f32: GGUF blocks read in place (E_Q), bf16 / f16
    rows widened exactly, or f32 rows."""
    if E_Q:
        return pl.gather(embed, ids, format=E_FMT)
    if E_16:
        return pl.cast(pl.gather(embed, ids), dtype=pl.f32)
    return pl.gather(embed, ids)


@ptox.inline
def to_cache(t):
    """A key or value tile in the cache's dtype: rounded to f16 once, as it is appended."""
    if KV_F16:
        return pl.tile.cast(t, dtype=pl.f16)
    return t


@ptox.inline
def attend_cache(qt, kcache, vcache, row, p_begin, p_end, rows, causal, diag):
    """The online softmax of the query tile qt ([rows, HD]) over the keys and values of cache
    row `row` at positions [p_begin, p_end), streamed in tiles of BP positions read in place:
    its (running max, denominator, output). causal: query i sees positions up to diag + i (the
    diagonal's tiles masked by tile.causal_mask)."""
    m = pl.full(NEG_INF, shape=(rows, 1))
    den = pl.full(0.0, shape=(rows, 1))
    acc = pl.full(0.0, shape=(rows, HD))
    for p0 in pl.range(p_begin, p_end, BP):
        kt = pl.load(kcache, [row, p0, 0], shape=(BP, HD))
        vt = pl.load(vcache, [row, p0, 0], shape=(BP, HD))
        sc = pl.tile.mul(pl.tile.matmul(qt, kt, transpose_b=True), SCALE)
        if causal:
            sc = pl.tile.causal_mask(sc, diag - p0)
        m, den, acc = attend(sc, vt, m, den, acc)
    return m, den, acc


@ptox.inline
def rope_decode(q, k, v, cos, sin, kcache, vcache, l, past):
    """RoPE of the token's query and key heads as tiles and the append of its keys and values
    to the caches (row `past` of each KV head): one task for what took twelve at tensor level.
    The roped queries, [H, HD]."""
    qr = pl.empty(shape=(H, HD), dtype=pl.f32)
    vh = pl.reshape(v, shape=(KV, HD))
    with pl.incore():
        c1 = pl.load(cos, [0, 0], shape=(1, HD2))
        c2 = pl.load(cos, [0, HD2], shape=(1, HD2))
        s1 = pl.load(sin, [0, 0], shape=(1, HD2))
        s2 = pl.load(sin, [0, HD2], shape=(1, HD2))
        y1, y2 = rope(pl.load(q, [0, 0, 0], shape=(H, HD2)),
                      pl.load(q, [0, 0, HD2], shape=(H, HD2)), c1, c2, s1, s2, False)
        pl.store(y1, qr, [0, 0])
        pl.store(y2, qr, [0, HD2])
        y1, y2 = rope(pl.load(k, [0, 0, 0], shape=(KV, HD2)),
                      pl.load(k, [0, 0, HD2], shape=(KV, HD2)), c1, c2, s1, s2, False)
        y1 = to_cache(y1)
        y2 = to_cache(y2)
        vt = to_cache(pl.load(vh, [0, 0], shape=(KV, HD)))
        for j in pl.range(0, KV, unroll=True):
            row = l * KV + j
            pl.store(pl.tile.slice(y1, [j, 0], shape=(1, HD2)), kcache, [row, past, 0])
            pl.store(pl.tile.slice(y2, [j, 0], shape=(1, HD2)), kcache, [row, past, HD2])
            pl.store(pl.tile.slice(vt, [j, 0], shape=(1, HD)), vcache, [row, past, 0])
    return qr


@ptox.inline
def attention_split(qg, og, kcache, vcache, l):
    """The decode step's attention over a long context, when the KV heads do not divide evenly
    over the threads: each head's positions in SPLIT chunks of whole tiles, one task each, whose
    partial (acc, m, den) a task per head merges as the online softmax merges a tile."""
    cl = (kcache.shape[1] + SPLIT * BP - 1) // (SPLIT * BP) * BP
    part = pl.empty(shape=(KV, SPLIT, G, HD + 2), dtype=pl.f32)
    for kh in pl.range(0, KV, parallel=True):
        for c0 in pl.range(0, SPLIT * cl, cl, parallel=True):
            with pl.incore():
                qt = pl.load(qg, [kh, 0, 0], shape=(G, HD))
                m, den, acc = attend_cache(qt, kcache, vcache, l * KV + kh, c0,
                                           pl.min(c0 + cl, kcache.shape[1]), G, False, 0)
                pl.store(acc, part, [kh, c0 // cl, 0, 0])
                pl.store(m, part, [kh, c0 // cl, 0, HD])
                pl.store(den, part, [kh, c0 // cl, 0, HD + 1])
    for kh in pl.range(0, KV, parallel=True):
        with pl.incore():
            acc = pl.load(part, [kh, 0, 0, 0], shape=(G, HD))
            m = pl.load(part, [kh, 0, 0, HD], shape=(G, 1))
            den = pl.load(part, [kh, 0, 0, HD + 1], shape=(G, 1))
            for c in pl.range(1, SPLIT, unroll=True):
                ac = pl.load(part, [kh, c, 0, 0], shape=(G, HD))
                mc = pl.load(part, [kh, c, 0, HD], shape=(G, 1))
                dc = pl.load(part, [kh, c, 0, HD + 1], shape=(G, 1))
                mn = pl.tile.max(m, mc)
                alpha = pl.tile.exp(pl.tile.sub(m, mn))
                beta = pl.tile.exp(pl.tile.sub(mc, mn))
                den = pl.tile.add(pl.tile.mul(den, alpha), pl.tile.mul(dc, beta))
                acc = pl.tile.add(pl.tile.row_expand_mul(acc, alpha),
                                  pl.tile.row_expand_mul(ac, beta))
                m = mn
            pl.store(pl.tile.row_expand_div(acc, den), og, [kh, 0, 0])


@ptox.inline
def attention_decode(q, kcache, vcache, l):
    """One token, flash-decoding style: per KV head one task that streams its keys and values
    (read in place) for its G query heads with an online softmax. One task where the composite
    softmax over a run-time row length took six; its sums come in another order, within the
    softmax's bound. [TOKENS, QD]."""
    qg = pl.reshape(q, shape=(KV, G, HD))
    og = pl.empty(shape=(KV, G, HD), dtype=pl.f32)
    if SPLIT > 1 and kcache.shape[1] >= SPLIT_MIN:
        attention_split(qg, og, kcache, vcache, l)
    else:
        for kh in pl.range(0, KV, parallel=True):
            with pl.incore():
                qt = pl.load(qg, [kh, 0, 0], shape=(G, HD))
                m, den, acc = attend_cache(qt, kcache, vcache, l * KV + kh, 0, kcache.shape[1],
                                           G, False, 0)
                pl.store(pl.tile.row_expand_div(acc, den), og, [kh, 0, 0])
    return pl.reshape(og, shape=(TOKENS, QD))


@ptox.inline
def rope_prefill(q, k, v, cos, sin, kcache, vcache, l, t, past):
    """RoPE of the query and key heads and the append of the keys and values to the caches as
    tiles: per block of BQ tokens one task that reads each head's [BQ, HD / 2] halves in place
    and writes the roped queries head-major (the attention's layout, returned: [H, TOKENS, HD])
    and the keys and values at rows past + b0.. of the caches. At tensor level RoPE, the
    transposes and the appends took ~40 tasks a layer."""
    q2 = pl.reshape(q, shape=(TOKENS, QD))
    k2 = pl.reshape(k, shape=(TOKENS, KVD))
    qh = pl.empty(shape=(H, TOKENS, HD), dtype=pl.f32)
    for b0 in pl.range(0, t, BQ, parallel=True):
        with pl.incore():
            c1 = pl.load(cos, [b0, 0], shape=(BQ, HD2))
            c2 = pl.load(cos, [b0, HD2], shape=(BQ, HD2))
            s1 = pl.load(sin, [b0, 0], shape=(BQ, HD2))
            s2 = pl.load(sin, [b0, HD2], shape=(BQ, HD2))
            for j in pl.range(0, H):
                y1, y2 = rope(pl.load(q2, [b0, j * HD], shape=(BQ, HD2)),
                              pl.load(q2, [b0, j * HD + HD2], shape=(BQ, HD2)),
                              c1, c2, s1, s2, True)
                pl.store(y1, qh, [j, b0, 0])
                pl.store(y2, qh, [j, b0, HD2])
            for j in pl.range(0, KV):
                y1, y2 = rope(pl.load(k2, [b0, j * HD], shape=(BQ, HD2)),
                              pl.load(k2, [b0, j * HD + HD2], shape=(BQ, HD2)),
                              c1, c2, s1, s2, True)
                pl.store(to_cache(y1), kcache, [l * KV + j, past + b0, 0])
                pl.store(to_cache(y2), kcache, [l * KV + j, past + b0, HD2])
                pl.store(to_cache(pl.load(v, [b0, j * HD], shape=(BQ, HD))), vcache,
                         [l * KV + j, past + b0, 0])
    return qh


@ptox.inline
def attention_prefill(qh, kcache, vcache, l, t, past):
    """Causal attention, flash style: per query head and block of BQ tokens one task that
    streams the keys and values of its KV head up to its last token's position, the diagonal's
    tiles masked and the tiles past it never read: half the work of the whole [T, P] scores at
    P = T. [TOKENS, QD]."""
    o = pl.empty(shape=(TOKENS, QD), dtype=pl.f32)
    for hq in pl.range(0, H, parallel=True):
        for t0 in pl.range(0, t, BQ, parallel=True):
            with pl.incore():
                qt = pl.load(qh, [hq, t0, 0], shape=(BQ, HD))
                m, den, acc = attend_cache(qt, kcache, vcache, l * KV + hq // G, 0,
                                           pl.min(past + t0 + BQ, kcache.shape[1]), BQ, True,
                                           past + t0)
                pl.store(pl.tile.row_expand_div(acc, den), o, [t0, hq * HD])
    return o


@ptox.inline
def attention(h, cos, sin, wq, wk, wv, q_norm, k_norm, wo, kcache, vcache, l, t, past):
    """Layer l's attention block on the normed stream h: projections, Q / K norm, RoPE, the
    append to the KV caches, attention over them and the output projection (every rank's heads
    gathered before it and its outputs after, in rank order)."""
    q = pl.reshape(project(h, wq, l * QD, QD, D, W_D), shape=(TOKENS, H, HD))
    k = pl.reshape(project(h, wk, l * KVD, KVD, D, W_D), shape=(TOKENS, KV, HD))
    v = project(h, wv, l * KVD, KVD, D, W_D)
    if QK_NORM:
        q = pl.rmsnorm(q, pl.slice(q_norm, [l * HD], shape=(HD,)), eps=EPS)
        k = pl.rmsnorm(k, pl.slice(k_norm, [l * HD], shape=(HD,)), eps=EPS)
    if DECODE:
        o = attention_decode(rope_decode(q, k, v, cos, sin, kcache, vcache, l, past), kcache,
                             vcache, l)
    else:  # T tokens, causal over the past
        o = attention_prefill(rope_prefill(q, k, v, cos, sin, kcache, vcache, l, t, past),
                              kcache, vcache, l, t, past)
    if TP > 1:
        o = gather_ranks(o, QD)
    a = project(o, wo, l * DO, DO, QDI, W_QD)
    if TP > 1:
        a = gather_ranks(a, DO)
    return a


@ptox.inline
def mlp(h, wg, wu, wd, l):
    """Layer l's SwiGLU MLP on the normed stream h (every rank's activations gathered before
    wd and its outputs after)."""
    m = pl.swiglu(project(h, wg, l * F, F, D, W_D), project(h, wu, l * F, F, D, W_D))
    if TP > 1:
        m = gather_ranks(m, F)
    f = project(m, wd, l * DO, DO, FI, W_F)
    if TP > 1:
        f = gather_ranks(f, DO)
    return f


def decoder_step(ids: pl.In[TOKENS, pl.i32], cos: pl.In[TOKENS, HD, pl.f32],
                 sin: pl.In[TOKENS, HD, pl.f32], embed: pl.In[V, E_ROW, E_DT],
                 attn_norm: pl.In[L * D, pl.f32], wq: pl.In[L * QD, W_D, W_DT],
                 wk: pl.In[L * KVD, W_D, W_DT], wv: pl.In[L * KVD, W_D, W_DT],
                 q_norm: pl.In[L * HD, pl.f32], k_norm: pl.In[L * HD, pl.f32],
                 wo: pl.In[L * DO, W_QD, W_DT], ffn_norm: pl.In[L * D, pl.f32],
                 wg: pl.In[L * F, W_D, W_DT], wu: pl.In[L * F, W_D, W_DT],
                 wd: pl.In[L * DO, W_F, W_DT], out_norm: pl.In[D, pl.f32],
                 lm_head: pl.In[V, H_ROW, H_DT], kcache: pl.InOut[L * KV, "P", HD, KV_DT],
                 vcache: pl.InOut[L * KV, "P", HD, KV_DT], logits: pl.Out[ROWS, V, pl.f32]):
    t = ids.shape[0]
    past = kcache.shape[1] - t
    x = embed_tokens(embed, ids)
    for l in pl.range(0, L):
        # Layer l's weights are row blocks of the stacked matrices (views, no copies).
        h = pl.rmsnorm(x, pl.slice(attn_norm, [l * D], shape=(D,)), eps=EPS)
        x = x + attention(h, cos, sin, wq, wk, wv, q_norm, k_norm, wo, kcache, vcache, l, t, past)
        h = pl.rmsnorm(x, pl.slice(ffn_norm, [l * D], shape=(D,)), eps=EPS)
        x = x + mlp(h, wg, wu, wd, l)
    if ALL_LOGITS or DECODE:
        last = x
    else:
        last = pl.slice(x, [t - 1, 0], shape=(1, D))
    if H_Q:
        pl.store(pl.qmatmul(pl.rmsnorm(last, out_norm, eps=EPS), lm_head, format=H_FMT), logits)
    else:
        pl.store(pl.matmul(pl.rmsnorm(last, out_norm, eps=EPS), lm_head, transpose_b=True),
                 logits)


# The step's weight parameters, in order after ids, cos and sin.
WEIGHTS = ("embed", "attn_norm", "wq", "wk", "wv", "q_norm", "k_norm", "wo", "ffn_norm", "wg", "wu",
           "wd", "out_norm", "lm_head")
# Those stacked per layer: vectors as [L * n], matrices as [L * out, in] (a layer's is a slice).
PER_LAYER = ("attn_norm", "wq", "wk", "wv", "q_norm", "k_norm", "wo", "ffn_norm", "wg", "wu", "wd")


# Bytes per row of 32-value blocks, per ptox format.
_BLOCK_BYTES = {"q4_0": 18, "q4_1": 20, "q8_0": 34}


_FLOATS = {None: pl.f32, "bf16": pl.bf16, "f16": pl.f16}


_QUANTIZED = (*_BLOCK_BYTES, "w8a8")


def _row(k, fmt):
    """(row length, dtype) of a [., k] weight: k float values, k / 32 blocks as i8 bytes, or
    (w8a8) k int8 and the row's f32 scale."""
    if fmt == "w8a8":
        return k + 4, pl.i8
    return (k // 32 * _BLOCK_BYTES[fmt], pl.i8) if fmt in _BLOCK_BYTES else (k, _FLOATS[fmt])


def compile_step(cfg, decode, all_logits=False, target="cpu", threads=0, formats=None,
                 kv_f16=False, tp=1):
    """The step program of `cfg`: decode (one token) or prefill (T tokens), with the logits of
    the last token or (all_logits, prefill) of every token. `formats` names the storage of the
    projections ("w"), the embedding ("embed") and the LM head ("lm_head") where it is not f32:
    a GGUF block format ("q4_1", ...; see gguf_file.Blocks), "w8a8" or "bf16" / "f16".
    `kv_f16`: the KV caches hold f16 (keys and values rounded once as they are appended), else
    f32. `tp` > 1: `cfg` is one rank's share of the model (its heads, MLP columns and, for wo
    and wd, d_model / tp output rows: parallel.shard), and the step gathers what they compute
    over the ranks."""
    tokens = 1 if decode else "T"
    fmt = dict(formats or {})
    w, e, h = fmt.get("w"), fmt.get("embed"), fmt.get("lm_head")
    # wo and wd: d_model / tp output rows over the inputs of every rank
    qdi, fi = cfg.n_heads * cfg.head_dim * tp, cfg.d_ff * tp
    (w_d, w_dt), (w_qd, _), (w_f, _) = _row(cfg.d_model, w), _row(qdi, w), _row(fi, w)
    (e_row, e_dt), (h_row, h_dt) = _row(cfg.d_model, e), _row(cfg.d_model, h)
    # Decode attention over a long context: each KV head's positions in `split` chunks, the
    # fewest that make the (head, chunk) tasks a multiple of the threads (3 heads, 2 threads: 2).
    nt = threads or ptox._core.default_threads()
    split = nt // math.gcd(cfg.n_kv_heads, nt)
    constants = dict(
        W_Q=w in _QUANTIZED, W_FMT=w or "", W_D=w_d, W_QD=w_qd, W_F=w_f, W_DT=w_dt,
        E_Q=e in _QUANTIZED, E_16=e in ("bf16", "f16"), E_FMT=e or "", E_ROW=e_row, E_DT=e_dt,
        H_Q=h in _QUANTIZED, H_FMT=h or "", H_ROW=h_row, H_DT=h_dt,
        TOKENS=tokens, ROWS="T" if all_logits else 1, L=cfg.n_layers, D=cfg.d_model,
        H=cfg.n_heads, KV=cfg.n_kv_heads, G=cfg.n_heads // cfg.n_kv_heads, HD=cfg.head_dim,
        QD=cfg.n_heads * cfg.head_dim, KVD=cfg.n_kv_heads * cfg.head_dim, F=cfg.d_ff,
        DO=cfg.d_model // tp, QDI=qdi, FI=fi,
        V=cfg.vocab, EPS=float(cfg.eps), SCALE=cfg.head_dim ** -0.5, HD2=cfg.head_dim // 2,
        BP=128, BQ=64,  # attention: cache positions per tile, query tokens per prefill task
        SPLIT=split, SPLIT_MIN=512,  # below 512 positions the split gained nothing here
        NEG_INF=-math.inf,  # the online softmax's running max starts there
        QK_NORM=cfg.qk_norm, DECODE=decode, ALL_LOGITS=all_logits, KV_F16=kv_f16,
        KV_DT=pl.f16 if kv_f16 else pl.f32, TP=tp)
    return ptox.jit(decoder_step, target=target, threads=threads, constants=constants)
