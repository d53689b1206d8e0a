"""``Options``: the knobs of one report, a pydantic model (frozen, no unknown knob, bounds as ``Field``
constraints) whose errors are one ``UsageError`` line naming the option and its CLI flag."""

from __future__ import annotations

from typing import Annotated, Any, Optional

from pydantic import Field, ValidationError

from hfkv.errors import UsageError
from hfkv.model.accounting import SEARCH_LIMIT
from hfkv.model.specs import _Spec, first_problem

DEFAULT_CONTEXTS = (4096, 32768, 131072)  # tokens; the model's maximum is added, longer ones dropped

# Option fields and the CLI flags that set them, for messages that name what the user typed.
_FLAGS = {
    "tensor_parallel_size": "--tensor-parallel-size", "contexts": "--context", "budget_bytes": "--budget",
    "batch": "--batch", "prefix_cache_tokens": "--prefix-cache", "snapshot_interval": "--snapshot-interval",
    "spec_tokens": "--spec-tokens", "kv_cache_dtype": "--kv-cache-dtype", "state_dtype": "--state-dtype",
    "conv_dtype": "--conv-dtype", "indexer_dtype": "--indexer-dtype", "data_parallel_size": "--data-parallel-size",
    "pipeline_parallel_size": "--pipeline-parallel-size", "enable_dp_attention": "--enable-dp-attention",
}
Context = Annotated[int, Field(ge=1, le=SEARCH_LIMIT)]


class Options(_Spec):
    """Accounting knobs for one report (no Hub settings, no secrets).

    Dtypes: ``auto | bf16 | fp16 | fp8 | fp4 | fp32`` (``state_dtype``/``indexer_dtype``: no auto);
    ``contexts``: context lengths, 1 to 2^40 (default 4k, 32k, 128k and the model's maximum);
    ``budget_bytes``: KV budget per GPU; ``batch``: concurrency for the longest-context question;
    ``prefix_cache_tokens`` / ``snapshot_interval``: state snapshots of a cached prefix;
    ``spec_tokens``: draft tokens verified per step. ``data_parallel_size``, ``enable_dp_attention``,
    ``pipeline_parallel_size``: the layout, when it changes what one GPU holds (DP attention shards
    attention at TP / DP; a pipeline stage holds its share of the layers); every figure is then one GPU's
    of the fullest stage. A bad value is a ``UsageError`` naming the option.
    """

    kv_cache_dtype: str = "auto"
    state_dtype: str = "fp32"
    conv_dtype: str = "auto"
    indexer_dtype: str = "fp8"
    tensor_parallel_size: int = Field(1, ge=1)
    contexts: Optional[tuple[Context, ...]] = None
    budget_bytes: Optional[int] = Field(None, ge=1)
    batch: Optional[int] = Field(None, ge=1)
    prefix_cache_tokens: Optional[int] = Field(None, ge=0)
    snapshot_interval: Optional[int] = Field(None, ge=1)
    spec_tokens: int = Field(0, ge=0)
    data_parallel_size: int = Field(1, ge=1)
    enable_dp_attention: bool = False
    pipeline_parallel_size: int = Field(1, ge=1)

    @property
    def attention_tensor_parallel_size(self) -> int:
        """TP of one GPU's attention: TP / DP under DP attention (when DP divides TP), else TP."""
        dp, tp = self.data_parallel_size, self.tensor_parallel_size
        return tp // dp if self.enable_dp_attention and dp > 1 and tp % dp == 0 else tp

    @classmethod
    def _invalid(cls, err: ValidationError) -> Exception:
        return UsageError(option_message(err))


# pydantic's error types in an option's words (see ``specs.SHAPE_WORDS``; the others keep its words).
_WHOLE = "a whole number, not {given}"
_OPTION_WORDS = {
    "greater_than_equal": "{given} is below the minimum {ge}",
    "less_than_equal": "{value:,} tokens is past {le:,} (2^40), the longest context hfkv accounts",  # contexts
    "int_parsing": _WHOLE, "int_from_float": _WHOLE, "int_type": _WHOLE, "string_type": "a dtype name, not {given}",
    "tuple_type": "a list of token counts, not {given}", "extra_forbidden": "not an option",
}


def option_message(err: ValidationError) -> str:
    """One line for a bad option, naming it and, where it has one, its CLI flag."""
    loc, what = first_problem(err, _OPTION_WORDS)
    name = str(loc[0]) if loc else "options"
    label = f"{name} ({_FLAGS[name]})" if name in _FLAGS else name
    return f"invalid option {label}: {what}"


def make_options(options: Options | None = None, **knobs: Any) -> Options:
    """``options``, or an ``Options`` built from keyword knobs; bad values are a ``UsageError``."""
    if options is not None and knobs:
        raise UsageError("give either options=Options(...) or keyword options, not both")
    if options is not None:
        return options
    unknown = sorted(set(knobs) - _OPTION_NAMES)
    if unknown:
        raise UsageError(f"unknown option(s) {', '.join(unknown)} (known: {', '.join(sorted(_OPTION_NAMES))})")
    return Options(**knobs)  # a bad value is a UsageError naming the option


_OPTION_NAMES = frozenset(Options.model_fields)
