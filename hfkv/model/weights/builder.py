"""The tensor list a family builder fills from a config (``Builder``), the config reader it uses
(``Cfg``: explicit defaults, ``req`` fails closed with ``Missing``), and the pieces families share
(attention projections, MoE layer flags, embeddings and head)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterable

from hfkv.model.weights.records import Tensor


class Missing(Exception):
    def __init__(self, reason: str, keys: Iterable[str] = ()):
        super().__init__(reason)
        self.reason = reason
        self.keys = tuple(keys)


class Cfg:
    """Read-only view of a (text) config with explicit defaults; ``req`` raises ``Missing``.

    A key is the config's value, else the family's ``defaults`` (a style's), else the value transformers'
    config class gives a key the config leaves out (``klass``: a dict, or a function giving one on first
    use, see ``ClassValues``): what transformers, and so the engines, build where a hand-written config
    or ``save_pretrained``'s diff omits a key. A key written as null is the author's and is never replaced."""

    def __init__(self, data: dict, defaults: dict | None = None, where: str = "",
                 klass: "dict | Callable[[], dict] | None" = None, wrapper: "ClassValues | None" = None):
        self.data = data
        self.defaults = defaults or {}
        self.where = where
        self.read: set[str] = set()  # the keys asked for (a generic layout says which size keys it left)
        self._klass = klass
        # where a class value taken is recorded (``ClassValues.taken``, by dotted key), when the values are its
        self._taken: dict[str, Any] | None = getattr(klass, "taken", None)
        self.wrapper = wrapper  # a text config's: the whole config's class values (the head's tying is read there)

    @property
    def klass(self) -> dict:
        """The config class's values (looked up on the first key the config and the defaults lack)."""
        if callable(self._klass):
            self._klass = self._klass() or {}
        return self._klass or {}

    def class_value(self, key: str) -> Any:
        """The config class's value of a key the config does not write; None when it writes it (even as null)."""
        if self._klass is None or key in self.data:
            return None
        return self.klass.get(key)

    def has(self, key: str) -> bool:
        self.read.add(key)
        return self.data.get(key) is not None or self.class_value(key) is not None

    def get(self, *keys: str, default: Any = None) -> Any:
        self.read.update(keys)
        for key in keys:
            if self.data.get(key) is not None:
                return self.data[key]
        for key in keys:
            if self.defaults.get(key) is not None:
                return self.defaults[key]
        for key in keys:
            found = self.class_value(key)
            if found is not None:
                if self._taken is not None:
                    self._taken[f"{self.where}.{key}" if self.where else key] = found
                return found
        return default

    def req(self, *keys: str, why: str = "") -> int:
        value = self.get(*keys)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            if isinstance(value, float) and value.is_integer() and value > 0:
                return int(value)
            where = f"{self.where}." if self.where else ""
            raise Missing(f"config lacks {' / '.join(where + k for k in keys)}" + (f" ({why})" if why else ""),
                           [where + k for k in keys])
        return value

    def opt(self, *keys: str, default: int = 0) -> int:
        value = self.get(*keys)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            return default
        return int(value)

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.get(key)
        return default if value is None else bool(value)


class ClassValues:
    """transformers' config class's view of a whole config.json (``hfkv.model.defaults.lookup``: the
    class its model_type names, never repo code), looked up on first use, and the view of each
    sub-config in it (``at``). Only where a config may leave class keys out: a hand-written config (no
    ``transformers_version``) or one with a text sub-config (``save_pretrained`` diffs a sub-config
    against its own class); a flat config save_pretrained wrote has every key of its class, and needs
    no import of transformers (the mappers' rule: ``ConfigView.may_omit_class_keys``)."""

    def __init__(self, config: dict, may_omit: bool) -> None:
        self.config = config
        self.may_omit = may_omit and isinstance(config.get("model_type"), str)
        self._values: dict | None = None
        self.taken: dict[str, Any] = {}  # the keys a reader took from the class, dotted, with their values

    def values(self) -> dict:
        if self._values is None:
            from hfkv.model import defaults as tfdefaults  # here: transformers is imported only for a sparse config

            found = tfdefaults.lookup([(self.config["model_type"], False)], self.config)
            self._values = found if isinstance(found, dict) else {}
        return self._values

    def at(self, path: str = "") -> "Callable[[], dict] | None":
        """A function giving the class's values of the sub-config at ``path`` (dotted; "" the root)."""
        if not self.may_omit:
            return None

        def values() -> dict:
            node: Any = self.values()
            for part in path.split(".") if path else ():
                node = node.get(part) if isinstance(node, dict) else None
            return node if isinstance(node, dict) else {}
        values.taken = self.taken  # type: ignore[attr-defined]  (where a Cfg records what it took)
        return values

    def builds_none(self, key: str) -> bool:
        """True when the config leaves ``key`` out and the class's value of it is null: transformers builds no
        such module (Gemma4Config without a vision_config builds the text model alone)."""
        return self.may_omit and key not in self.config and key in self.values() and self.values()[key] is None

    def missing(self, key: str) -> Any:
        """The class's value of a root key the config does not write (None when it does, or has none)."""
        if not self.may_omit or key in self.config:
            return None
        return self.values().get(key)


class Builder:
    """The tensor records a family adds. With ``collapse`` (the quantisation names no layer by its
    index), identical layers are one record each with their multiplicity (``layers``): DeepSeek-R1's
    61 layers price as two kinds of layer, not 985 records."""

    def __init__(self, collapse: bool = False) -> None:
        self.tensors: list[Tensor] = []
        self.notes: list[str] = []
        self.collapse = collapse
        self.times = 1  # the multiplicity of the layer being added (``layers``)

    def add(self, name, role, kind, shape, count=1, exempt=False, dtype_bytes=None, loaded=True):
        shape = tuple(map(int, shape))
        if count > 0 and (not shape or min(shape) > 0):
            self.tensors.append(Tensor(name, role, kind, shape, int(count) * self.times, exempt, dtype_bytes, loaded))

    def layers(self, prefix: str, kinds: list):
        """Yields ``(layer prefix, kind)`` for the family to add one layer of that kind: every
        layer by its index, or (``collapse``) each distinct kind once under ``prefix.*`` with the
        records it adds multiplied by how many layers have it."""
        if not self.collapse:
            for i, kind in enumerate(kinds):
                yield f"{prefix}.{i}", kind
            return
        for kind, times in Counter(kinds).items():  # (first-seen order; one pass, in C)
            self.times = times
            try:
                yield f"{prefix}.*", kind
            finally:
                self.times = 1

    def linear(self, name, out, inp, role, bias=False, count=1, exempt=False):
        self.add(name, role, "linear", (out, inp), count, exempt)
        if bias:
            self.add(name + ".bias", role, "bias", (out,), count)

    def norm(self, name, n, role="other", bias=False, count=1, dtype_bytes=None):
        self.add(name, role, "norm", (n,), count, dtype_bytes=dtype_bytes)
        if bias:
            self.add(name + ".bias", role, "norm", (n,), count, dtype_bytes=dtype_bytes)

    def param(self, name, shape, role="other", count=1, dtype_bytes=None):
        self.add(name, role, "param", shape if isinstance(shape, tuple) else (shape,), count, dtype_bytes=dtype_bytes)

    def mlp(self, prefix, hidden, inter, role, gated=True, bias=False, count=1, names=("gate_proj", "up_proj", "down_proj")):
        if gated:
            self.linear(f"{prefix}.{names[0]}", inter, hidden, role, bias, count)
        self.linear(f"{prefix}.{names[1]}", inter, hidden, role, bias, count)
        self.linear(f"{prefix}.{names[2]}", hidden, inter, role, bias, count)


def head_counts(c: Cfg, hidden: int) -> tuple[int, int, int]:
    heads = c.req("num_attention_heads", "n_head", "num_heads", "n_heads")
    kv = c.opt("num_key_value_heads", "num_kv_heads", "n_head_kv", default=heads)
    head_dim = c.opt("head_dim", "attention_head_dim", default=hidden // heads)
    return heads, kv, head_dim


def gqa(b: Builder, p: str, hidden: int, heads: int, kv: int, hd: int, role="attention", qkv_bias=False,
         o_bias=False, qk_norm=False, q_gate=False, v=True, o_name="o_proj"):
    b.linear(f"{p}.q_proj", heads * hd * (2 if q_gate else 1), hidden, role, qkv_bias)
    b.linear(f"{p}.k_proj", kv * hd, hidden, role, qkv_bias)
    if v:
        b.linear(f"{p}.v_proj", kv * hd, hidden, role, qkv_bias)
    b.linear(f"{p}.{o_name}", hidden, heads * hd, role, o_bias)
    if qk_norm:
        b.norm(f"{p}.q_norm", hd, role)
        b.norm(f"{p}.k_norm", hd, role)


def moe_flags(c: Cfg, layers: int) -> list[bool]:
    """Per layer: does it carry routed experts? ``mlp_layer_types`` > ``moe_layer_freq`` as a list >
    Llama 4's ``moe_layers`` / ``interleave_moe_layer_step`` > Jamba's ``expert_layer_period`` /
    ``expert_layer_offset`` > ``first_k_dense_replace`` (AFMoE's ``num_dense_layers``) / ``moe_layer_freq``
    > ``decoder_sparse_step`` / ``mlp_only_layers`` > every layer."""
    types = c.get("mlp_layer_types")
    if isinstance(types, list) and len(types) >= layers:
        return [str(t).lower() not in ("dense", "mlp") for t in types[:layers]]
    freq = c.get("moe_layer_freq")
    if isinstance(freq, list) and len(freq) >= layers:
        return [bool(f) for f in freq[:layers]]
    listed = c.get("moe_layers")
    if isinstance(listed, list):
        chosen = {i for i in listed if isinstance(i, int)}
        return [i in chosen for i in range(layers)]
    if c.has("interleave_moe_layer_step"):
        step = c.opt("interleave_moe_layer_step", default=1)
        return [(i + 1) % step == 0 for i in range(layers)]
    if c.has("expert_layer_period"):  # Jamba: layer i has experts when i % period == offset
        period = c.opt("expert_layer_period", default=1)
        offset = c.opt("expert_layer_offset")
        return [i % period == offset for i in range(layers)]
    only = set(c.get("mlp_only_layers") or [])
    if c.has("first_k_dense_replace") or c.has("num_dense_layers") or c.has("moe_layer_freq"):
        k = c.opt("first_k_dense_replace", "num_dense_layers")
        f = c.opt("moe_layer_freq", default=1)
        return [i >= k and i % f == 0 and i not in only for i in range(layers)]
    step = c.opt("decoder_sparse_step", default=1)
    return [i not in only and (i + 1) % step == 0 for i in range(layers)]


EXPERT_KEYS = ("n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts")


def dense_only(c: Cfg, mt: str) -> None:
    """Fail closed when a family priced as dense names routed experts (a silent dense count would be wrong)."""
    for key in EXPERT_KEYS:
        value = c.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 1:
            raise Missing(f"config names {key}={value} but model_type {mt!r} is priced as a dense model here", [key])


def require_present(c: Cfg, key: str, why: str) -> None:
    if key not in c.data and c.class_value(key) is None:
        where = f"{c.where}." if c.where else ""
        raise Missing(f"config lacks {where}{key} ({why})", [where + key])


def expert_count(c: Cfg) -> int:
    return c.req("n_routed_experts", "num_experts", "num_local_experts", why="routed expert count")


def is_untied(c: Cfg, default: bool, top: dict | None = None) -> bool:
    tie = c.get("tie_word_embeddings")
    if tie is None and top is not None:
        tie = top.get("tie_word_embeddings")
    if tie is None:
        tie = default
    return not bool(tie)


def embed_head(b: Builder, c: Cfg, vocab: int, hidden: int, untied: bool, prefix="model", embed="embed_tokens",
                norm="norm", head="lm_head"):
    b.add(f"{prefix}.{embed}", "embedding", "embedding", (vocab, hidden))
    if norm:
        b.norm(f"{prefix}.{norm}", hidden)
    if untied:
        b.add(head, "embedding", "lm_head", (vocab, hidden))
