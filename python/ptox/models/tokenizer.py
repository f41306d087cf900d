"""Tokenizers through HF `tokenizers` (no hand-written BPE): built from a GGUF file's vocabulary,
merges and pre-tokenizer name, or read from a tokenizer.json; chat templates rendered with Jinja
in a sandbox, as transformers does."""

from .config import ModelError

# llama.cpp's pre-tokenizer names -> the HF pre-tokenizer that splits text the same way.
_QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
                r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def _pre_tokenizer(pre, path):
    from tokenizers import Regex, pre_tokenizers as pt
    byte_level = pt.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre in ("smollm",):  # digits one by one, then GPT-2's split
        return pt.Sequence([pt.Digits(individual_digits=True), byte_level])
    if pre in ("qwen2",):
        return pt.Sequence([pt.Split(Regex(_QWEN2_SPLIT), behavior="isolated"),
                            pt.ByteLevel(add_prefix_space=False, use_regex=False)])
    if pre in ("gpt2", "default"):
        return byte_level
    raise ModelError(f"{path}: pre-tokenizer '{pre}' is not supported (smollm, qwen2, gpt2)")


class Tokenizer:
    """encode / decode / chat prompt; `eos_ids` end generation."""

    def __init__(self, tk, bos_id, eos_ids, add_bos, chat_template):
        self.tk, self.bos_id, self.eos_ids = tk, bos_id, set(eos_ids)
        self.add_bos, self.chat_template = add_bos, chat_template

    def encode(self, text):
        ids = self.tk.encode(text, add_special_tokens=False).ids
        return ([self.bos_id] if self.add_bos and self.bos_id is not None else []) + ids

    def decode(self, ids):
        return self.tk.decode(list(ids), skip_special_tokens=True)

    def chat(self, messages):
        """The prompt text of a conversation (a list of {"role", "content"}), ready for the
        assistant's turn."""
        if not self.chat_template:
            raise ModelError("this model has no chat template")
        from jinja2.sandbox import ImmutableSandboxedEnvironment
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        return env.from_string(self.chat_template).render(
            messages=messages, add_generation_prompt=True,
            bos_token=self.tk.id_to_token(self.bos_id) if self.bos_id is not None else "")


def from_gguf(reader, path):
    from tokenizers import AddedToken, Tokenizer as HFTokenizer, decoders, models

    def field(key, default=None):
        f = reader.fields.get(key)
        return f.contents() if f is not None else default

    if field("tokenizer.ggml.model") != "gpt2":
        raise ModelError(f"{path}: tokenizer '{field('tokenizer.ggml.model')}' is not supported "
                         "(gpt2-style byte-level BPE)")
    tokens, merges = field("tokenizer.ggml.tokens", []), field("tokenizer.ggml.merges", [])
    kinds = field("tokenizer.ggml.token_type", [1] * len(tokens))
    try:
        bpe = models.BPE(vocab={t: i for i, t in enumerate(tokens)},
                         merges=[tuple(m.split(" ", 1)) for m in merges])
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"{path}: the tokenizer's vocabulary is corrupt ({e})") from None
    tk = HFTokenizer(bpe)
    tk.pre_tokenizer = _pre_tokenizer(field("tokenizer.ggml.pre", "default"), path)
    tk.decoder = decoders.ByteLevel()
    # Control (3) and user-defined (4) tokens are matched whole, before the BPE.
    tk.add_special_tokens([AddedToken(t, special=True, normalized=False)
                           for t, k in zip(tokens, kinds) if k in (3, 4)])
    eos = field("tokenizer.ggml.eos_token_id")
    eos_ids = {eos} if eos is not None else set()
    for name in ("<|im_end|>", "<|endoftext|>", "<|eot_id|>"):
        if name in tk.get_vocab():
            eos_ids.add(tk.token_to_id(name))
    return Tokenizer(tk, field("tokenizer.ggml.bos_token_id"), eos_ids,
                     bool(field("tokenizer.ggml.add_bos_token", False)),
                     field("tokenizer.chat_template"))


def from_tokenizer_json(path, config_json):
    """A folder's tokenizer.json (and tokenizer_config.json's chat template and specials)."""
    import json
    import os
    from tokenizers import Tokenizer as HFTokenizer
    try:
        tk = HFTokenizer.from_file(os.path.join(path, "tokenizer.json"))
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"{path}/tokenizer.json: cannot be read ({e})") from None
    extra = {}
    cfg_path = os.path.join(path, "tokenizer_config.json")
    if os.path.exists(cfg_path):
        with open(cfg_path) as f:
            extra = json.load(f)
    eos = config_json.get("eos_token_id")
    eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    for name in ("<|im_end|>", "<|endoftext|>"):
        if tk.token_to_id(name) is not None:
            eos_ids.add(tk.token_to_id(name))
    return Tokenizer(tk, config_json.get("bos_token_id"), eos_ids, False,
                     extra.get("chat_template"))
