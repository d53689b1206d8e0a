"""Bytes per stored tensor by quantisation method, scales and zero points included: fp8 (per tensor,
per channel, blocks), NVFP4 and MXFP4, compressed-tensors ``config_groups`` with their ignore lists,
AWQ/GPTQ, bitsandbytes; and which tensors each method leaves in the checkpoint's own dtype."""

from __future__ import annotations

import fnmatch
import functools
import re
from fractions import Fraction
from typing import Any, Callable

from hfkv.model.weights.builder import Missing
from hfkv.model.weights.loaded import loaded_base, mxfp4_marlin_shape
from hfkv.model.weights.records import Tensor


_DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "float8_e4m3fn": 1,
                "float8_e5m2": 1, "uint8": 1, "int8": 1, "float8_e8m0fnu": 1}


def _dtype_name(value: Any) -> str:
    return str(value or "").replace("torch.", "").strip().lower()


def base_dtype(config: dict) -> tuple[int, str, bool]:
    """(bytes, name, stated) of the checkpoint's unquantised tensors."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    for src in (config, text):
        for key in ("torch_dtype", "dtype"):
            name = _dtype_name(src.get(key))
            if name in _DTYPE_BYTES and _DTYPE_BYTES[name] >= 2:
                return _DTYPE_BYTES[name], name, True
    return 2, "bfloat16", False


def quantization_config(config: dict) -> dict | None:
    for src in (config, config.get("text_config") if isinstance(config.get("text_config"), dict) else {}):
        q = src.get("quantization_config") or src.get("compression_config")
        if isinstance(q, dict) and q:
            return q
    return None


_NAME_PREFIXES = ("model.language_model.", "language_model.model.", "language_model.", "model.", "backbone.",
                  "transformer.")
# any run of those prefixes at the start of a name (one pass: a name is stripped once per tensor and pattern)
_PREFIX_RUN = re.compile("^(?:" + "|".join(re.escape(p) for p in _NAME_PREFIXES) + ")+")


@functools.lru_cache(maxsize=65536)
def _strip(name: str) -> str:
    return _PREFIX_RUN.sub("", name, count=1)


@functools.lru_cache(maxsize=65536)
def _variants(name: str) -> tuple[str, ...]:
    core = _strip(name)
    return (name, core, "model." + core, "model.language_model." + core, "language_model.model." + core,
            "model.layers." + core[len("layers."):] if core.startswith("layers.") else core)


@functools.lru_cache(maxsize=4096)
def _matcher(pattern: str, mode: str) -> Callable[[str], bool]:
    """The test of a tensor name against one module pattern, built once per pattern (Kimi-K3's six
    regular expressions against every record were three quarters of its estimate's time): ``re:`` a
    regular expression, a glob, else a module path (``substr``: contained; ``exact``: the module itself
    or one of its parents or children), each against the name with its wrapper prefixes varied."""
    if pattern.startswith("re:"):
        rx = re.compile(pattern[3:])
        return lambda name: any(map(rx.match, _variants(name)))
    if any(ch in pattern for ch in "*?["):
        rx = re.compile(f"(?:{fnmatch.translate(pattern)})|(?:{fnmatch.translate(_strip(pattern))})")
        return lambda name: any(map(rx.match, _variants(name)))
    core = _strip(pattern)
    if mode == "substr":
        return lambda name: core in _strip(name) or pattern in name
    parent, child = "." + core, core + "."
    return lambda name: (own := _strip(name)) == core or own.endswith(parent) or own.startswith(child)


def _matches(name: str, pattern: str, mode: str) -> bool:
    return _matcher(str(pattern), mode)(name)


class _Scheme:
    """How one quantised linear is stored: ``linear_bytes(out, in)`` includes scales / zero points."""

    def __init__(self, label: str, fn):
        self.label = label
        self.fn = fn
        self._bytes: dict[tuple[int, int, int], Fraction] = {}  # a model repeats a few shapes many times

    def linear_bytes(self, out: int, inp: int, count: int = 1) -> Fraction | int:
        """Bytes of ``count`` such linears (kept per shape: no Fraction arithmetic for a shape seen before)."""
        found = self._bytes.get((out, inp, count))
        if found is None:
            found = self.fn(out, inp) * count
            # a whole number of bytes (most shapes, even in 4 bits) as an int: the sums stay integer sums
            if type(found) is not int:
                found = Fraction(found)
                found = found.numerator if found.denominator == 1 else found
            self._bytes[(out, inp, count)] = found
        return found


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _ct_scheme(weights: dict, base: int, input_acts: dict | None, fmt: str) -> _Scheme:
    bits = int(weights.get("num_bits") or 8)
    kind = str(weights.get("type") or "int")
    strategy = str(weights.get("strategy") or "tensor")
    group = weights.get("group_size")
    block = weights.get("block_structure")
    symmetric = weights.get("symmetric", True)
    scale_name = _dtype_name(weights.get("scale_dtype"))
    if scale_name in _DTYPE_BYTES:
        scale_b = _DTYPE_BYTES[scale_name]
    elif kind == "float" and bits == 4:
        scale_b = 1  # nvfp4: fp8 scales; mxfp4: e8m0 scales
    else:
        scale_b = base
    fmt = str(weights.get("format") or fmt or "")
    packed = "pack" in fmt and kind == "int"
    zp_name = _dtype_name(weights.get("zp_dtype"))
    static_input = isinstance(input_acts, dict) and not input_acts.get("dynamic", True)

    def fn(out: int, inp: int):
        total = Fraction(out * inp * bits, 8)
        if strategy in ("group", "tensor_group"):
            g = int(group or 128)
            scales = out * _ceil(inp, g)
        elif strategy == "channel":
            scales = out
        elif strategy == "block":
            bo, bi = (block or [128, 128])[:2]
            scales = _ceil(out, int(bo)) * _ceil(inp, int(bi))
        else:
            scales = 1
        total += scales * scale_b
        if strategy == "tensor_group":
            total += 4  # weight_global_scale (fp32)
        if not symmetric:
            if packed:
                total += Fraction(scales * bits, 8)
            else:
                total += scales * _DTYPE_BYTES.get(zp_name, 1)
        if packed:
            total += 16  # weight_shape int64[2]
        if static_input:
            total += 4  # input (global) scale
        return total

    sym = "" if symmetric else " asym"
    grp = f" g{group}" if strategy in ("group", "tensor_group") else ""
    return _Scheme(f"{kind}{bits} {strategy}{grp}{sym}", fn)


_EXPERT_INDEX = re.compile(r"\.experts\.\d+\.")
_LAYER_INDEX = re.compile(r"\.layers\.\d+\.")


def _modelopt(algo: str, g: int) -> tuple[_Scheme, str] | None:
    """A modelopt format's (scheme, label): bytes of one quantised linear, its scales included."""
    if algo == "NVFP4":
        return (_Scheme(f"nvfp4 g{g}", lambda o, i: Fraction(o * i, 2) + o * _ceil(i, g) + 8),
                f"modelopt NVFP4 (4 bit + fp8 scale per {g} + fp32 per-tensor scales)")
    if algo == "MXFP8":
        # fp8 e4m3 weights and one e8m0 scale byte per 32 inputs (the OCP MX block); activations are
        # scaled at run time, so no input scale is stored
        return _Scheme("mxfp8", lambda o, i: o * i + o * _ceil(i, 32)), "MXFP8 (fp8 + e8m0 scale per 32)"
    if algo in ("FP8", "FP8_PER_TENSOR"):
        return (_Scheme("fp8 per-tensor", lambda o, i: o * i + 8),
                "modelopt FP8 (per-tensor fp32 weight and input scales)")
    if algo in ("FP8_PB_WO", "FP8_BLOCK"):
        return _Scheme("fp8 block 128", lambda o, i: o * i + 4 * _ceil(o, 128) * _ceil(i, 128)), "modelopt FP8 block"
    return None


class Quantization:
    """Which tensors a method quantises, and at how many bytes."""

    def __init__(self, q: dict | None, base: int):
        self.base = base
        self.label = "none"
        self.notes: list[str] = []
        self.unknown: Missing | None = None
        self.default: _Scheme | None = None
        self.rules: list[tuple[list[str], _Scheme]] = []  # compressed-tensors groups with module targets
        self.ignore: list[str] = []
        self.ignore_mode = "exact"
        self.experts_only = False
        self.towers = True
        self.lm_head = False
        self.per_layer: dict[str, _Scheme] = {}
        # the shape an engine holds a tensor in when it pads it (``loaded.mxfp4_marlin_shape``), else None
        self.padded: Callable[[Tensor], tuple[int, ...] | None] | None = None
        self.by_layer: dict[str, _Scheme] = {}  # MIXED_PRECISION: a linear's name (no expert index) -> format
        self.by_kind: dict[str, _Scheme | None] = {}  # ... and with no layer index (None: the layers differ)
        if not q:
            return
        method = str(q.get("quant_method") or "").lower()
        self.method = method
        self.label = method
        if method in ("fp8", "fbgemm_fp8"):
            block = q.get("weight_block_size")
            static = str(q.get("activation_scheme") or "dynamic") == "static"
            if method == "fbgemm_fp8":
                self.default = _Scheme("fp8 per-channel", lambda o, i: o * i + 4 * o)
                self.label = "fbgemm_fp8 (fp8 + fp32 per-channel scales)"
            elif isinstance(block, (list, tuple)) and len(block) == 2:
                bo, bi = int(block[0]), int(block[1])
                self.default = _Scheme(f"fp8 block {bo}x{bi}", lambda o, i: o * i + 4 * _ceil(o, bo) * _ceil(i, bi))
                self.label = f"fp8 (block {bo}x{bi}, fp32 scale per block)"
            else:
                self.default = _Scheme("fp8 per-tensor", lambda o, i: o * i + 4 + (4 if static else 0))
                self.label = "fp8 (per-tensor fp32 scale)"
            self.ignore = list(q.get("modules_to_not_convert") or q.get("ignored_layers") or [])
            self.ignore_mode = "substr"
        elif method == "mxfp4":
            self.default = _Scheme("mxfp4", lambda o, i: Fraction(o * i, 2) + o * _ceil(i, 32))
            self.experts_only = True
            self.padded = mxfp4_marlin_shape
            self.label = ("mxfp4 (routed experts: 4 bit + e8m0 scale per 32, as vLLM's Marlin backend holds them: "
                          "padded to 256 × 128; rest unquantised)")
        elif method == "modelopt":
            algo = str(q.get("quant_algo") or "").upper()
            groups = q.get("config_groups") or {}
            g = int(q.get("group_size") or next((v.get("weights", {}).get("group_size") for v in groups.values()
                                                 if isinstance(v, dict)), None) or 16)
            if algo == "MIXED_PRECISION":
                # only the linears quantized_layers names are quantised: the exclusions say nothing more
                self._mixed(q.get("quantized_layers"))
                return
            else:
                found = _modelopt(algo, g)
                if found is None:
                    self.unknown = Missing(f"modelopt quant_algo {algo or '(none)'!r} is not priced by this estimator",
                                            ["quantization_config.quant_algo"])
                    return
                self.default, self.label = found
            self.ignore = list(q.get("exclude_modules") or q.get("ignore") or [])
            self.ignore_mode = "glob"
            self.lm_head = False  # modelopt never quantises lm_head by default
        elif method == "compressed-tensors":
            fmt = str(q.get("format") or "")
            for gname, group in (q.get("config_groups") or {}).items():
                if not isinstance(group, dict) or not isinstance(group.get("weights"), dict):
                    continue
                scheme = _ct_scheme(group["weights"], base, group.get("input_activations"), group.get("format") or fmt)
                targets = [str(t) for t in (group.get("targets") or ["Linear"])]
                self.rules.append((targets, scheme))
            if not self.rules:
                self.unknown = Missing("compressed-tensors config without weight config_groups",
                                        ["quantization_config.config_groups"])
                return
            self.ignore = list(q.get("ignore") or [])
            self.lm_head = True
            self.label = "compressed-tensors (" + "; ".join(s.label for _, s in self.rules) + ")"
        elif method in ("awq", "gptq"):
            bits = int(q.get("bits") or q.get("w_bit") or 4)
            group = int(q.get("group_size") or q.get("q_group_size") or 128)
            if method == "awq":
                zero = q.get("zero_point", True)

                def awq(o, i, bits=bits, group=group, zero=zero):
                    g = i if group <= 0 else group
                    groups = _ceil(i, g)
                    return Fraction(o * i * bits, 8) + groups * o * 2 + (Fraction(groups * o * bits, 8) if zero else 0)
                self.default = _Scheme(f"awq int{bits} g{group}", awq)
                self.label = f"awq (int{bits}, fp16 scales + packed zeros per {group})"
            else:
                def gptq(o, i, bits=bits, group=group):
                    g = i if group <= 0 else group
                    groups = _ceil(i, g)
                    return Fraction(o * i * bits, 8) + groups * o * 2 + Fraction(groups * o * bits, 8) + 4 * i
                self.default = _Scheme(f"gptq int{bits} g{group}", gptq)
                self.label = f"gptq (int{bits}, fp16 scales + packed zeros per {group}, int32 g_idx)"
                self.lm_head = bool(q.get("lm_head"))
            self.ignore = list(q.get("modules_to_not_convert") or [])
            self.ignore_mode = "substr"
            self.towers = False
        elif method == "bitsandbytes" or q.get("load_in_4bit") or q.get("load_in_8bit"):
            if q.get("load_in_4bit") or q.get("_load_in_4bit"):
                double = bool(q.get("bnb_4bit_use_double_quant"))

                def bnb4(o, i, double=double):
                    n = o * i
                    blocks = _ceil(n, 64)
                    if double:
                        return _ceil(n, 2) + blocks + 4 * _ceil(blocks, 256) + 4 * 256 + 4 * 16
                    return _ceil(n, 2) + 4 * blocks + 4 * 16
                self.default = _Scheme("bnb 4-bit", bnb4)
                self.label = (f"bitsandbytes 4-bit {q.get('bnb_4bit_quant_type') or 'fp4'} (blocksize 64, "
                              f"{'double-quantised' if double else 'fp32'} absmax)")
                self.notes.append("bitsandbytes: the per-tensor quant_state JSON (~100 B) is not counted")
            elif q.get("load_in_8bit") or q.get("_load_in_8bit"):
                self.default = _Scheme("bnb int8", lambda o, i: o * i + 4 * o)
                self.label = "bitsandbytes int8 (fp32 row scales)"
            else:
                self.unknown = Missing("bitsandbytes config with neither load_in_4bit nor load_in_8bit",
                                        ["quantization_config.load_in_4bit"])
                return
            self.ignore = list(q.get("llm_int8_skip_modules") or [])
            self.ignore_mode = "substr"
            self.notes.append("bitsandbytes: per-expert nn.Linear layers assumed (checkpoints saved by "
                              "transformers 4.x); fused 3-D expert parameters would stay unquantised")
        else:
            self.unknown = Missing(f"quantization method {method or '(none)'!r} is not priced by this estimator",
                                    ["quantization_config.quant_method"])

    def _mixed(self, layers: Any) -> bool:
        """modelopt's MIXED_PRECISION: ``quantized_layers`` names each quantised linear with its format
        (MiniMax-M3-NVFP4: NVFP4 experts, MXFP8 attention and dense MLPs); every linear it does not
        name is stored unquantised. Kept by name with the expert index dropped (a layer's experts share
        one format) and, where every layer agrees, with the layer index dropped too."""
        if not isinstance(layers, dict) or not layers:
            self.unknown = Missing("modelopt MIXED_PRECISION without quantized_layers",
                                    ["quantization_config.quantized_layers"])
            return False
        schemes: dict[tuple[Any, Any], tuple[_Scheme, str]] = {}
        named: dict[str, _Scheme] = {}
        # 22,422 entries for MiniMax-M3, 98% of them one per expert: the expert index is cut with string
        # methods and each (algorithm, group) looked up once, so the pass costs ~1 µs an entry
        for name, spec in layers.items():
            head, sep, tail = str(name).rpartition(".experts.")
            if sep:
                name = f"{head}.experts.*.{tail.partition('.')[2]}"
            spec = spec if isinstance(spec, dict) else {}
            raw = (spec.get("quant_algo"), spec.get("group_size"))
            found = schemes.get(raw)
            if found is None:
                found = _modelopt(str(raw[0] or "").upper(), int(raw[1] or 16))
                if found is None:
                    self.unknown = Missing(f"modelopt quant_algo {raw[0]!r} (quantized_layers.{name}) is not priced "
                                            "by this estimator", ["quantization_config.quantized_layers"])
                    return False
                schemes[raw] = found
            if named.setdefault(name, found[0]) is not found[0]:
                self.unknown = Missing(f"quantized_layers gives the experts of {head} more than one format",
                                        ["quantization_config.quantized_layers"])
                return False
        for name, scheme in named.items():
            key = _strip(name)
            self.by_layer[key] = scheme
            kind = _LAYER_INDEX.sub(".layers.*.", "." + key)[1:]
            self.by_kind[kind] = scheme if self.by_kind.get(kind, scheme) is scheme else None
        self.label = "modelopt mixed precision (" + "; ".join(label for _, label in schemes.values()) + ")"
        return True

    def _mixed_scheme(self, name: str) -> _Scheme | None:
        key = _EXPERT_INDEX.sub(".experts.*.", _strip(name))
        found = self.by_layer.get(key)
        return found if found is not None else self.by_kind.get(key)

    def names_layers(self) -> bool:
        """Whether a module pattern of the quantisation (ignore lists, group targets) holds a digit,
        e.g. ``model.layers.61`` (an MTP layer left unquantised): such a pattern can single out one
        layer, so every layer keeps its own name instead of one record per kind of layer."""
        patterns = [*self.ignore, *(t for targets, _ in self.rules for t in targets)]
        return (any(ch.isdigit() for pattern in patterns for ch in str(pattern))
                or any(scheme is None for scheme in self.by_kind.values()))

    def fp4_experts(self) -> None:
        """DeepSeek-V4 ``expert_dtype: fp4``: routed experts stored as e2m1 (packed 2 per byte) with a ue8m0
        scale per 32, whatever the (fp8) quantization_config says for the rest."""
        self.expert_scheme = _Scheme("fp4 experts", lambda o, i: Fraction(o * i, 2) + o * _ceil(i, 32))
        self.label += "; routed experts fp4 (e2m1 + ue8m0 scale per 32, expert_dtype)"

    def scheme_for(self, t: Tensor) -> _Scheme | None:
        if getattr(self, "expert_scheme", None) is not None and t.kind == "linear" and ".experts." in t.name:
            return self.expert_scheme
        if t.exempt or t.kind not in ("linear", "lm_head") or self.default is None and not self.rules and not self.by_layer:
            return None
        if t.kind == "lm_head" and not self.lm_head:
            return None
        if self.experts_only and t.role not in ("routed_experts",) and not (t.role == "mtp" and ".experts." in t.name):
            return None
        if t.role == "towers" and not self.towers:
            return None
        if any(_matches(t.name, pat, self.ignore_mode) for pat in self.ignore):
            return None
        if self.by_layer:
            return self._mixed_scheme(t.name)
        if self.rules:
            for targets, scheme in self.rules:
                for target in targets:
                    if target in ("Linear", "nn.Linear") or _matches(t.name, target, "exact"):
                        return scheme
            return None
        return self.default

    def bytes_of(self, t: Tensor) -> Fraction | int:
        """Bytes of ``t`` as loaded: an exact integer when it is stored unquantised (most tensors: summed
        as integers, which a 100,000-layer config needs to stay fast), else a Fraction (scales, packing)."""
        if not t.loaded:
            return 0
        if self.padded is not None:
            shape = self.padded(t)
            if shape is not None:
                t = t._replace(shape=shape)
        return self.stored_bytes_of(t)

    def stored_bytes_of(self, t: Tensor) -> Fraction | int:
        """Bytes of ``t`` in the checkpoint's files."""
        scheme = self.scheme_for(t)
        if scheme is None or len(t.shape) != 2:
            return t.numel * (t.dtype_bytes or self.base)
        out, inp = t.shape
        return scheme.linear_bytes(out, inp, t.count)


def loaded_quantization(config: dict) -> Quantization:
    """How ``config``'s tensors are held once loaded: its quantization_config's method over unquantised
    elements at the width the engines load (``loaded_base``), with fp4 routed experts where the config's
    ``expert_dtype`` says so (DeepSeek-V4). The one place the estimate and the per-rank padding take it from."""
    quant = Quantization(quantization_config(config), loaded_base(base_dtype(config)[0]))
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    if str(text.get("expert_dtype") or config.get("expert_dtype") or "").lower() in ("fp4", "mxfp4"):
        quant.fp4_experts()
    return quant
