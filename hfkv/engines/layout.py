"""Parallel layouts as the engines spell them: DP, SGLang's DP attention, expert and pipeline parallelism.

A layout says which GPUs hold which share of a model and whose requests each keeps:

* ``tp`` (``--tp``): tensor parallelism. Under SGLang DP attention it is the world size of the
  group (SGLang: "the tp_size is the world size"), attention runs at ``attn_tp = tp // dp``.
* ``dp`` (``--data-parallel-size``): without DP attention, ``dp`` independent engines of ``tp × pp``
  GPUs each (vLLM's per-DP-rank engines: attention replicated per rank, each rank its own requests;
  SGLang's data-parallel replicas). With ``--enable-dp-attention`` (SGLang) the ``dp`` attention
  ranks live inside the TP group: each keeps the KV of its own requests only, at attention TP
  ``tp // dp`` (SGLang 0.5.23 resolves the deprecated spelling to ``--attn-dp-size dp``).
* ``pp`` (``--pipeline-parallel-size``): each stage holds the layers ``get_pp_indices`` gives it
  (both engines: even split, the remainder to the stages before the last) and sizes its own pool;
  the pool a request can use is the smallest stage's (vLLM takes the minimum ``num_blocks`` over
  workers, SGLang all-reduces the token capacity with MIN).
* ``ep`` (``--enable-expert-parallel``): experts sharded over the EP group (vLLM: ``tp × dp``;
  SGLang: the TP group) instead of tensor-sliced inside each TP group.

``resolve`` checks a layout the way the engines' argument checks do and raises ``LayoutRefusal``
(an ``UnsupportedModelError``) with the engine's reason, or ``UsageError`` for a value no engine
accepts. Whether the engine runs this architecture under PP is a model check, made by each engine
mode before it sizes anything, and by ``hfkv.engines.check_layout`` for a serving plan. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hfkv.errors import UnsupportedModelError, UsageError
from hfkv.model.pipeline import stage_sizes, stages
from hfkv.engines.contract import EngineInput, EngineKnobs

__all__ = ["Layout", "LayoutRefusal", "deployment", "expert_count", "rank_inputs", "resolve", "simulate_ranks",
           "stage_sizes", "stages"]
LAYOUT_KNOBS = ("data_parallel_size", "enable_dp_attention", "enable_expert_parallel", "pipeline_parallel_size")
# Config keys that count routed experts (the first positive one wins).
EXPERT_COUNT_KEYS = ("n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts", "num_routed_experts")


class LayoutRefusal(UnsupportedModelError):
    """The engine would not start with this parallel layout (its reason, one line)."""


@dataclass(frozen=True)
class Layout:
    """A resolved parallel layout (see the module docstring)."""

    tp: int = 1
    dp: int = 1
    pp: int = 1
    dp_attention: bool = False
    expert_parallel: bool = False
    engine: str = "theory"

    @property
    def attention_tp(self) -> int:
        """TP of the attention layers: ``tp // dp`` under DP attention, else ``tp``."""
        return self.tp // self.dp if self.dp_attention else self.tp

    @property
    def replicas(self) -> int:
        """Independent engine copies (DP without DP attention)."""
        return 1 if self.dp_attention else self.dp

    @property
    def request_ranks(self) -> int:
        """Groups of GPUs that each keep their own requests: DP attention ranks or DP replicas."""
        return self.dp

    @property
    def gpus(self) -> int:
        """GPUs the layout needs: ``tp × pp`` per replica."""
        return self.tp * self.pp * self.replicas

    @property
    def expert_shards(self) -> int:
        """How many GPUs of one stage share the routed experts (EP group or the TP group)."""
        if self.expert_parallel and not self.dp_attention:
            return self.tp * self.dp  # vLLM: EP spans the DP ranks
        return self.tp

    def describe(self) -> str:
        """The layout in the engines' words, e.g. "TP 8, DP attention 8" or "TP 4 × PP 2 × DP 2, EP"."""
        parts = [f"TP {self.tp}"]
        if self.pp > 1:
            parts.append(f"PP {self.pp}")
        if self.dp > 1 and not self.dp_attention:
            parts.append(f"DP {self.dp}")
        text = " × ".join(parts)
        if self.dp_attention:
            text += f", DP attention {self.dp} (attention TP {self.attention_tp})"
        if self.expert_parallel:
            text += f", EP {self.expert_shards}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"tensor_parallel_size": self.tp, "data_parallel_size": self.dp, "pipeline_parallel_size": self.pp,
                "enable_dp_attention": self.dp_attention, "enable_expert_parallel": self.expert_parallel,
                "attention_tensor_parallel_size": self.attention_tp, "replicas": self.replicas,
                "gpus": self.gpus, "expert_shards": self.expert_shards, "description": self.describe()}


def flag(value: Any, name: str) -> bool:
    """A boolean knob given as a bool or as text ("true", "1", "yes", "false", ...)."""
    if value is None or isinstance(value, bool):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise UsageError(f"--{name.replace('_', '-')} must be true or false, got {value!r}")


def size(value: Any, name: str) -> int:
    """A parallel size: a whole number ≥ 1 (None is 1)."""
    if value is None:
        return 1
    try:
        number = int(str(value))
    except ValueError:
        number = 0
    if number < 1:
        raise UsageError(f"--{name.replace('_', '-')} must be a whole number >= 1, got {value!r}")
    return number


def expert_count(config: dict) -> int:
    """Routed experts per MoE layer from the config (0 for a dense model)."""
    for key in EXPERT_COUNT_KEYS:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


def resolve(knobs: EngineKnobs, tp: int, engine: str, layers: int, config: dict | None = None) -> Layout:
    """The layout ``knobs`` ask for at tensor-parallel size ``tp``, checked as ``engine`` checks it.

    ``layers`` is the decoder layer count (a stage needs one); ``config`` the text config (experts).
    Raises ``LayoutRefusal`` with the engine's reason, ``UsageError`` for malformed values.
    """
    dp = size(knobs.data_parallel_size, "data_parallel_size")
    pp = size(knobs.pipeline_parallel_size, "pipeline_parallel_size")
    dp_attention = flag(knobs.enable_dp_attention, "enable_dp_attention")
    ep = flag(knobs.enable_expert_parallel, "enable_expert_parallel")
    if dp_attention and engine == "vllm":
        raise LayoutRefusal("vLLM has no --enable-dp-attention: its --data-parallel-size ranks already keep their "
                            "own requests (attention replicated per rank)")
    if dp_attention and tp % dp:
        # parallel_hook._handle_data_parallelism: assert cfg.tp_size % cfg.attn_dp_size == 0
        raise LayoutRefusal(f"tp_size ({tp}) must be divisible by the DP attention size ({dp}) "
                            "(SGLang: assert tp_size % attn_dp_size == 0)")
    if ep and engine == "vllm" and not expert_count(config or {}):
        # ModelConfig._verify_with_expert_parallelism
        raise LayoutRefusal("Number of experts in the model must be greater than 0 when expert parallelism is enabled.")
    if pp > max(layers, 1):
        raise UsageError(f"--pipeline-parallel-size {pp} is larger than the model's {layers} layers: "
                         "some stage would hold no layer")
    return Layout(tp=tp, dp=dp, pp=pp, dp_attention=dp_attention and dp > 1, expert_parallel=ep, engine=engine)


def rank_inputs(model: EngineInput, layout: Layout) -> list[EngineInput]:
    """One input per pipeline stage, each at the attention TP (all DP ranks of a stage are alike): the
    same replay then serves every rank of a layout."""
    return [model.for_rank(stage, layout.attention_tp) for stage in stages(list(model.layer_specs), layout.pp)]


def _pool_size(result: dict) -> float:
    """What the engines take the minimum of across ranks: vLLM ``num_blocks``, SGLang's token capacity."""
    for key in ("num_blocks", "max_total_num_tokens"):
        if result.get(key) is not None:
            return result[key]
    return -float(result.get("bytes_per_token") or 0)  # no budget: the stage with the largest cell binds


def simulate_ranks(simulate: Any, report: EngineInput, layout: Layout, budget_bytes: int | None,
                   max_model_len: int | None, knobs: EngineKnobs) -> dict:
    """One engine replay per pipeline stage (at attention TP); the figures of the stage whose pool is
    smallest, since vLLM gives every worker the minimum ``num_blocks`` and SGLang all-reduces its
    token capacity with MIN. A stage the engine refuses refuses the deployment."""
    views = rank_inputs(report, layout)
    results = [simulate(view, budget_bytes=budget_bytes, max_model_len=max_model_len, knobs=knobs) for view in views]
    binding = min(range(len(results)), key=lambda i: _pool_size(results[i]))
    result = dict(results[binding])
    notes = list(result.get("assumptions", []))
    if layout.dp_attention:
        notes.append(f"DP attention {layout.dp}: pools per GPU at attention TP {layout.attention_tp}; each DP rank "
                     "keeps its own requests")
    if layout.pp > 1:
        notes.append(f"PP {layout.pp}: stages of {', '.join(str(len(v.layer_specs)) for v in views)} layers "
                     f"(get_pp_indices); figures of stage {binding}, the smallest pool (the engines use every "
                     "stage's minimum)")
    result["assumptions"] = notes
    result["stages"] = [{"layers": len(view.layer_specs), "bytes_per_token": r.get("bytes_per_token"),
                         "pool": None if _pool_size(r) < 0 else _pool_size(r)} for view, r in zip(views, results)]
    return result


def deployment(result: dict, layout: Layout) -> dict:
    """Totals across the layout's ranks that keep their own requests (one copy of the layout)."""
    ranks = layout.request_ranks
    tokens, concurrency = result.get("kv_cache_tokens"), result.get("max_concurrency")
    return {**layout.to_dict(), "request_ranks": ranks,
            "kv_cache_tokens_total": None if tokens is None else tokens * ranks,
            "max_concurrency_total": None if concurrency is None else round(concurrency * ranks, 2)}
