"""The registry (mappings/registry.py) across families: each linear, SSM and short-conv model type
registered once, their registered fixtures present, and every shared Hub config of these families
mapped cleanly."""

from __future__ import annotations

import json

import pytest

from hfkv.mappings import all_mappers, resolve
from hfkv.model.config import ConfigView

from _helpers import FIXTURES, HUB_CONFIGS, report


# -- registry and real configs ----------------------------------------------------------------------


LINEAR_TYPES = (
    "qwen3_next", "qwen3_5", "qwen3_5_moe", "qwen3_5_text", "qwen3_5_moe_text", "olmo_hybrid", "kimi_linear",
    "kimi_k3", "glm5_next", "glm5_next_text", "minimax", "minimax_m1", "minimax_text_01", "bailing_hybrid",
)


def test_each_linear_model_type_registered_once():
    owners = [m for m in all_mappers() if set(m.model_types) & set(LINEAR_TYPES)]
    assert sorted(mt for m in owners for mt in m.model_types) == sorted(LINEAR_TYPES)
    assert {m.family for m in owners} == {"linear"}
    for mt in LINEAR_TYPES:
        assert resolve(ConfigView({"model_type": mt})).family == "linear"


def test_registered_fixtures_exist():
    for mapper in all_mappers():
        if mapper.family == "linear":
            for folder in mapper.fixtures.values():
                assert (FIXTURES / folder / "config.json").is_file(), folder


def test_hub_configs_of_linear_families_map_cleanly():
    if not HUB_CONFIGS.is_dir():
        pytest.skip("shared hub-configs folder not present")
    seen = 0
    for path in sorted(HUB_CONFIGS.glob("*.json")):
        data = json.loads(path.read_text())
        if resolve(ConfigView(data)).family != "linear":
            continue
        rep = report(data)
        seen += 1
        assert rep.gamma_bytes_per_request > 0, path.name  # every linear hybrid keeps state
        assert rep.alpha_bytes_per_token > 0, path.name  # and has some full layers
        assert not rep.warnings or all("dtype" in w for w in rep.warnings), (path.name, rep.warnings)
    assert seen >= 4  # Qwen3-Next, Qwen3.5, Kimi-K3, MiniMax-M1


SSM_TYPES = (
    "nemotron_h", "falcon_h1", "granitemoehybrid", "jamba", "bamba", "zamba", "zamba2", "mamba", "falcon_mamba",
    "mamba2",
)

CONV_TYPES = ("lfm2", "lfm2_moe", "lfm2_vl")


@pytest.mark.parametrize("types,family", [(SSM_TYPES, "ssm"), (CONV_TYPES, "conv")])
def test_model_types_registered_once(types, family):
    owners = [m for m in all_mappers() if set(m.model_types) & set(types)]
    assert sorted(mt for m in owners for mt in m.model_types) == sorted(types)
    for mt in types:
        assert resolve(ConfigView({"model_type": mt})).family == family
    for mapper in owners:
        for folder in mapper.fixtures.values():
            assert (FIXTURES / folder / "config.json").is_file(), folder


def test_hub_configs_of_ssm_families_map_cleanly():
    if not HUB_CONFIGS.is_dir():
        pytest.skip("shared hub-configs folder not present")
    seen = 0
    for path in sorted(HUB_CONFIGS.glob("*.json")):
        data = json.loads(path.read_text())
        if resolve(ConfigView(data)).family != "ssm":
            continue
        rep = report(data)
        seen += 1
        assert rep.gamma_bytes_per_request > 0, path.name
        assert not [w for w in rep.warnings if "dtype" not in w], (path.name, rep.warnings)
    assert seen >= 3  # Nemotron-H 56B, Nemotron-3-Nano, mamba-2.8b


# -- budget questions ------------------------------------------------------------------------------------


def test_every_registered_fixture_exists():
    from hfkv.mappings import all_mappers

    for mapper in all_mappers():
        for model_type, folder in mapper.fixtures.items():
            assert (FIXTURES / folder / "config.json").is_file(), (mapper.name, model_type, folder)


def test_every_model_type_of_the_engines_coverage_table_is_registered():
    import re

    from hfkv.mappings import all_mappers

    engines = FIXTURES.parents[1] / "shared" / "docs" / "engines.md"
    if not engines.is_file():
        pytest.skip(f"{engines} is not beside the checkout")
    text = engines.read_text()
    table = text[text.index("## 4. Coverage table"):text.index("## 5. Pitfalls")]
    wanted = set()
    for line in table.splitlines():
        if line.startswith("| ") and not line.startswith(("| model_type", "|---")):
            cell = re.sub(r"\(.*?\)", "", line.split("|")[1])
            wanted |= {t.strip() for t in re.split(r"[,/]| or ", cell) if t.strip()}
    registered = {mt for mapper in all_mappers() for mt in mapper.model_types}
    assert len(wanted) > 100 and not wanted - registered, sorted(wanted - registered)


# -- registry ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("model_type, module", [
    ("alice_ai", "alice"), ("gigachat3_5", "gigachat"), ("interns2_preview", "intern"), ("mobius", "intern"),
    ("jet_nemotron", "nemotron"), ("minicpm_sala", "minicpm"), ("qwen4_exp", "qwen"), ("qwen4_exp_text", "qwen"),
    ("recurrent_gemma", "gemma"), ("zaya", "zyphra"), ("inkling_model", "inkling"), ("inkling_mm_model", "inkling"),
    ("moss_vl", "moss"),
])
def test_every_type_resolves_to_its_family_module(model_type, module):
    assert resolve(ConfigView({"model_type": model_type})).name.startswith(f"{module}.")


# -- sweep of the real configs ----------------------------------------------------------------------


def test_sweep_hub_configs_of_these_families():
    if not HUB_CONFIGS.is_dir():
        pytest.skip(f"{HUB_CONFIGS} is absent")
    families = {"deepseek_v4", "deepseek_v41", "gemma3n", "gemma4", "gemma4_text", "gemma4_unified"}
    seen = 0
    for path in sorted(HUB_CONFIGS.glob("*.json")):
        data = json.loads(path.read_text())
        if data.get("model_type") not in families:
            continue
        rep = report(data)
        assert rep.family in ("compressed", "kv-sharing"), path.name
        assert rep.alpha_bytes_per_token > 0, path.name
        seen += 1
    assert seen >= 4  # V4-Flash and three Gemma 4 configs
