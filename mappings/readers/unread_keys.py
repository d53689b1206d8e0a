"""Config keys that name a cache-shaping concept and that no reader understood.

Every mapper declares, as data next to it (``@register(reads=..., ignores=...)``), the keys it reads
and the keys it knows to be irrelevant to its cache (with the reason); the readers also record every
key they look up (``ConfigView.consumed``). After a mapper runs, the registry (``Mapper.__call__``,
one mechanism for every mapper) asks ``unread_cache_keys`` for the keys of the config that

- name a concept that can change the cache (``CACHE_CONCEPT``: sharing and CLA, windows and chunks,
  KV heads and head sizes, latent/LoRA ranks, compression, sparse/index keys, recurrent state, convs,
  expansion, SSM, layer types and patterns, loops, cross-attention, …),
- were neither looked up by a reader, nor declared by the mapper,
- and are not known to be harmless (``NOT_CACHE``: a name pattern; ``HARMLESS``: exact keys, each
  with its reason),

and labels the figures an estimate with a warning naming each key (``estimate_warning``).

Nested objects are walked where a reader or a declaration reached inside them
(``attn_config.kv_n_heads`` read: ``attn_config``'s other keys are checked one by one); an object
read whole, or declared whole, counts as understood. Empty values (null, ``{}``, ``[]``, ``""``) say
nothing and are skipped; ``false`` is not (``multi_query_attention: false`` changes the cache).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from hfkv.model.config import TEXT_KEYS, ConfigView

# Names of concepts that can change what a layer caches.
CACHE_CONCEPT = re.compile(
    r"window|chunk|kv|lora|rank|latent|rope_head|rope_dim|no_rope|head_dim|headdim|head_size|heads|n_head|groups|"
    r"attention|attn|swa|linear|lightning|conv|state|ssm|mamba|expand|d_inner|compress|index|sparse|topk|"
    r"top_k|shar|(^|_)cla(_|$)|cross|layer_types|block_type|block_config|pattern|hybrid|mixer|loop|"
    r"recurrent|lru|rwkv|time_mix",
    re.I,
)

# Name patterns of keys that never change the cache: training-only settings (dropout, init, loss),
# numerics (norms, epsilons, scales, soft-caps, RoPE frequencies), MLP/MoE/expert sizes and routing,
# output flags, token ids, kernel choices.
NOT_CACHE = re.compile(
    r"dropout|pdrop|bias|eps|epsilon|norm|init|softcap|soft_cap|scaling|theta|rope_parameters|implementation|"
    r"_impl$|_act$|activation|logit|multiplier|scale|range|alpha|beta|output_attentions|output_hidden|"
    r"use_cache|gate|proj|mlp|moe|expert|token_index|token_id|ignore_index|dt_rank|time_step|flash|beam",
    re.I,
)

# Exact keys (any depth: the last path component) that match CACHE_CONCEPT but change no cache.
HARMLESS: Mapping[str, str] = {
    "topk_method": "MoE routing: how experts are picked",
    "topk_group": "MoE routing: expert groups a token may pick from",
    "use_grouped_topk": "MoE routing: experts picked within groups",
    "top_k": "sampling (transformers' generation defaults saved in the config): no cache",
    "decoder_sparse_step": "MoE frequency (Qwen-MoE): which layers use experts, not how they attend",
    "shared_intermediate_size": "the shared expert's MLP width",
    "share_input_output_layers": "ties the input embedding and the output layer (OpenELM)",
    "chunk_size_feed_forward": "transformers' feed-forward chunking: compute only",
    "chunk_size": "the SSM/linear-attention scan kernel's chunk length: compute tiling, no cache",
    "mamba_chunk_size": "the Mamba-2 scan kernel's chunk length: compute tiling, no cache",
    "attention_softmax_in_fp32": "softmax precision: compute only",
    "parallel_attn": "Falcon's parallel attention/MLP block: the attention cache is the same",
    "query_pre_attn_scalar": "query scaling (Gemma): compute only",
    "use_mamba_kernels": "kernel choice (deprecated in transformers): the state is the same",
    "add_cross_attention": "transformers' generic encoder-decoder flag: a decoder-only model serves without it",
    "cross_attention_hidden_size": "transformers' generic encoder-decoder width: unused by decoder-only models",
    "num_reward_heads": "reward heads on the output (MiniMax-M3): no cache",
    "img_token_compression_config": "how many tokens an image becomes: the cache per token is unchanged",
    "attn_res_block_size": ("attention residuals (Kimi): a depth-wise buffer over earlier layers' outputs of the "
                            "same token, no per-request cache"),
    "attn_uses_sequence_id": "MPT's attention mask over packed sequences: no cache",
    "clip_qkv": "clips Q/K/V activations: compute only",
    "q_lora_rank": "the query projection's low rank: queries are not cached",
    "o_lora_rank": "the output projection's low rank: not cached",
    "use_flash_attn": "kernel choice",
}


# Root keys another stage reads (with its own warning when it does not understand the value).
READ_ELSEWHERE: Mapping[str, str] = {
    "kv_cache_dtype": "the precision resolver (hfkv.model.dtypes.kv_cache_declaration): a value other than auto "
                      "is a warning",
}


def expand_reads(entries: Iterable[str]) -> frozenset[str]:
    """The dotted key paths of a mapper's ``reads`` entries.

    An entry is a key (``head_dim``), aliases (``head_dim|kv_channels``), a dotted path
    (``attn_config.kv_n_heads``), sub-keys in braces (``ssm_cfg.{d_state, d_conv}``), or a list of
    objects (``block_configs[].attention.n_heads_in_group``: checked as ``block_configs``). A malformed
    entry is an error at import.
    """
    paths: set[str] = set()
    for entry in entries:
        for alias in entry.split("|"):
            paths.update(_expand_braces(alias.strip(), entry))
    return frozenset(paths)


_PATH = re.compile(r"^[A-Za-z_][\w-]*(\[\])?(\.[A-Za-z_][\w-]*(\[\])?)*$")


def _expand_braces(text: str, entry: str) -> list[str]:
    match = re.search(r"\{([^{}]*)\}", text)
    if match is None:
        path = text.replace("[]", "")
        if not _PATH.match(text):
            raise ValueError(f"reads entry {entry!r}: {text!r} is not a key path")
        return [path]
    head, tail = text[: match.start()], text[match.end():]
    out: list[str] = []
    for name in match.group(1).split(","):
        out.extend(_expand_braces(f"{head}{name.strip()}{tail}", entry))
    return out


def is_cache_key(name: str) -> bool:
    """True when a key's own name (last path component) names a cache-shaping concept."""
    return bool(CACHE_CONCEPT.search(name)) and not NOT_CACHE.search(name) and name not in HARMLESS


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, (dict, list, str)) and not value)


def unread_cache_keys(view: ConfigView, understood: Iterable[str] = ()) -> list[str]:
    """Keys of ``view``'s text config (and root) that name a cache-shaping concept and that neither a
    reader looked up nor ``understood`` (the mapper's declared reads and ignores) covers, as written in
    config.json (with the sub-config prefix)."""
    known = set(view.consumed) | set(understood) | set(READ_ELSEWHERE)
    scopes = [(view.text, view.text_key)]
    if view.text is not view.root:
        scopes.append((view.root, None))
    found: list[str] = []
    for scope, prefix in scopes:
        for key, value in scope.items():
            if scope is view.root and view.text is not view.root and key in TEXT_KEYS and isinstance(value, dict):
                continue  # the text sub-config (walked above) or a wrapper holding it
            _walk(str(key), str(key), value, known, prefix, found)
    return sorted(set(found))


def _walk(path: str, name: str, value: Any, known: set[str], prefix: str | None, found: list[str]) -> None:
    """``path``: the dotted path (as readers name it); ``name``: the key's own name (it may hold dots)."""
    if _empty(value):
        return
    if isinstance(value, dict) and any(k.startswith(path + ".") for k in known):
        for key, child in value.items():
            _walk(f"{path}.{key}", str(key), child, known, prefix, found)
        return
    if path in known:
        return
    if is_cache_key(name):
        found.append(f"{prefix}.{path}" if prefix else path)


def estimate_warning(keys: list[str], mapper: str) -> str:
    """The warning that labels the figures an estimate, naming every unread key."""
    listed = ", ".join(keys)
    what = "names a setting" if len(keys) == 1 else "name settings"
    return (f"estimate, not exact: {listed} {what} that can change the cache, and mapper {mapper} did not read "
            f"{'it' if len(keys) == 1 else 'them'}: the figures do not account for "
            f"{'it' if len(keys) == 1 else 'them'}")
