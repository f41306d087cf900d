"""An independent decoder forward in float64 numpy (HF's Llama / Qwen3 definition: rotate-half
RoPE, GQA, SwiGLU), used by the tests as a second reference beside transformers' fixtures."""
import numpy as np


def rmsnorm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rope(x, pos, base):
    """x: [T, H, hd] at positions pos[T]; rotate-half pairing."""
    hd = x.shape[-1]
    inv = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = pos[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, -1)[:, None, :]
    sin = np.concatenate([np.sin(ang)] * 2, -1)[:, None, :]
    rot = np.concatenate([-x[..., hd // 2:], x[..., :hd // 2]], -1)
    return x * cos + rot * sin


def forward(cfg, w, ids):
    """Logits [T, V] of the token ids (a fresh context), in float64."""
    W = {k: np.asarray(v, np.float64) for k, v in w.items()}
    T, hd, H, KV = len(ids), cfg.head_dim, cfg.n_heads, cfg.n_kv_heads
    pos = np.arange(T, dtype=np.float64)
    x = W["embed"][np.asarray(ids)]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(cfg.n_layers):
        h = rmsnorm(x, W["attn_norm"][l], cfg.eps)
        q = (h @ W["wq"][l].T).reshape(T, H, hd)
        k = (h @ W["wk"][l].T).reshape(T, KV, hd)
        v = (h @ W["wv"][l].T).reshape(T, KV, hd)
        if cfg.qk_norm:
            q, k = rmsnorm(q, W["q_norm"][l], cfg.eps), rmsnorm(k, W["k_norm"][l], cfg.eps)
        q, k = rope(q, pos, cfg.rope_base), rope(k, pos, cfg.rope_base)
        g = H // KV
        k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
        s = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd) + mask
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        o = np.einsum("hts,shd->thd", p, v).reshape(T, H * hd)
        x = x + o @ W["wo"][l].T
        h = rmsnorm(x, W["ffn_norm"][l], cfg.eps)
        a, b = h @ W["wg"][l].T, h @ W["wu"][l].T
        x = x + (a / (1 + np.exp(-a)) * b) @ W["wd"][l].T
    x = rmsnorm(x, W["out_norm"], cfg.eps)
    return x @ W["lm_head" if not cfg.tied else "embed"].T
