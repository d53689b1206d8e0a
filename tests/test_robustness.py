"""Property-based checks: mutated real configs never crash hfkv, and the core keeps its invariants.

A mutated config must give either a report whose figures are finite and non-negative, or one
``HfkvError`` whose message is a single line naming the source. The hypothesis budget is bounded
so the suite stays fast in CI.
"""

from __future__ import annotations

import copy
import json
import math
import random
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from hfkv import HfkvError, Options, inspect_config
from hfkv.model import accounting as acc
from hfkv.model.dtypes import Precision
from hfkv.sources import parse_config_bytes
from hfkv.model.specs import (
    CompressedKV, FullAttention, IndexerKeys, LayerSpec, LinearAttentionState, MambaState, MLALatent,
    ShortConvState, SlidingWindow,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CONFIGS = {p.parent.name: json.loads(p.read_text()) for p in sorted(FIXTURES.glob("*/config.json"))}
NAMES = sorted(CONFIGS)

WEIRD = [None, 0, -1, 1, 3, 2**31, 10**30, 1.5, float("nan"), float("inf"), -float("inf"), "x", "", "128",
         True, False, [], [1, 2], {}, {"a": 1}, ["full_attention"] * 3, "S" * 5]
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


def paths(node, prefix=()):
    """Every (path) to a value inside nested dicts and lists."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield prefix + (key,)
            yield from paths(value, prefix + (key,))
    elif isinstance(node, list) and len(node) <= 200:
        for i, value in enumerate(node[:5]):
            yield prefix + (i,)
            yield from paths(value, prefix + (i,))


def parent_of(root, path):
    node = root
    for step in path[:-1]:
        node = node[step]
    return node


def mutate(config, rng: random.Random, count: int):
    config = copy.deepcopy(config)
    for _ in range(count):
        candidates = list(paths(config))
        if not candidates:
            break
        path = rng.choice(candidates)
        parent, last = parent_of(config, path), path[-1]
        op = rng.randrange(4)
        if op == 0 and isinstance(parent, dict):
            del parent[last]
        elif op == 1 and isinstance(parent[last], list):
            parent[last] = parent[last][: rng.randrange(len(parent[last]) + 1)] if rng.random() < 0.7 else parent[last] * 2
        else:
            parent[last] = copy.deepcopy(rng.choice(WEIRD))  # never alias a list into itself
    return config


def check_outcome(config, name, **options):
    try:
        report = inspect_config(config, model=name, options=Options(**options))
    except HfkvError as err:
        text = str(err)
        assert "\n" not in text and text.startswith(name), text
        return None
    data = report.to_dict()
    numbers = [data["alpha_bytes_per_token"], data["gamma_bytes_per_request"], data["recurrent_state_bytes"]]
    for ctx in data["contexts"]:
        numbers += [ctx["kv_bytes_per_request"], ctx["read_bytes_per_step"]]
    for layer in data["layers"]:
        numbers += [layer["entry_bytes"], layer["state_bytes"], layer["bytes_per_token"]]
    for value in numbers:
        assert isinstance(value, (int, float)) and math.isfinite(value) and value >= 0, (name, value)
    json.dumps(data, allow_nan=False)  # the JSON contract holds no NaN or Infinity
    return report


@SETTINGS
@given(name=st.sampled_from(NAMES), seed=st.integers(0, 2**32 - 1), count=st.integers(1, 4))
def test_mutated_configs_report_or_fail_cleanly(name, seed, count):
    check_outcome(mutate(CONFIGS[name], random.Random(seed), count), name)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(NAMES), tp=st.sampled_from([1, 2, 3, 8, 64]), kv=st.sampled_from(["auto", "fp8", "fp4", "fp32"]))
def test_every_fixture_reports_under_any_precision_and_tp(name, tp, kv):
    check_outcome(CONFIGS[name], name, tensor_parallel_size=tp, kv_cache_dtype=kv, budget_bytes=80 * 2**30, batch=4)


@pytest.mark.parametrize("name", NAMES)
def test_nested_config_missing(name):
    config = copy.deepcopy(CONFIGS[name])
    for key in ("text_config", "language_config", "llm_config", "linear_attn_config", "attn_config"):
        if key in config:
            config[key] = None
    check_outcome(config, name)


@pytest.mark.parametrize("raw", [b"", b"null", b"42", b'"text"', b"[]", b"{", b'{"a": 1', b"\xff\xfe\x00",
                                  b"[" * 100000, b'{"num_hidden_layers": 1e400}'])
def test_truncated_or_foreign_json(raw):
    try:
        check_outcome(parse_config_bytes(raw, "config.json"), "config.json")
    except HfkvError as err:
        assert "\n" not in str(err)


def test_oversized_config_is_refused():
    from hfkv.sources import MAX_CONFIG_BYTES

    with pytest.raises(HfkvError, match="limit"):
        parse_config_bytes(b" " * (MAX_CONFIG_BYTES + 1), "config.json")


# -- invariants of the core -------------------------------------------------------------------------

P = Precision()
parts = st.one_of(
    st.builds(FullAttention, kv_heads=st.integers(1, 64), head_dim=st.integers(1, 512)),
    st.builds(SlidingWindow, kv_heads=st.integers(1, 64), head_dim=st.integers(1, 512), window=st.integers(1, 8192)),
    st.builds(MLALatent, kv_lora_rank=st.integers(1, 1024), rope_dim=st.integers(0, 128),
              topk=st.one_of(st.none(), st.integers(1, 4096))),
    st.builds(IndexerKeys, head_dim=st.integers(1, 256), ratio=st.integers(1, 128), ring_slots=st.integers(0, 256)),
    st.builds(CompressedKV, head_dim=st.integers(64, 1024), rope_dim=st.just(64), ratio=st.integers(1, 256),
              ring_slots=st.integers(0, 256)),
    st.builds(LinearAttentionState, variant=st.just("gdn"), num_qk_heads=st.integers(0, 32), num_v_heads=st.integers(1, 64),
              head_k_dim=st.integers(1, 256), head_v_dim=st.integers(1, 256), conv_kernel=st.integers(1, 8)),
    st.builds(MambaState, version=st.just(2), num_heads=st.integers(1, 256), head_dim=st.integers(1, 128),
              state_size=st.integers(1, 256), n_groups=st.integers(0, 16), conv_kernel=st.integers(1, 8)),
    st.builds(ShortConvState, dim=st.integers(1, 8192), conv_kernel=st.integers(1, 8)),
)
layer_lists = st.lists(st.lists(parts, min_size=1, max_size=3), min_size=1, max_size=6).map(
    lambda groups: [LayerSpec(index=i, kind="x", parts=tuple(g)) for i, g in enumerate(groups)]
)


@settings(max_examples=200, deadline=None)
@given(layers=layer_lists, s=st.integers(0, 10**6), ds=st.integers(0, 10**5), batch=st.integers(1, 64))
def test_memory_invariants(layers, s, ds, batch):
    m = acc.request_bytes(layers, s, P)
    assert acc.request_bytes(layers, s + ds, P) >= m  # non-decreasing in S
    assert acc.alpha(layers, P) >= 0 and acc.gamma(layers, P) >= 0
    assert batch * m == sum((acc.request_bytes(layers, s, P) for _ in range(batch)), Fraction(0))  # linear in B
    # past every window M(S) never exceeds the affine bound α·S + γ (floors only round down)
    assert m <= acc.alpha(layers, P) * max(s, 1) + acc.gamma(layers, P) or s == 0


@settings(max_examples=200, deadline=None)
@given(layers=layer_lists, s=st.integers(1, 10**6), budget=st.integers(1, 2**40))
def test_max_concurrency_brackets_the_budget(layers, s, budget):
    m = acc.request_bytes(layers, s, P)
    b = acc.max_concurrency(budget, m)
    if b is not None:
        assert b * m <= budget < (b + 1) * m


@settings(max_examples=200, deadline=None)
@given(layers=layer_lists, s=st.integers(1, 10**6), tp=st.integers(1, 16))
def test_per_gpu_times_tp_covers_the_total(layers, s, tp):
    # replicated parts keep everything on each rank; split parts round up: per-GPU × TP ≥ total.
    # Engines only accept TP dividing the KV heads or the reverse; other layouts get a warning instead.
    heads = [p.kv_heads for layer in layers for p in layer.parts if hasattr(p, "kv_heads")]
    assume(all(k % tp == 0 or tp % k == 0 for k in heads))
    assert acc.request_bytes(layers, s, P, tp) * tp >= acc.request_bytes(layers, s, P)


@settings(max_examples=100, deadline=None)
@given(layers=layer_lists, budget=st.integers(1, 2**36), batch=st.integers(1, 16))
def test_max_context_is_the_largest_that_fits(layers, budget, batch):
    s = acc.max_context(layers, budget, batch, P)
    if s is None:
        return
    if s > 0:
        assert batch * acc.request_bytes(layers, s, P) <= budget
    assert batch * acc.request_bytes(layers, s + 1, P) > budget


def test_tp_that_does_not_divide_the_kv_heads_warns():
    report = inspect_config(CONFIGS["meta-llama__Meta-Llama-3.1-8B"], options=Options(tensor_parallel_size=3))
    assert any("TP 3" in w and "8 KV heads" in w for w in report.warnings)
