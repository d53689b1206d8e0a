"""What the page asks (``Form``), its query string, and the ``hfkv`` commands that print the same figures.

Pure: no Gradio, no report stack (``options()`` imports ``hfkv.model.options`` when called), so the
page's logic is tested without a browser and the server starts without loading the report stack.

The three tabs read different fields:

* Report: the model, the KV dtype, the layout (TP, DP, PP, DP attention, EP), a GPU preset (the
  deployment is ``TP × PP × DP`` of it, DP attention ranks living inside TP as in SGLang), a KV budget,
  contexts, the max model length and the two engines' memory fractions. Its commands are
  ``hfkv MODEL …`` (hfkv's own count) and ``hfkv MODEL … --engine vllm|sglang`` (each engine's).
* Compare: 2 to 8 models side by side with the same flags (Hub repo ids typed, config files dropped),
  ``hfkv compare A B …``; with a GPU each model is planned on the deployment (hfkv's count), and each
  engine's verdict on it is ``hfkv compare A B … --engine vllm|sglang``.
* Plan: the model, the requests and their context, a GPU preset, the engines, the most GPUs and the
  KV dtypes to try: ``hfkv plan MODEL …``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping, Sequence
from urllib.parse import urlencode

from hfkv.errors import UsageError
from hfkv.text import one_line
from hfkv.units import parse_size, parse_token_list, parse_tokens

DTYPES = ("auto", "bf16", "fp16", "fp8", "fp4", "fp32")  # --kv-cache-dtype's choices (hfkv.commands.options)
ENGINES = ("vllm", "sglang")  # side by side, in this order
PLAN_ENGINES = ("both", "vllm", "sglang")  # hfkv plan --engine
PLAN_DTYPES = ("both", "auto", "fp8")  # hfkv plan --kv-cache-dtype
NO_GPU = "(none)"
DEFAULT_PLAN_GPU = "H200-141GB"
MAX_MODELS = 8  # models in one comparison: each is one Hub GET
MAX_PLAN_GPUS = 16  # the most GPUs a plan may try: its cost grows with the layouts tried
MAX_PARALLEL = 1024  # TP, DP and PP each: larger is a typo, not a deployment
MAX_CONTEXTS = 32  # contexts in one report
REPO = re.compile(r"[A-Za-z0-9][\w.\-]*/[\w.\-]+(@[\w.\-/]+)?")  # what the model field accepts

# Query-string key of each Form field (short, stable: links people share).
QUERY_KEYS = {
    "model": "model", "kv_cache_dtype": "kv", "tp": "tp", "dp": "dp", "pp": "pp", "dp_attention": "dpa",
    "ep": "ep", "gpu": "gpu", "budget": "budget", "contexts": "context", "max_model_len": "max_len",
    "gpu_memory_utilization": "gmu", "mem_fraction_static": "mfs", "compare": "compare",
    "requests": "requests", "plan_context": "plan_context", "plan_gpu": "plan_gpu", "plan_engine": "plan_engine",
    "max_gpus": "max_gpus", "plan_kv": "plan_kv",
}
LAYOUT = ("kv_cache_dtype", "tp", "dp", "pp", "dp_attention", "ep", "gpu", "budget", "contexts", "max_model_len",
          "gpu_memory_utilization", "mem_fraction_static")
TAB_FIELDS = {
    "report": ("model", *LAYOUT),
    "compare": ("compare", *LAYOUT),
    "plan": ("model", "requests", "plan_context", "plan_gpu", "plan_engine", "max_gpus", "plan_kv"),
}
_WHOLE = ("tp", "dp", "pp", "requests", "max_gpus")
_FLAGS = ("dp_attention", "ep")


@dataclass(frozen=True)
class Form:
    """What the page asks. Text as typed; ``options()``, ``knobs()`` and ``gpu_spec()`` validate it."""

    model: str = ""
    kv_cache_dtype: str = "auto"
    tp: int = 1
    dp: int = 1
    pp: int = 1
    dp_attention: bool = False
    ep: bool = False
    gpu: str = ""
    budget: str = ""
    contexts: str = ""
    max_model_len: str = ""
    gpu_memory_utilization: str = ""
    mem_fraction_static: str = ""
    compare: str = ""
    requests: int = 0  # 0: no plan asked
    plan_context: str = ""
    plan_gpu: str = DEFAULT_PLAN_GPU
    plan_engine: str = "both"
    max_gpus: int = 8
    plan_kv: str = "both"

    @classmethod
    def from_query(cls, query: Mapping[str, Any]) -> "Form":
        """A form from a query string's parameters; unknown keys are ignored, bad numbers and choices
        fall back to their defaults."""
        values: dict[str, Any] = {}
        for name, key in QUERY_KEYS.items():
            if query.get(key) is not None:
                values[name] = str(query[key])[:2000]
        for name in _WHOLE:
            if name in values:
                values[name] = whole(values[name], 0 if name == "requests" else 1)
        for name in _FLAGS:
            if name in values:
                values[name] = flag(values[name])
        for name, choices in (("kv_cache_dtype", DTYPES), ("plan_engine", PLAN_ENGINES), ("plan_kv", PLAN_DTYPES)):
            if values.get(name) not in choices:
                values.pop(name, None)
        return cls(**values)

    def cleaned(self) -> "Form":
        """Whitespace trimmed, ``(none)`` as no GPU, whole numbers where numbers are asked."""
        text = {f.name: str(getattr(self, f.name) or "").strip() for f in fields(self)
                if f.type == "str" and f.name not in ("kv_cache_dtype", "plan_engine", "plan_kv")}
        gpu, plan_gpu = text.pop("gpu"), text.pop("plan_gpu")
        return replace(self, **text, gpu="" if gpu == NO_GPU else gpu,
                       plan_gpu=plan_gpu if plan_gpu not in ("", NO_GPU) else DEFAULT_PLAN_GPU,
                       tp=whole(self.tp), dp=whole(self.dp), pp=whole(self.pp), requests=whole(self.requests, 0),
                       max_gpus=whole(self.max_gpus), dp_attention=bool(self.dp_attention), ep=bool(self.ep))

    @property
    def tab(self) -> str:
        """The tab a link opens: the plan when it asks for requests, the comparison when it names
        models to compare and no model, else the report."""
        if self.requests and self.model:
            return "plan"
        return "compare" if self.compare and not self.model else "report"

    def query_string(self, tab: str = "report") -> str:
        """``?model=…&tp=8`` with the fields of ``tab`` that differ from the defaults (what reproduces
        that tab)."""
        default = Form()
        pairs = [(QUERY_KEYS[name], _query_value(getattr(self, name))) for name in TAB_FIELDS[tab]
                 if getattr(self, name) != getattr(default, name)]
        return "?" + urlencode(pairs) if pairs else ""

    # -- the deployment ---------------------------------------------------------------------------

    @property
    def gpu_count(self) -> int:
        """GPUs the layout needs: TP × PP per replica, DP replicas unless DP attention puts the DP ranks
        inside TP (``hfkv.engines.layout.Layout.gpus``)."""
        return self.tp * self.pp * (1 if self.dp_attention else self.dp)

    def gpu_spec(self) -> str | None:
        """``NAME:COUNT`` for the serving plan, or None without a GPU preset."""
        return f"{self.gpu}:{self.gpu_count}" if self.gpu else None

    def knobs(self) -> dict[str, Any]:
        """The engine knobs the form sets (``EngineKnobs`` names), as the CLI passes them."""
        knobs: dict[str, Any] = {}
        if self.dp != 1:
            knobs["data_parallel_size"] = self.dp
        if self.pp != 1:
            knobs["pipeline_parallel_size"] = self.pp
        if self.dp_attention:
            knobs["enable_dp_attention"] = True
        if self.ep:
            knobs["enable_expert_parallel"] = True
        for name in ("gpu_memory_utilization", "mem_fraction_static"):
            value = getattr(self, name)
            if value:
                knobs[name] = _fraction(value, name)
        return knobs

    def max_length(self) -> int | None:
        return parse_tokens(self.max_model_len) if self.max_model_len else None

    def options(self) -> Any:
        """``hfkv.Options`` for this form, as ``hfkv MODEL …`` and ``hfkv compare`` build them from the
        same flags (``commands.options.build_options``: the contexts up to ``--max-model-len``, the
        layout fields the figures follow); a ``UsageError`` naming the field on a bad value."""
        from hfkv.model.options import DEFAULT_CONTEXTS, make_options

        self.check()
        contexts = parse_token_list(self.contexts) if self.contexts else None
        if contexts is not None and len(contexts) > MAX_CONTEXTS:
            raise UsageError(f"at most {MAX_CONTEXTS} contexts, got {len(contexts)}")
        limit = self.max_length()
        if contexts is None and limit:
            contexts = sorted({c for c in DEFAULT_CONTEXTS if c <= limit} | {limit})
        fields_: dict[str, Any] = {"kv_cache_dtype": self.kv_cache_dtype, "tensor_parallel_size": self.tp,
                                   "budget_bytes": parse_size(self.budget) if self.budget else None,
                                   "contexts": tuple(contexts) if contexts else None}
        fields_.update(data_parallel_size=self.dp, pipeline_parallel_size=self.pp)
        if self.dp_attention:
            fields_["enable_dp_attention"] = True
        return make_options(**fields_)

    def check(self) -> None:
        """The checks the CLI's option types make (click choices and ranges), as one-line ``UsageError``s."""
        if self.kv_cache_dtype not in DTYPES:
            raise UsageError(f"KV dtype '{one_line(self.kv_cache_dtype)}' is not one of {', '.join(DTYPES)}")
        for name, label in (("tp", "TP"), ("dp", "DP"), ("pp", "PP")):
            if getattr(self, name) > MAX_PARALLEL:
                raise UsageError(f"{label} {getattr(self, name):,} is more than this page computes (at most "
                                 f"{MAX_PARALLEL:,})")
        self.knobs()  # the fractions

    # -- commands ---------------------------------------------------------------------------------

    def report_args(self, engine: str | None = None) -> list[str]:
        """The report's flags, as ``hfkv MODEL`` takes them (model not included)."""
        args = []
        if self.kv_cache_dtype != "auto":
            args += ["--kv-cache-dtype", self.kv_cache_dtype]
        if self.tp != 1:
            args += ["--tp", str(self.tp)]
        if self.dp != 1:
            args += ["--dp", str(self.dp)]
        if self.pp != 1:
            args += ["--pp", str(self.pp)]
        if self.dp_attention:
            args.append("--enable-dp-attention")
        if self.ep:
            args.append("--enable-expert-parallel")
        if self.gpu:
            args += ["--gpu", self.gpu_spec() or ""]
        if self.budget:
            args += ["--budget", self.budget]
        if self.contexts:
            args += ["--context", self.contexts]
        if self.max_model_len:
            args += ["--max-model-len", self.max_model_len]
        if self.gpu_memory_utilization:
            args += ["--gpu-memory-utilization", self.gpu_memory_utilization]
        if self.mem_fraction_static:
            args += ["--mem-fraction-static", self.mem_fraction_static]
        if engine:
            args += ["--engine", engine]
        return args

    def report_command(self, model: str | None = None, engine: str | None = None) -> str:
        """The ``hfkv`` command that prints this report (``model`` replaces the typed one: an upload),
        hfkv's own count, or ``engine``'s."""
        return shlex.join(["hfkv", model or self.model or "MODEL", *self.report_args(engine)])

    def compare_command(self, engine: str | None = None, uploads: Sequence[str] = ()) -> str:
        """``hfkv compare A B …`` with the report's flags: the same table, and with a GPU each model
        planned on the deployment (hfkv's count, or ``engine``'s). ``uploads``: the names of dropped
        config files, after the typed repo ids (as the page compares them)."""
        return shlex.join(["hfkv", "compare", *self.compare_models(), *uploads, *self.report_args(engine)])

    def compare_models(self) -> list[str]:
        """The models of the Compare tab: separated by commas, spaces or lines; duplicates dropped."""
        seen: dict[str, None] = {}
        for item in re.split(r"[\s,]+", self.compare):
            if item:
                seen.setdefault(item, None)
        return list(seen)

    def plan_request(self) -> dict[str, Any]:
        """``hfkv.api.plan``'s arguments (model aside); a ``UsageError`` naming the field on a bad value."""
        if self.requests < 1:
            raise UsageError("give the number of requests to hold (1 or more)")
        if not self.plan_context:
            raise UsageError("give the context of each request (e.g. 32k)")
        if not 1 <= self.max_gpus <= MAX_PLAN_GPUS:
            raise UsageError(f"the page tries at most {MAX_PLAN_GPUS} GPUs, got {self.max_gpus}")
        if self.plan_engine not in PLAN_ENGINES:
            raise UsageError(f"engine '{one_line(self.plan_engine)}' is not one of {', '.join(PLAN_ENGINES)}")
        if self.plan_kv not in PLAN_DTYPES:
            raise UsageError(f"KV dtype '{one_line(self.plan_kv)}' is not one of {', '.join(PLAN_DTYPES)}")
        return {"requests": self.requests, "context": parse_tokens(self.plan_context), "gpu": self.plan_gpu,
                "engine": self.plan_engine, "max_gpus": self.max_gpus,
                "kv_cache_dtypes": ("auto", "fp8") if self.plan_kv == "both" else (self.plan_kv,)}

    def plan_command(self, model: str | None = None) -> str:
        """The ``hfkv plan`` command that runs the same search (every choice spelled out)."""
        return shlex.join(["hfkv", "plan", model or self.model or "MODEL", "--requests", str(self.requests),
                           "--context", self.plan_context or "CONTEXT", "--gpu", self.plan_gpu,
                           "--engine", self.plan_engine, "--max-gpus", str(self.max_gpus),
                           "--kv-cache-dtype", self.plan_kv])


def check_repo(text: str) -> None:
    """A ``UsageError`` unless ``text`` is a Hub repo id (``org/name`` or ``org/name@revision``): the page
    never reads a path on the server, nor a URL."""
    if not text:
        raise UsageError("type a Hub repo id (org/name) or drop a config.json")
    if not REPO.fullmatch(text) or any(part.startswith(".") or ".." in part for part in text.split("@")[0].split("/")):
        raise UsageError(f"'{one_line(text)[:200]}' is not a Hub repo id (org/name or org/name@revision)")


def whole(value: Any, default: int = 1) -> int:
    """A whole number ≥ 1 (``default`` 0: ≥ 0) from a form or query value; anything else: ``default``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    if number != number or abs(number) >= 1e6:
        return default
    return max(default if default == 0 else 1, int(number))


def flag(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _fraction(text: str, name: str) -> float:
    """A memory fraction in (0, 1], as the CLI's ratio type reads it."""
    flag_ = "--" + name.replace("_", "-")
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{flag_} must be a number in (0, 1], got '{one_line(text)[:40]}'") from None
    if not 0 < value <= 1:
        raise UsageError(f"{flag_} must be in (0, 1], got {text}")
    return value


def _query_value(value: Any) -> str:
    return ("1" if value else "0") if isinstance(value, bool) else str(value)
