"""SGLang 0.5.23's Mamba / linear-attention state pool (``KVCacheConfigurator._handle_max_mamba_cache``),
reserved before any token pool (``mem_cache/kv_cache_configurator.py``, ``_handle_max_mamba_cache``).

One request slot holds the recurrent state of every linear / Mamba / conv layer: SSM state in fp32
(or ``--mamba-ssm-dtype``, or the config's ``mamba_ssm_dtype`` where SGLang's config class reads it),
conv state in bf16. The pool takes ``rest·r/(1+r)`` of the budget (r = 0.9, or the architecture's own
default), ``max_mamba_cache_size = (share − slot) // slot``, and charges ``size + 1`` slots (one
padding slot); the rest is the token pools' budget. With the radix cache off and a running-request
cap, the cap is the size. Each running request holds ``ratio`` slots (``_calculate_mamba_ratio``):
1 without radix cache, 3, or 3 + 2 where the Mamba radix cache keeps the extra buffer.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

from hfkv.errors import UnsupportedModelError
from hfkv.model import dtypes
from hfkv.model.specs import LayerSpec

from hfkv.engines.contract import EngineInput, EngineKnobs
from hfkv.engines.sglang import registry
from hfkv.engines.sglang.rules import rules
from hfkv.engines.sglang.pools import GIB

DEFAULT_SSM_DTYPE = "fp32"  # configs/mamba_utils.py:mamba2_state_dtype
DEFAULT_CONV_DTYPE = "bf16"  # SGLANG_MAMBA_CONV_DTYPE
DEFAULT_MEMORY_RATIO = 0.9  # arg_groups/fields: mamba_full_memory_ratio
BASE_SLOTS = 3  # MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO
EXTRA_BUFFER_SLOTS = 2  # get_mamba_tracking_slots(extra_buffer=True, overlap=True)


def state_precision(model: EngineInput, knobs: EngineKnobs, assumptions: list[str]) -> dtypes.Precision:
    """SGLang's state dtypes: conv bf16; SSM from --mamba-ssm-dtype, the config (where the model type's
    config class reads it, ``ssm_dtype_from_config``), else fp32."""
    ssm = knobs.mamba_ssm_dtype
    release = rules(knobs.engine_version)
    if ssm is None and release.mamba_ssm_dtype == "float32":
        ssm = DEFAULT_SSM_DTYPE
        assumptions.append(f"Mamba SSM state {ssm} (--mamba-ssm-dtype's default in SGLang {release.label}), "
                           f"conv state {DEFAULT_CONV_DTYPE}")
    if ssm is None:
        configured = (model.config or {}).get("mamba_ssm_dtype")
        if configured and registry.model_type(model).ssm_dtype_from_config and dtypes.canonical(configured):
            ssm = dtypes.canonical(configured)
            assumptions.append(f"Mamba SSM state {ssm} (config mamba_ssm_dtype), conv state {DEFAULT_CONV_DTYPE}")
        else:
            ssm = DEFAULT_SSM_DTYPE
            assumptions.append(f"Mamba SSM state {ssm}, conv state {DEFAULT_CONV_DTYPE} (SGLang defaults)")
    return dtypes.Precision(kv=model.precision.kv, state=dtypes.require(ssm, "--mamba-ssm-dtype"),
                            conv=DEFAULT_CONV_DTYPE)


def slot_bytes(layers: list[LayerSpec], p: dtypes.Precision, tp: int,
               whole: Callable[[Any], bool] = lambda part: False) -> Fraction:
    """``mamba_cache_per_req``: Σ recurrent state over the linear / Mamba / conv layers; parts ``whole``
    selects are kept unsplit on every TP rank."""
    return sum((Fraction(part.state_bytes(p, 1 if whole(part) else tp))
                for layer in layers for part in layer.parts if part.recurrent), Fraction(0))


def memory_ratio(model: EngineInput, knobs: EngineKnobs, assumptions: list[str]) -> float:
    """``mamba_full_memory_ratio``: the knob, except an architecture's own default (its model override's)
    while the knob is at SGLang's."""
    ratio = float(knobs.mamba_full_memory_ratio)
    own = [f for f in registry.arch_facts(model) if f.mamba_full_memory_ratio is not None]
    if ratio == DEFAULT_MEMORY_RATIO and own:
        assumptions.append(f"mamba_full_memory_ratio = {own[0].mamba_full_memory_ratio} (SGLang's default for "
                           f"{own[0].architecture}, set by its model override)")
        return own[0].mamba_full_memory_ratio
    return ratio


def slots_per_request(model: EngineInput, radix: bool) -> int:
    """``_calculate_mamba_ratio``: state slots per running request (the first architecture decides)."""
    if not radix:
        return 1
    first = registry.first_arch_facts(model)
    return BASE_SLOTS + (EXTRA_BUFFER_SLOTS if first and first.mamba_extra_buffer else 0)


def reserve(budget: int, per_slot: int, knobs: EngineKnobs, radix: bool, ratio: float,
            assumptions: list[str]) -> tuple[int, int]:
    """(max_mamba_cache_size, bytes left for the token pools): ``_handle_max_mamba_cache`` then
    ``int(rest·2^30)``, in SGLang's floats."""
    rest = budget / GIB
    given = knobs.max_running_requests
    if not radix and given is not None:
        size = max(1, int(given))
        assumptions.append("radix cache off: max_mamba_cache_size = max_running_requests")
    else:
        share = rest * ratio / (1 + ratio) * GIB
        size = int((share - per_slot) // per_slot)
        assumptions.append(f"Mamba state pool reserved first: {ratio}/{1 + ratio:g} of the budget, "
                           "plus one padding slot")
    if size <= 0:
        raise UnsupportedModelError("SGLang: 'Not enough GPU memory for hybrid (mamba/linear-attention) state "
                                    f"cache' (max_mamba_cache_size={size})")
    rest -= (size + 1) * per_slot / GIB
    return size, int(rest * GIB)
