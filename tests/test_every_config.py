"""Every real config of ../shared/hub-configs: a report with finite, non-negative figures, or one error
line without a traceback."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from hfkv import HfkvError, inspect_config
from hfkv.sources import load_local

from _helpers import HUB_CONFIGS


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
