"""Every config, real or mutated: a report whose figures are finite and non-negative, or one ``HfkvError``
whose message is a single line naming the source, never a crash.

The real configs of ../shared/hub-configs, every fixture under any precision and TP, fixtures with a
nested config removed, and fixtures mutated at random (property-based; the hypothesis budget is
bounded so the suite stays fast in CI)."""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hfkv import HfkvError, inspect_config
from hfkv.sources import load_local

from _helpers import check_outcome, FIXTURES, HUB_CONFIGS


# -- every real config: figures or one clean error -------------------------------------------------


def _hub_configs() -> list[Path]:
    if not HUB_CONFIGS.is_dir():
        return []
    return sorted(HUB_CONFIGS.glob("*.json"))


def _finite_non_negative(value) -> bool:
    return value is None or (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0)


@pytest.mark.parametrize("path", _hub_configs() or [None], ids=lambda p: p.stem if p else "absent")
def test_hub_config_sweep(path):
    if path is None:
        pytest.skip(f"{HUB_CONFIGS} is absent: no real configs to sweep")
    try:
        loaded = load_local(path)
        rep = inspect_config(loaded.data, model=path.name)
    except HfkvError as err:
        text = str(err)
        assert text and "\n" not in text and "Traceback" not in text
        return
    data = rep.to_dict()
    for key in ("alpha_bytes_per_token", "gamma_bytes_per_request", "crossover_tokens", "recurrent_state_bytes"):
        assert _finite_non_negative(data[key]), (key, data[key])
    assert rep.layers
    for layer in data["layers"]:
        for key in ("entry_bytes", "state_bytes", "bytes_per_token"):
            assert _finite_non_negative(layer[key]), (layer["index"], key, layer[key])
    for ctx in data["contexts"]:
        assert _finite_non_negative(ctx["kv_bytes_per_request"]) and _finite_non_negative(ctx["read_bytes_per_step"])


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
