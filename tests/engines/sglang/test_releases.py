"""SGLang's rules per release (hfkv/engines/sglang/releases.tsv, rules.py): each column that SGLang 0.5.12's
oracle rows called for, derived by hand on fixtures, the arithmetic beside the expected value.

The rules were read in the released wheels (docs/engine-versions-verified.md; each field's docstring names the
file and function); ``--engine sglang==X`` picks the span covering X (its cells are the span's ``newest``).
"""

from __future__ import annotations

import dataclasses

import pytest

from hfkv.engines import simulate
from hfkv.engines.contract import Device, EngineInput, EngineKnobs
from hfkv.engines.layout import Layout
from hfkv.engines.sglang import memory
from hfkv.engines.sglang.rules import rules
from hfkv.errors import UnsupportedModelError

from _helpers import QWEN3_NEXT, V32, GiB
from _helpers import fixture_report as report

MIB = 1 << 20
H200 = Device("H200", smi_bytes=143_771 * MIB, cuda_total_bytes=150_754_820_096)  # nvidia-smi 143,771 MiB
V4 = "deepseek-ai__DeepSeek-V4-Flash"


def fraction(model: EngineInput, version: str, tp: int = 1) -> float:
    return memory.mem_fraction_static(H200, Layout(tp=tp, engine="sglang"), EngineKnobs.resolve({}),
                                      memory.traits(model, rules(version)))[0]


# -- prefill_graph_off_archs, prefill_graph_dsa_off, prefill_graph_multimodal, prefill_graph_kda_off -------------

def test_a_listed_architecture_reserves_no_prefill_graph():
    # 0.5.12 lists Qwen3NextForCausalLM in piecewise_cuda_graph_disabled_model_archs: on an H200 (chunk 8,192,
    # decode graphs to 256) the reserve is 512 + 1.5 × 8,192 + 1/8 × 1,024 + 2 × 256 = 13,440 MiB:
    # (143,771 − 13,440) / 143,771 = 0.90652 → 0.907, what 0.5.12's ServerArgs printed for Qwen3-Next.
    qwen = EngineInput.of(report(QWEN3_NEXT))
    assert fraction(qwen, "0.5.12") == 0.907
    # 0.5.23 reads no such list: + 8 MiB × 58 prefill shapes = 13,904 MiB → 0.90329 → 0.903.
    assert fraction(qwen, "0.5.23") == 0.903


def test_a_dsa_model_reserves_no_prefill_graph_up_to_0_5_12():
    # is_deepseek_nsa: a DeepseekV3ForCausalLM config with DSA (index_topk) is not on the name list, but
    # 0.5.10–0.5.12 turn its graph off for DSA: 13,440 MiB → 0.907. From 0.5.13 it keeps the graph, which an
    # MLA model reserves as 1,536 MiB: 13,440 + 1,536 = 14,976 → (143,771 − 14,976) / 143,771 = 0.89583 → 0.896.
    dsa_v3 = dataclasses.replace(EngineInput.of(report(V32)), architectures=["DeepseekV3ForCausalLM"])
    assert fraction(dsa_v3, "0.5.12") == 0.907
    assert fraction(dsa_v3, "0.5.16") == 0.896


def test_multimodal_models_lose_the_prefill_graph_until_0_5_13():
    # 0.5.12's rule 8 ("Multimodal / VLM models") turns the graph off for every multimodal model; from 0.5.14
    # an allow-listed one (Qwen3.5) keeps it.
    qwen35 = EngineInput.of(report("Qwen__Qwen3.5-35B-A3B"))
    assert memory.is_multimodal(qwen35)
    assert memory.traits(qwen35, rules("0.5.12")).prefill_graph is False
    assert memory.traits(qwen35, rules("0.5.23")).prefill_graph is True


def test_kda_models_lose_the_prefill_graph_from_0_5_20():
    # cuda_graph_hook.py's "KDA hybrid linear attention" rule arrives in 0.5.20; before, Kimi-Linear keeps it.
    kimi_linear = EngineInput.of(report("moonshotai__Kimi-Linear-48B-A3B-Instruct-transformers-defaults"))
    assert memory.traits(kimi_linear, rules("0.5.16")).prefill_graph is True
    assert memory.traits(kimi_linear, rules("0.5.21")).prefill_graph is False


# -- dsa_fp8_sizing ---------------------------------------------------------------------------------------------

def test_dsa_fp8_is_sized_with_the_raw_latent_up_to_0_5_16():
    out = simulate(report(V32, kv_cache_dtype="fp8"), engine="sglang==0.5.12", budget_bytes=1_000_050 * 43188 + 100,
                   max_model_len=163840)
    # 61 layers × (512 + 64 B raw fp8 latent + 132 B indexer) = 61 × 708 = 43,188 (0.5.12's oracle rows), while
    # the pool allocates 656 + 132 = 788 B per layer; 0.5.23 sizes with 788: 61 × 788 = 48,068.
    assert out["bytes_per_token"] == 61 * (512 + 64 + 132) == 43188
    assert any("sized with the raw 576 B latent but allocates 656 B" in note for note in out["assumptions"])
    # floor(budget / 43,188) = 1,000,050 → page 64: 15,625 × 64 = 1,000,000
    assert out["max_total_num_tokens"] == 1_000_000
    newest = simulate(report(V32, kv_cache_dtype="fp8"), engine="sglang", budget_bytes=None, max_model_len=None)
    assert newest["bytes_per_token"] == 61 * (656 + 132) == 48068


# -- dsv4_pool --------------------------------------------------------------------------------------------------

# DeepSeek-V4-Flash: compress_ratios lists 44 entries (43 layers and the MTP layer: 0), 21 of ratio 4, 20 of
# ratio 128; rows of 448 nope + 2 × 64 rope + 8 = 584 B; the indexer 128 + 128/128 × 4 = 132 B; the compressor
# state fp32 over head 512 (c4: 2 × 2 × 512 × 4 = 8,192 B, its indexer 2 × 2 × 128 × 4 = 2,048 B; c128:
# 2 × 512 × 4 = 4,096 B), rings of 8 (c4) and 128 (c128) rows per 128-token window page; SWA ratio 0.1.
RING_SWA = 584 * 44 + 8 / 128 * (8192 + 2048) * 21 + 128 / 128 * 4096 * 20  # 25,696 + 13,440 + 81,920 = 121,056
COMPRESSED = (584 + 132) / 4 * 21 + 584 / 128 * 20  # 179 × 21 + 4.5625 × 20 = 3,759 + 91.25 = 3,850.25


def test_dsv4_ring_pool_of_0_5_12():
    out = simulate(report(V4), engine="sglang==0.5.12", budget_bytes=None, max_model_len=None)
    # 0.1 × 121,056 + 3,850.25 = 12,105.6 + 3,850.25 = 15,955.85 (the 0.5.12 oracle's bytes_per_full_token)
    assert out["bytes_per_swa_token"] == RING_SWA == 121056
    assert out["compressed_bytes_per_token"] == {"4": 179, "128": 4.5625}
    assert out["bytes_per_token"] == pytest.approx(0.1 * RING_SWA + COMPRESSED) == 15955.85
    budget = 40 * GiB
    pools = simulate(report(V4), engine="sglang==0.5.12", budget_bytes=budget, max_model_len=65536)
    # no fixed state bytes: int(40 GiB / 15,955.85) = 2,691,778 → page 256: 2,691,584
    assert pools["fixed_state_bytes"] == 0
    assert pools["max_total_num_tokens"] == int(budget / 15955.85) // 256 * 256 == 2_691_584


def test_dsv4_request_state_pool_of_0_5_15_to_0_5_19():
    # The c128 ring leaves the coefficient: 15,955.85 − 0.1 × 4,096 × 20 = 15,955.85 − 8,192 = 7,763.85; its state
    # is fixed bytes for the 256 default running requests + 1 slots: ceil((257 × 128 + 129) / 128) × 128 = 33,152
    # rows × 4,096 B × 20 layers.
    budget = 40 * GiB
    out = simulate(report(V4), engine="sglang==0.5.16", budget_bytes=budget, max_model_len=65536)
    assert out["bytes_per_token"] == pytest.approx(15955.85 - 8192) == 7763.85
    fixed = 33152 * 4096 * 20
    assert out["fixed_state_bytes"] == fixed
    assert out["max_total_num_tokens"] == int((budget - fixed) / 7763.85) // 256 * 256


def test_dsv4_before_0_5_12_is_refused():
    with pytest.raises(UnsupportedModelError, match="SGLang 0.5.9 has no DeepSeek V4 pool"):
        simulate(report(V4), engine="sglang==0.5.9", budget_bytes=None, max_model_len=None)


# -- first_release (the architecture table's column the release's registry is read from) ------------------------

def test_a_release_without_the_class_says_so():
    # KimiK3ForConditionalGeneration first appears in 0.5.17's models/ (read in the wheels): 0.5.12 has no class.
    old = simulate(report("moonshotai__Kimi-K3"), engine="sglang==0.5.12", budget_bytes=None, max_model_len=None)
    assert any("SGLang 0.5.12 registers no class for KimiK3ForConditionalGeneration (first in 0.5.17)" in w
               for w in old["warnings"])
    new = simulate(report("moonshotai__Kimi-K3"), engine="sglang==0.5.17", budget_bytes=None, max_model_len=None)
    assert not any("registers no class" in w for w in new["warnings"])
