"""The inverse question: how few GPUs, and which layout, hold N requests of S tokens.

``search`` enumerates layouts — the GPU count from 1 to ``max_gpus``, tensor parallelism (a power of
two, within a node), pipeline stages and data-parallel replicas filling the count, SGLang's DP
attention, expert parallelism for a MoE model, and the KV cache dtype — and asks each engine, as its
engine mode does, whether it would start and how many requests of ``context`` tokens fit in its own
budget at ``--max-model-len`` = ``context`` (weights, reserve, pools: the verdict of
``hfkv.planning.verdict``). A layout is kept when the engine starts it and it holds ``requests`` even
at the low end of the reserve's estimate band; the others are listed with why they were dropped
(``marginal``: it holds them only within the band). The first kept layout is the one with the fewest
GPUs (among those, the KV cache at the model's dtype before fp8, then the most requests per GPU); the
alternatives follow by requests per GPU (ties: fewer GPUs, fewer pipeline stages, smaller TP).
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from hfkv.engines.contract import knob_args
from hfkv.engines.layout import expert_count
from hfkv.errors import HfkvError, UsageError
from hfkv.model.report import Report
from hfkv.planning.enrich import enrich
from hfkv.planning.gpus import GpuPreset, get_gpu, parse_gpu
from hfkv.units import format_tokens

ENGINE_CHOICES = {"vllm": ("vllm",), "sglang": ("sglang",), "both": ("vllm", "sglang")}
KV_DTYPES = ("auto", "fp8")


@dataclass(frozen=True)
class Layout:
    """One deployment to try: ``gpus`` of the preset, TP × PP × DP (DP attention: DP ranks inside TP)."""

    engine: str
    gpus: int
    tp: int
    pp: int = 1
    dp: int = 1
    dp_attention: bool = False
    ep: bool = False
    kv_cache_dtype: str = "auto"

    def knobs(self) -> dict[str, Any]:
        """The engine knobs of this layout (``EngineKnobs`` names)."""
        return {"data_parallel_size": self.dp, "pipeline_parallel_size": self.pp,
                "enable_dp_attention": self.dp_attention, "enable_expert_parallel": self.ep}

    def describe(self) -> str:
        words = [f"TP {self.tp}"]
        if self.pp > 1:
            words.append(f"PP {self.pp}")
        if self.dp_attention:
            words.append(f"DP attention {self.dp}")
        elif self.dp > 1:
            words.append(f"DP {self.dp}")
        if self.ep:
            words.append("EP")
        return ", ".join(words) + f", KV {self.kv_cache_dtype}"


@dataclass(frozen=True)
class Outcome:
    """What one engine says of one layout: ``status`` kept, marginal (holds them only within the
    reserve's band), too-few, weights (they fill the engine's budget), unknown (the weights are) or
    refused (the engine would not start it); ``requests`` whole requests of the context across the
    deployment (None when it does not start), ``requests_low`` at the low end of the band."""

    layout: Layout
    status: str
    requests: int | None
    requests_low: int | None
    reason: str
    verdict: str | None
    command: str

    @property
    def requests_per_gpu(self) -> float:
        return (self.requests or 0) / self.layout.gpus

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self.layout), "status": self.status, "requests": self.requests,
                "requests_low": self.requests_low, "requests_per_gpu": round(self.requests_per_gpu, 3), "reason": self.reason, "verdict": self.verdict,
                "command": self.command}


@dataclass
class Search:
    """The layouts tried for ``requests`` requests of ``context`` tokens on ``gpu``: ``kept`` (ranked)
    and ``dropped`` (with why)."""

    model: str
    requests: int
    context: int
    gpu: str
    max_gpus: int = 8
    kept: list[Outcome] = field(default_factory=list)
    dropped: list[Outcome] = field(default_factory=list)

    @property
    def best(self) -> Outcome | None:
        return self.kept[0] if self.kept else None

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "requests": self.requests, "context": self.context, "gpu": self.gpu,
                "max_gpus": self.max_gpus,
                "best": self.best.to_dict() if self.best else None,
                "kept": [o.to_dict() for o in self.kept], "dropped": [o.to_dict() for o in self.dropped]}


def _powers_of_two(limit: int) -> list[int]:
    out, n = [], 1
    while n <= limit:
        out.append(n)
        n *= 2
    return out


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def layouts(engines: Iterable[str], max_gpus: int, gpus_per_node: int, moe: bool,
            kv_dtypes: Iterable[str] = KV_DTYPES) -> list[Layout]:
    """Every layout to try: for each GPU count, TP a power of two within a node that divides it, PP
    any divisor of the rest and DP what is left (GPUs = TP × PP × DP); SGLang also with DP attention at
    DP = TP (no other replicas); with and without EP for a MoE model whose experts span several GPUs."""
    out = []
    for engine in engines:
        for gpus in range(1, max_gpus + 1):
            for tp in _powers_of_two(min(gpus, gpus_per_node)):
                if gpus % tp:
                    continue
                for pp in _divisors(gpus // tp):
                    dp = gpus // (tp * pp)
                    shapes = [(dp, False)]
                    if engine == "sglang" and dp == 1 and tp > 1:
                        shapes.append((tp, True))  # DP attention ranks inside the TP group
                    for dp_, attention in shapes:
                        for ep in ((False, True) if moe and tp * (1 if attention else dp_) > 1 else (False,)):
                            for kv in kv_dtypes:
                                out.append(Layout(engine, gpus, tp, pp, dp_, attention, ep, kv))
    return out


def search(inspect_at: Callable[..., Report], model: str, *, requests: int, context: int, gpu: str | GpuPreset,
           engine: str = "both", max_gpus: int = 8, gpus_per_node: int = 8,
           kv_dtypes: Iterable[str] = KV_DTYPES, extra_knobs: dict[str, Any] | None = None,
           extra_args: Iterable[str] = ()) -> Search:
    """Try every layout (``layouts``) for ``requests`` requests of ``context`` tokens on ``gpu``.

    ``inspect_at(tensor_parallel_size=, kv_cache_dtype=, contexts=, ...)`` builds the model's report for
    one layout (the config loaded once, the weights attached); ``extra_knobs`` are engine knobs every
    layout keeps (the reserve's, ``max_num_seqs``, …); ``extra_args`` end every printed command (the
    given weights, the knobs, a revision), so that it prints the same verdict."""
    preset = _plan_gpu(gpu)
    probe = inspect_at(tensor_parallel_size=1, contexts=(context,))
    moe = bool(expert_count(probe.config or {}))
    result = Search(model=model, requests=requests, context=context, gpu=preset.name, max_gpus=max_gpus)
    for layout in layouts(ENGINE_CHOICES[engine], max_gpus, gpus_per_node, moe, kv_dtypes):
        outcome = _try(inspect_at, model, layout, preset, requests, context, extra_knobs or {},
                       [*extra_args, *knob_args(extra_knobs or {})])
        (result.kept if outcome.status == "kept" else result.dropped).append(outcome)
    result.kept = rank(result.kept)
    return result


def _plan_gpu(gpu: str | GpuPreset) -> GpuPreset:
    """The GPU ``plan`` lays out: a name, no count (the search chooses how many, up to ``--max-gpus``)."""
    if isinstance(gpu, GpuPreset):
        return gpu
    if ":" in str(gpu):
        parse_gpu(gpu)  # a malformed or zero count is its own error
        raise UsageError(f"plan chooses how many GPUs: give --gpu {str(gpu).rpartition(':')[0]} and --max-gpus N, "
                         f"not {gpu}")
    return get_gpu(gpu)


def rank(kept: list[Outcome]) -> list[Outcome]:
    """The fewest GPUs first (among those, the KV cache at the model's dtype before fp8, which trades
    accuracy for room, then the most requests per GPU), then every other layout by requests per GPU."""
    by_density = sorted(kept, key=lambda o: (-o.requests_per_gpu, o.layout.gpus, o.layout.pp, o.layout.tp))
    if not by_density:
        return []
    fewest = min(o.layout.gpus for o in by_density)
    first = next(o for o in sorted(by_density, key=lambda o: o.layout.kv_cache_dtype != "auto")
                 if o.layout.gpus == fewest)
    return [first] + [o for o in by_density if o is not first]


def _try(inspect_at: Callable[..., Report], model: str, layout: Layout, preset: GpuPreset, requests: int,
         context: int, extra_knobs: dict[str, Any], args: list[str]) -> Outcome:
    command = reproduce(model, layout, preset, context, args)
    try:
        report = inspect_at(tensor_parallel_size=layout.tp, kv_cache_dtype=layout.kv_cache_dtype, contexts=(context,),
                            data_parallel_size=layout.dp, enable_dp_attention=layout.dp_attention,
                            pipeline_parallel_size=layout.pp)
        enrich(report, gpu=f"{preset.name}:{layout.gpus}", engine=layout.engine, max_model_len=context,
               engine_knobs={**extra_knobs, **layout.knobs()})
    except HfkvError as err:
        return Outcome(layout, "refused", None, None, err.message, None, command)
    plan = report.extra.get("serving") or {}
    detail = plan.get("verdict_detail") or {}
    line = plan.get("verdict")
    if plan.get("weights_fit") is False:
        return Outcome(layout, "weights", 0, 0, "the weights do not fit in the engine's budget", line, command)
    held = (detail.get("requests") or 0) if detail.get("tokens") == context else 0
    low = detail.get("requests_low")
    low = held if low is None else low
    if detail.get("status") == "unknown":
        return Outcome(layout, "unknown", held, None, "the weights are unknown: at most this many", line, command)
    if held < requests:
        # The deployment's own verdict answers another question (how many fit): the plan's is whether it holds them.
        where = line.split(":", 1)[0].removeprefix("fits ") if line and line.startswith("fits ") else \
            f"on {layout.gpus} × {preset.name}"
        return Outcome(layout, "too-few", held, low, f"holds {held:,} of {requests:,} requests at "
                       f"{format_tokens(context)}", f"does NOT hold {requests:,} requests of {format_tokens(context)} "
                       f"{where}: {held:,} fit", command)
    if low < requests:
        return Outcome(layout, "marginal", held, low, f"holds {held:,} of {requests:,} requests at "
                       f"{format_tokens(context)}, but {low:,} at the low end of the reserve's band", line, command)
    return Outcome(layout, "kept", held, low, "", line, command)


def reproduce(model: str, layout: Layout, preset: GpuPreset, context: int, args: Iterable[str] = ()) -> str:
    """The ``hfkv`` command that prints this layout's verdict (the engine sized at ``--max-model-len``;
    ``args`` appended: the search's given weights and knobs)."""
    length = f"{context // 1024}k" if context % 1024 == 0 else str(context)  # as hfkv parses it back
    parts = ["hfkv", model, "--gpu", f"{preset.name}:{layout.gpus}", "--tp", str(layout.tp), "--engine", layout.engine,
             "--context", length, "--max-model-len", length]
    if layout.kv_cache_dtype != "auto":
        parts += ["--kv-cache-dtype", layout.kv_cache_dtype]
    if layout.pp > 1:
        parts += ["--pp", str(layout.pp)]
    if layout.dp > 1:
        parts += ["--dp", str(layout.dp)]
    if layout.dp_attention:
        parts.append("--enable-dp-attention")
    if layout.ep:
        parts.append("--enable-expert-parallel")
    return shlex.join(parts + list(args))
