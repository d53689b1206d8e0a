"""What an engine mode is given: the model as the engines see it (``EngineInput``) and the settings a
user can change (``EngineKnobs``), plus the small helpers every engine's arithmetic shares.

``EngineKnobs`` is the single definition of the engine options: the CLI builds its flags from the
fields (``cli_flag``, ``aliases``, the field docstring as help), ``docs/engine-modes.md``'s table is
generated from it (``knobs_markdown``), and each engine reads typed attributes. ``None`` means the
engine's own default, which the result's ``assumptions`` name.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Mapping

from hfkv.errors import UsageError
from hfkv.model.dtypes import Precision

if TYPE_CHECKING:  # for annotations only: no import at run time
    from hfkv.model.report import Report

ENGINES = ("sglang", "vllm")
DEFAULT_COMPUTE_CAPABILITY = "9.0"


def _knob(default: Any, doc: str, *, kind: str = "int", aliases: tuple[str, ...] = (), cli: bool = True,
          spelled: str | None = None) -> Any:
    """A knob field: its default, its one-line meaning (the CLI help and the docs' table), the kind of
    value the CLI parses (``int`` ≥ 1, ``count`` ≥ 0, ``ratio`` in (0, 1], ``positive`` float, ``dtype``, ``flag``,
    ``text``),
    extra CLI spellings, and whether the CLI defines the flag here (``False``: another option sets it)."""
    return field(default=default, metadata={"doc": doc, "kind": kind, "aliases": aliases, "cli": cli,
                                            "spelled": spelled})


@dataclass(frozen=True)
class EngineKnobs:
    """The engine options, one field per option, spelled as the engines spell their flags."""

    page_size: int | None = _knob(None, "SGLang page size in tokens (default 1; 64·index_kpool for DSA; 256 for "
                                        "DeepSeek V4)")
    block_size: int | None = _knob(None, "vLLM block size in tokens (default: the attention backend's for the GPU; "
                                         "raised for Mamba hybrids)")
    swa_full_tokens_ratio: float | None = _knob(None, "SGLang hybrid-SWA pool size relative to the full pool (default "
                                                      "0.8; 0.1 DSV4)", kind="ratio")
    max_running_requests: int | None = _knob(None, "SGLang running-request cap (default: estimated from the pool)")
    mamba_full_memory_ratio: float = _knob(0.9, "SGLang: the Mamba state pool takes r/(1+r) of the budget first",
                                           kind="positive")
    enable_prefix_caching: bool | None = _knob(None, "radix/prefix cache (default on; vLLM off for attention-free "
                                                     "models)", kind="flag")
    max_num_batched_tokens: int | None = _knob(None, "vLLM tokens per scheduler step (default 8192: API server, "
                                                     ">=70 GiB non-A100; --gpu sets vLLM's default for it)")
    async_scheduling: bool = _knob(True, "vLLM async scheduling: two batches in flight", kind="flag")
    disable_hybrid_kv_cache_manager: bool = _knob(False, "vLLM: allocate full KV for sliding and chunked layers",
                                                  kind="flag")
    chunked_local_hybrid: bool = _knob(True, "vLLM: chunked-local layers (Llama 4) keep their window in the hybrid "
                                             "manager (vLLM's default; --no-chunked-local-hybrid = "
                                             "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0)", kind="flag")
    num_speculative_tokens: int = _knob(0, "vLLM speculative tokens (extra Mamba blocks and conv rows); the "
                                           "accounting option of the same name sets it", aliases=("--spec-tokens",),
                                        cli=False)
    mamba_ssm_dtype: str | None = _knob(None, "recurrent-state dtype (default: the engine's rule)", kind="dtype")
    speculative_draft_layers: int = _knob(0, "SGLang EAGLE/MTP draft layers sharing the token count (MTP: the "
                                             "config's num_nextn_predict_layers); each adds one target layer's "
                                             "bytes per token", kind="count")
    compute_capability: str | None = _knob(None, "GPU compute capability the engine picks attention backends for, "
                                                 "e.g. 8.0, 9.0, 10.0 (default 9.0, H200; --gpu sets it from the "
                                                 "preset)", kind="text")
    data_parallel_size: int = _knob(1, "data-parallel ranks, each keeping its own requests (vLLM: one engine of TP "
                                       "GPUs per rank; SGLang with --enable-dp-attention: attention ranks inside "
                                       "the TP group)", aliases=("--dp",))
    enable_dp_attention: bool = _knob(False, "SGLang DP attention: attention at TP/DP, each DP rank keeps the KV of "
                                             "its own requests (true/false)", kind="flag")
    enable_expert_parallel: bool = _knob(False, "shard routed experts over the EP group instead of slicing them by "
                                                "TP (true/false)", kind="flag")
    pipeline_parallel_size: int = _knob(1, "pipeline stages, each holding and sizing the KV of its own layers",
                                        aliases=("--pp",))
    gpu_memory_utilization: float | None = _knob(None, "vLLM: fraction of the GPU's memory the engine may use "
                                                       "(default 0.92); hfkv's own count uses it too", kind="ratio")
    mem_fraction_static: float | None = _knob(None, "SGLang: fraction of free memory for weights and KV pools "
                                                    "(default: ServerArgs' rule from the GPU, TP, PP, DP attention, "
                                                    "chunked prefill and CUDA graphs)", kind="ratio")
    max_num_seqs: int | None = _knob(None, "vLLM: sequences per scheduler step; sizes the sampler warm-up and its "
                                           "buffers (default 1024 from 70 GiB, else 256; --gpu sets it)")
    enforce_eager: bool = _knob(False, "vLLM: no CUDA graphs (their memory estimate is then 0)", kind="flag")
    chunked_prefill_size: int | None = _knob(None, "SGLang: tokens per prefill chunk (default by GPU memory: 2048 "
                                                   "below 20 GB, 4096 below 60 GB, 8192 below 160 GB, else 16384)")
    cuda_graph_max_bs: int | None = _knob(None, "SGLang: largest decode batch captured in a CUDA graph (default by "
                                                "GPU memory and TP)")
    disable_cuda_graph: bool = _knob(False, "SGLang: no CUDA graphs (no graph term in the reserve)", kind="flag")
    engine_version: str | None = _knob(None, "the engine release whose rules apply (default the newest modelled)",
                                       kind="text", cli=False, spelled="--engine NAME==VERSION")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def resolve(cls, given: Mapping[str, Any] | None = None) -> EngineKnobs:
        """Every knob, the given ones over the defaults (``None`` keeps the default); the compute
        capability normalised. An unknown name is a ``UsageError`` listing the known ones."""
        given = dict(given or {})
        unknown = sorted(set(given) - set(cls.names()))
        if unknown:
            raise UsageError(f"unknown engine option(s): {', '.join(unknown)} (known: {', '.join(cls.names())})")
        values = {name: value for name, value in given.items() if value is not None}
        values["compute_capability"] = compute_capability(values.get("compute_capability"))
        return cls(**values)

    def replace(self, **changes: Any) -> EngineKnobs:
        return dataclasses.replace(self, **changes)

    @property
    def capability_major(self) -> int:
        """The major SM version (9 for "9.0")."""
        return int(str(self.compute_capability).split(".")[0])

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def knob_fields() -> tuple[dataclasses.Field, ...]:
    return dataclasses.fields(EngineKnobs)


def cli_flag(name: str) -> str:
    """The CLI spelling of a knob: ``--`` and dashes, as the engines spell their flags."""
    return "--" + name.replace("_", "-")


def knob_args(knobs: Mapping[str, Any]) -> list[str]:
    """The command-line arguments that set ``knobs`` (``EngineKnobs`` names), as ``hfkv`` parses them."""
    by_name = {f.name: f for f in knob_fields()}
    args: list[str] = []
    for name, value in knobs.items():
        if value is None or name not in by_name:
            continue
        flag = cli_flag(name)
        if by_name[name].metadata["kind"] == "flag":
            args.append(flag if value else f"--no-{flag[2:]}")
        else:
            args += [flag, str(value)]
    return args


def knobs_markdown() -> str:
    """The engine options as a Markdown table (docs/engine-modes.md), from ``EngineKnobs``."""
    lines = ["| option | default | meaning |", "|---|---|---|"]
    for f in knob_fields():
        spellings = ", ".join(f"`{s}`" for s in ((f.metadata["spelled"],) if f.metadata["spelled"]
                                                 else (cli_flag(f.name), *f.metadata["aliases"])))
        default = "engine's rule" if f.default is None else f"`{f.default}`"
        lines.append(f"| {spellings} | {default} | {f.metadata['doc']} |")
    return "\n".join(lines)


def compute_capability(value: Any) -> str:
    """``value`` as a ``MAJOR.MINOR`` string ("9" -> "9.0", 10.0 -> "10.0"); None is the default "9.0".

    Anything else (not two small whole numbers) is a UsageError naming the option.
    """
    if value is None:
        return DEFAULT_COMPUTE_CAPABILITY
    text = str(value).strip().lower().removeprefix("sm_").removeprefix("sm")
    match = re.fullmatch(r"([0-9]{1,2})(?:\.([0-9]))?", text)
    if not match:
        raise UsageError(f"--compute-capability must look like 8.0, 9.0 or 10.0, got {value!r}")
    return f"{int(match.group(1))}.{int(match.group(2) or 0)}"


@dataclass(frozen=True)
class Device:
    """One GPU as an engine measures it. ``smi_bytes``: nvidia-smi's ``memory.total`` (what SGLang's
    defaults and vLLM's batch tiers read); ``cuda_total_bytes``: the total cudaMemGetInfo reports (what
    vLLM multiplies by its utilization, and what free memory starts from), exact or as logs print it
    (``cuda_total_exact``); ``interconnect``: "nvswitch" (HGX boards: NCCL's NVLS buffers grow with TP) or
    "pcie"; ``vendor`` and ``compute_capability`` choose kernels."""

    name: str
    smi_bytes: int
    cuda_total_bytes: int
    cuda_total_exact: bool = False
    cuda_total_source: str = ""
    interconnect: str = "pcie"
    vendor: str = "NVIDIA"
    compute_capability: str | None = None


@dataclass(frozen=True)
class Term:
    """One line of an engine's memory budget on one GPU: ``bytes`` of ``name`` and where the figure comes
    from: ``code`` (the engine's own arithmetic, exact), ``checkpoint`` (the weights' exact bytes),
    ``estimate`` (a model of what the engine measures at start-up: ``error_bytes`` is its band, ± bytes)."""

    name: str
    bytes: int
    source: str
    error_bytes: int = 0
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


CHECKPOINT_SOURCES = ("metadata", "headers", "given")  # weights read from the checkpoint or given: exact
WEIGHTS_ESTIMATE_BAND = 100  # an estimate's band: 1/100 of it (33 published counts are within 0.01%; formats
#                              and families outside that table are why the band is wider)


def weights_term(weights_per_gpu: int | None, source: str | None, band_percent: float | None = None) -> Term:
    """The weights' line of any engine's budget: exact from the checkpoint, else an estimate with its
    band (``band_percent``, the estimate's own: 1% for a family's own layout, wider for the generic one or
    a backend-dependent padding), else unknown (nothing subtracted, and the budget says so)."""
    if weights_per_gpu is None:
        return Term("weights", 0, "unknown", note="weights unknown: nothing subtracted for them")
    if source in CHECKPOINT_SOURCES:
        return Term("weights", weights_per_gpu, "checkpoint", note=f"per GPU, from the checkpoint ({source})")
    if band_percent is None or band_percent <= 100 / WEIGHTS_ESTIMATE_BAND:
        return Term("weights", weights_per_gpu, "estimate", error_bytes=max(weights_per_gpu // WEIGHTS_ESTIMATE_BAND, 0),
                    note="per GPU, estimated from the config's shapes (band 1%; 33 published counts within 0.01%)")
    return Term("weights", weights_per_gpu, "estimate", error_bytes=max(int(weights_per_gpu * band_percent / 100), 0),
                note=f"per GPU, estimated from the config's shapes (band {band_percent:g}%: the report's weights "
                     "say why)")


@dataclass(frozen=True)
class MemoryBudget:
    """What an engine leaves for its KV pools on one GPU: ``usable_bytes`` (the memory it may use: vLLM
    ``ceil(total × gpu_memory_utilization)``, SGLang ``free memory × mem_fraction_static``) minus each of
    ``terms``; ``kv_bytes`` may be ≤ 0 (nothing fits). ``error_bytes`` is the sum of the terms' bands."""

    engine: str
    fraction: float
    fraction_source: str  # "given", or how the engine's default was reached
    usable_bytes: int
    terms: tuple[Term, ...]
    notes: tuple[str, ...] = ()

    @property
    def kv_bytes(self) -> int:
        return self.usable_bytes - sum(term.bytes for term in self.terms)

    @property
    def error_bytes(self) -> int:
        return sum(term.error_bytes for term in self.terms)

    @property
    def exact(self) -> bool:
        return all(term.source in ("code", "checkpoint", "given") for term in self.terms)

    def term(self, name: str) -> Term | None:
        return next((term for term in self.terms if term.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "fraction": self.fraction, "fraction_source": self.fraction_source,
                "usable_bytes": self.usable_bytes, "terms": [term.to_dict() for term in self.terms],
                "kv_bytes": self.kv_bytes, "error_bytes": self.error_bytes, "exact": self.exact,
                "notes": list(self.notes)}


@dataclass(frozen=True)
class EngineInput:
    """A model as an engine mode reads it: the mapped layers and precision of a report, the raw text
    config (for the keys an engine rule reads itself), the names the engines' registries match, and
    the options as the user typed them (``auto`` is not ``bf16`` for an engine that turns ``auto``
    into fp8). A pipeline stage or a DP-attention rank is the same input with its own
    ``layer_specs`` and ``tensor_parallel_size`` (``for_rank``)."""

    layer_specs: list
    precision: Any
    tensor_parallel_size: int = 1
    model: str = ""
    model_type: str | None = None
    architectures: list[str] = field(default_factory=list)
    config: dict = field(default_factory=dict)
    root_config: dict = field(default_factory=dict)  # the whole config.json (towers, quantisation)
    max_position_embeddings: int | None = None
    requested_kv_cache_dtype: str | None = None  # --kv-cache-dtype as typed ("auto" included); None: unknown
    requested_conv_dtype: str | None = None  # --conv-dtype as typed; None: unknown

    @classmethod
    def of(cls, report: Report) -> EngineInput:
        """The input of ``report`` (a ``Report``, or anything with its attributes; absent ones default)."""
        if isinstance(report, cls):
            return report
        options = getattr(report, "options", None)  # None: a report built by hand, nothing typed
        return cls(
            layer_specs=list(getattr(report, "layer_specs", None) or []),
            precision=getattr(report, "precision", None) or Precision(),
            tensor_parallel_size=getattr(report, "tensor_parallel_size", 1) or 1,
            model=getattr(report, "model", "") or "",
            model_type=getattr(report, "model_type", None),
            architectures=list(getattr(report, "architectures", None) or []),
            config=getattr(report, "config", None) or {},
            root_config=getattr(report, "root_config", None) or getattr(report, "config", None) or {},
            max_position_embeddings=getattr(report, "max_position_embeddings", None),
            requested_kv_cache_dtype=_typed(getattr(report, "kv_cache_dtype_requested", None), options, "kv_cache_dtype"),
            requested_conv_dtype=_typed(None, options, "conv_dtype"),
        )

    def for_rank(self, layer_specs: list, tensor_parallel_size: int) -> EngineInput:
        return dataclasses.replace(self, layer_specs=layer_specs, tensor_parallel_size=tensor_parallel_size)


def _typed(given: Any, options: Any, name: str) -> str | None:
    """An option as the user typed it: ``given`` when a string, else the report's ``Options`` field."""
    value = given if isinstance(given, str) else getattr(options, name, None)
    return value if isinstance(value, str) else None


def number(value: Fraction | int | float) -> int | float:
    """An exact figure for JSON: int when integral, else float."""
    value = Fraction(value)
    return int(value) if value.denominator == 1 else float(value)


def printed(value: float) -> float:
    """A ratio as the engines log it, with two decimals ("1.85x")."""
    return float(f"{value:.2f}")


def context_length(model: EngineInput, max_model_len: int | None, assumptions: list[str]) -> int | None:
    """The engine's max model length: the given one, else the model's max_position_embeddings."""
    if max_model_len is not None:
        if max_model_len < 1:
            raise UsageError(f"--max-model-len must be positive, got {max_model_len}")
        return max_model_len
    fallback = model.max_position_embeddings
    if fallback:
        assumptions.append(f"max model length = max_position_embeddings = {fallback}")
    return fallback
