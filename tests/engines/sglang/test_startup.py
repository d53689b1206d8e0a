"""SGLang 0.5.23 engine mode: each rule of engines.md on real fixtures.

Every expected figure is derived by hand from the model's dimensions, with the arithmetic beside it.
"""

from __future__ import annotations

import json

import pytest

from hfkv.engines import simulate
from hfkv.errors import UnsupportedModelError
from hfkv.inspection import inspect_config

from _helpers import FIXTURES, GEMMA3, GPT_OSS, NEMOTRON, QWEN3_NEXT, V3, V32, GiB
from _helpers import fixture_report as report


def test_sglang_dsa_fp8_cell_and_page():
    out = simulate(report(V32, kv_cache_dtype="fp8"), engine="sglang", budget_bytes=None, max_model_len=None)
    # 61 layers × (656 B packed latent + 132 B indexer): 61 × 788 = 48068
    assert out["bytes_per_token"] == 61 * (656 + 132) == 48068
    assert out["page_size"] == 64  # 64 · index_kpool (1)


def test_sglang_dsa_budget_floors_to_the_page():
    budget = 1_000_050 * 48068 + 100
    out = simulate(report(V32, kv_cache_dtype="fp8"), engine="sglang", budget_bytes=budget, max_model_len=163840)
    # floor(budget / 48068) = 1,000,050 → floored to 64: 15625 × 64 = 1,000,000
    assert out["max_total_num_tokens"] == out["kv_cache_tokens"] == 1_000_000
    assert out["max_mamba_cache_size"] is None


def test_sglang_dsa_bf16_cell():
    out = simulate(report(V32, kv_cache_dtype="bf16"), engine="sglang", budget_bytes=None, max_model_len=None)
    assert out["bytes_per_token"] == 61 * (1152 + 132) == 78324  # 576 × 2 B + 132 B indexer


def test_sglang_mtp_draft_pool_adds_one_target_layer_per_draft_layer():
    out = simulate(report(V32, kv_cache_dtype="fp8"), engine="sglang", budget_bytes=None, max_model_len=None,
                   speculative_draft_layers=1)
    # the draft's MTP layer has a latent and an indexer like each of the 61 target layers: 62 × (656 + 132)
    assert out["bytes_per_token"] == 48068 + 656 + 132 == 62 * 788 == 48856
    out = simulate(report(V3), engine="sglang", budget_bytes=None, max_model_len=None, speculative_draft_layers=2)
    assert out["bytes_per_token"] == 70272 + 2 * 1152 == 72576  # (61 + 2) × 1152


def test_sglang_dsv4_mtp_draft_multiplies_by_l_plus_d_over_l():
    out = simulate(report("deepseek-ai__DeepSeek-V4-Flash"), engine="sglang", budget_bytes=None, max_model_len=None,
                   speculative_draft_layers=1)
    # 7086.75 B per full-pool token (test above) × (43 + 1) / 43
    assert out["bytes_per_token"] == pytest.approx(7086.75 * 44 / 43)


def test_sglang_plain_mla_fp8_is_raw_576():
    out = simulate(report(V3, kv_cache_dtype="fp8", tensor_parallel_size=8), engine="sglang",
                   budget_bytes=None, max_model_len=None)
    assert out["bytes_per_token"] == 61 * 576 == 35136  # replicated on every TP rank
    out = simulate(report(V3), engine="sglang", budget_bytes=None, max_model_len=None)
    assert out["bytes_per_token"] == 61 * 1152 == 70272


def test_sglang_gpt_oss_hybrid_swa_cell():
    r = report(GPT_OSS)
    # per layer 8 KV heads × (64 + 64) × 2 B = 2048; 18 full + 0.8 × 18 sliding = 36864 + 29491.2
    budget = 663_552_000  # 66355.2 × 10000
    out = simulate(r, engine="sglang", budget_bytes=budget, max_model_len=4096)
    assert out["bytes_per_token"] == pytest.approx(18 * 2048 + 0.8 * 18 * 2048) == 66355.2
    assert out["max_total_num_tokens"] == 10_000
    assert out["swa_tokens"] == 8_000  # 10000 × 0.8
    half = simulate(r, engine="sglang", budget_bytes=None, max_model_len=None, swa_full_tokens_ratio=0.5)
    assert half["bytes_per_token"] == 18 * 2048 + 18 * 1024 == 55296


def test_sglang_gemma3_gets_full_allocation():
    out = simulate(report(GEMMA3), engine="sglang", budget_bytes=None, max_model_len=None)
    # all 62 layers full (52 sliding ones too): 16 KV heads × (128 + 128) × 2 B = 8192; 62 × 8192
    assert out["bytes_per_token"] == 62 * 8192 == 507904
    assert "swa_full_tokens_ratio" not in out
    assert any("full KV" in a for a in out["assumptions"])


def test_sglang_mamba_state_reserved_first():
    budget = 10 * GiB
    out = simulate(report(QWEN3_NEXT), engine="sglang", budget_bytes=budget, max_model_len=32768)
    # GDN state per layer (SGLang: SSM fp32, conv bf16):
    #   SSM 32 heads × 128 × 128 × 4 B = 2,097,152; conv (32·128 + 2·16·128) × 3 × 2 B = 49,152
    slot = 36 * (2_097_152 + 49_152)  # 36 GDN layers = 77,266,944
    assert out["mamba_bytes_per_request"] == slot == 77_266_944
    size = int((budget * 9 / 19 - slot) // slot)  # budget · 0.9/1.9, minus one slot, in slots
    assert out["max_mamba_cache_size"] == size
    cell = 12 * 2 * (256 + 256) * 2  # 12 full layers, 2 KV heads, head_dim 256 → 24576
    assert out["bytes_per_token"] == cell
    tokens = (budget - (size + 1) * slot) // cell
    assert out["max_total_num_tokens"] == tokens
    # Qwen3-Next keeps the Mamba extra buffer: 3 slots + 2 tracking slots per request = ratio 5
    assert out["max_running_requests"] == min(4096, tokens // 2, size // 5)


def test_sglang_without_radix_cache_running_requests_set_the_mamba_pool():
    out = simulate(report(QWEN3_NEXT), engine="sglang", budget_bytes=10 * GiB, max_model_len=32768,
                   enable_prefix_caching=False, max_running_requests=20)
    assert out["max_mamba_cache_size"] == 20
    assert out["max_running_requests"] == 20  # ratio 1 without radix cache


def test_sglang_dsv4_bytes_per_full_token():
    r = report("deepseek-ai__DeepSeek-V4-Flash")
    out = simulate(r, engine="sglang", budget_bytes=None, max_model_len=None)
    # 43 layers: 21 c4 (ratio 4), 20 c128 (ratio 128), every layer an SWA latent.
    # paged row: page 256 → ceil(256 × 584 / 576) × 576 / 256 = 585; page 2 (c128) → 3 × 576 / 2 = 864
    swa = 585 * 43 + (8 / 256) * (2 * 2 * 512 * 4 + 2 * 2 * 128 * 4) * 21  # 25155 + 320 × 21 = 31875
    c4 = 585 / 4 + 132 / 4  # 146.25 + 33 = 179.25
    c128 = 864 / 128  # 6.75
    assert out["bytes_per_swa_token"] == swa == 31875
    assert out["compressed_bytes_per_token"] == {"4": 179.25, "128": 6.75}
    assert out["bytes_per_token"] == pytest.approx(0.1 * swa + c4 * 21 + c128 * 20) == 7086.75
    assert out["page_size"] == 256


def test_sglang_dsv4_pools_with_a_running_request_cap():
    budget = 40 * GiB
    out = simulate(report("deepseek-ai__DeepSeek-V4-Flash"), engine="sglang", budget_bytes=budget,
                   max_model_len=65536, max_running_requests=63)
    # c128 state: (64 slots × 128 + 129 → 8448 rows) × 2 × 512 × 4 B per c128 layer, 20 layers
    fixed = 8448 * 4096 * 20
    assert out["fixed_state_bytes"] == fixed
    full = int((budget - fixed) // 7086.75) // 256 * 256
    assert out["max_total_num_tokens"] == full
    assert out["swa_tokens"] == int(full * 0.1) // 256 * 256


# -- where SGLang's config classes read a config differently (sglang_config) ---------------------

NEMOTRON_SUPER = "nvidia__Llama-3_3-Nemotron-Super-49B-v1"


def test_sglang_decilm_sizes_every_layer_no_op_blocks_included():
    out = simulate(report(NEMOTRON_SUPER), engine="sglang", budget_bytes=None, max_model_len=None)
    # num_effective_layers = 80 (31 of them no-op attention blocks), 64 heads / n_heads_in_group 8 = 8 KV heads,
    # head_dim 8192 / 64 = 128: 80 × 8 × (128 + 128) × 2 B = 327680 (hfkv's own figure counts 49 layers: 200704)
    assert out["bytes_per_token"] == 80 * 8 * 256 * 2 == 327680
    out = simulate(report(NEMOTRON_SUPER, tensor_parallel_size=8), engine="sglang", budget_bytes=None,
                   max_model_len=None)
    assert out["bytes_per_token"] == 80 * 1 * 256 * 2 == 40960  # 8 KV heads / TP 8 = 1 per GPU


def test_sglang_decilm_variable_gqa_is_refused_with_sglangs_reason():
    data = json.loads((FIXTURES / NEMOTRON_SUPER / "config.json").read_text())
    data["block_configs"][0]["attention"]["n_heads_in_group"] = 4  # 16 KV heads in block 0, 8 elsewhere
    r = inspect_config(data, model="vgqa")
    with pytest.raises(UnsupportedModelError, match="Variable GQA"):
        simulate(r, engine="sglang", budget_bytes=None, max_model_len=None)


def test_sglang_chatglm_v1_gets_one_kv_head_from_sglangs_config_class():
    out = simulate(report("THUDM__chatglm-6b"), engine="sglang", budget_bytes=None, max_model_len=None)
    # no multi_query_group_num in the config: SGLang's ChatGLMConfig default 1 → 28 layers × 1 × (128 + 128) × 2 B
    assert out["bytes_per_token"] == 28 * 1 * 256 * 2 == 14336
    assert any("multi_query_group_num" in a for a in out["assumptions"])
    out = simulate(report("THUDM__chatglm2-6b"), engine="sglang", budget_bytes=None, max_model_len=None)
    assert out["bytes_per_token"] == 28 * 2 * 256 * 2 == 28672  # the config's own multi_query_group_num = 2




ZAYA = "Zyphra__ZAYA1-8B-transformers-defaults"


def test_sglang_zaya_without_zaya_layers_keeps_the_even_layers_only():
    # configs/zaya.py: no zaya_layers → attention (and its CCA state) iff i is even, whatever layer_types says
    # (this config lists 40 'hybrid' layers). The oracle row (tests/oracles/sglang-0.5.23-fixtures.jsonl):
    # 20 layers × 2 KV heads × (128 + 128) × 2 B = 20480 per token; CCA state per layer
    # (8 + 2)·128 × (2 + 2 − 2) × 2 B + 2048 × 1 × 2 B = 5120 + 4096 = 9216, × 20 = 184320 per request.
    out = simulate(report(ZAYA), engine="sglang", budget_bytes=None, max_model_len=None)
    assert out["bytes_per_token"] == 20 * 2 * 256 * 2 == 20480
    assert out["mamba_bytes_per_request"] == 20 * (1280 * 2 * 2 + 2048 * 2) == 184320
    assert any("even layers" in a for a in out["assumptions"])
    # TP 8: the (H + K)·hd conv tensor is split, the (hidden, 1) prev_hs tensor is kept whole on every rank
    # (configs/zaya.py mamba2_cache_params): 20 × (1280 / 8 × 2 × 2 B + 2048 × 2 B) = 20 × 4736 = 94720 (oracle row)
    out = simulate(report(ZAYA, tensor_parallel_size=8), engine="sglang", budget_bytes=None, max_model_len=None)
    assert out["mamba_bytes_per_request"] == 20 * (160 * 2 * 2 + 2048 * 2) == 94720
    data = json.loads((FIXTURES / ZAYA / "config.json").read_text())
    data["zaya_layers"] = ["a"] * 40  # the one key ZayaConfig places layers by: all 40 are attention
    out = simulate(inspect_config(data, model="zaya-listed"), engine="sglang", budget_bytes=None, max_model_len=None)
    assert out["bytes_per_token"] == 40 * 2 * 256 * 2 == 40960
# -- models SGLang cannot serve (sglang_support) --------------------------------------------------


@pytest.mark.parametrize("name, words", [
    ("bigscience__bloom", "BloomForCausalLM has no SGLang class and its transformers"),
    ("tiiuae__falcon-180B-chat", "_supports_attention_backend is False"),
    ("tiiuae__falcon-40b", "RWForCausalLM has no SGLang class, is not a transformers"),
    ("replit__replit-code-v1_5-3b", "Cannot find model module"),
    ("MiniMaxAI__MiniMax-M1-80k", "MiniMaxM1ForCausalLM has no SGLang class"),
    ("decapoda-research__llama-7b-hf", "LLaMAForCausalLM has no SGLang class"),
    ("EleutherAI__gpt-neo-125m", "GPTNeoForCausalLM has no SGLang class and its transformers"),
])
def test_sglang_refuses_what_its_transformers_fallback_refuses(name, words):
    with pytest.raises(UnsupportedModelError, match=words) as err:
        simulate(report(name), engine="sglang", budget_bytes=None, max_model_len=None)
    assert "\n" not in str(err.value)


def renamed(name: str, architecture: str, **keys) -> object:
    data = json.loads((FIXTURES / name / "config.json").read_text())
    data.update(architectures=[architecture], **keys)
    return inspect_config(data, model=f"{name}-as-{architecture}")


def test_sglang_warns_when_its_transformers_fallback_serves_the_model():
    r = renamed("meta-llama__Meta-Llama-3.1-8B", "HeliumForCausalLM")  # no SGLang class, backend-compatible
    out = simulate(r, engine="sglang", budget_bytes=None, max_model_len=None)
    assert out["warnings"] == [w for w in out["warnings"] if "transformers fallback" in w] != []
    assert out["assumptions"][0] == out["warnings"][0]  # the warning is printed first
    assert out["bytes_per_token"] == 32 * 8 * 256 * 2 == 131072  # the generic sizing of the same shapes


def test_sglang_fallback_with_recurrent_layers_says_its_figures_are_not_sglangs():
    # MiniMax-Text-01 (lightning-attention state) via SGLang's transformers fallback: the oracle row (fixtures
    # file, TP 1 bf16) is a plain DefaultPoolConfigurator cell of 131072 B with no state pool; hfkv's figures
    # keep the linear layers as state, so the warning must not claim they are what that path allocates.
    out = simulate(report("MiniMaxAI__MiniMax-Text-01-hf-transformers-defaults"), engine="sglang",
                   budget_bytes=None, max_model_len=None)
    assert out["bytes_per_token"] != 131072
    assert any("no state pool" in w and "not SGLang's" in w for w in out["warnings"])
    assert not any("what that path allocates" in w for w in out["warnings"])


def test_sglang_warns_when_the_repo_code_would_decide():
    r = renamed("meta-llama__Meta-Llama-3.1-8B", "SomeoneElsesForCausalLM", auto_map={"AutoModel": "m.Model"})
    out = simulate(r, engine="sglang", budget_bytes=None, max_model_len=None)
    assert any("repo's own code" in w for w in out["warnings"])


def test_sglang_native_architecture_gets_no_warning():
    out = simulate(report("meta-llama__Meta-Llama-3.1-8B"), engine="sglang", budget_bytes=None, max_model_len=None)
    assert out["warnings"] == []


# -- DeepSeek V4 with a 16-bit KV dtype ------------------------------------------------------------


class Typed:
    """A report that says which --kv-cache-dtype was typed (``typed``), or, with None, that it does not know."""

    def __init__(self, report, typed: str | None):
        self._report, self.kv_cache_dtype_requested, self.options = report, typed, None

    def __getattr__(self, name):
        return getattr(self._report, name)


def untyped(report):
    return Typed(report, None)


def test_sglang_dsv4_with_typed_bf16_is_refused():
    r = Typed(report("deepseek-ai__DeepSeek-V4-Flash", kv_cache_dtype="bf16"), "bf16")
    with pytest.raises(UnsupportedModelError, match="create_buffer asserts fp8"):
        simulate(r, engine="sglang", budget_bytes=None, max_model_len=None)


def test_sglang_dsv4_16_bit_kv_not_known_as_typed_is_sized_as_auto_with_a_warning():
    out = simulate(untyped(report("deepseek-ai__DeepSeek-V4-Flash", kv_cache_dtype="bf16")), engine="sglang",
                   budget_bytes=None, max_model_len=None)
    assert out["bytes_per_token"] == 7086.75  # the fp8 rows of test_sglang_dsv4_bytes_per_full_token
    assert any("create_buffer" in w for w in out["warnings"])
    typed_auto = Typed(report("deepseek-ai__DeepSeek-V4-Flash"), "auto")
    assert simulate(typed_auto, engine="sglang", budget_bytes=None, max_model_len=None)["warnings"] == []


def test_sglang_dsv4_defaults_to_256_running_requests():
    budget = 20 * GiB
    out = simulate(report("deepseek-ai__DeepSeek-V4-Flash"), engine="sglang", budget_bytes=budget,
                   max_model_len=1048576)
    # deepseek_v4_hook: max_running_requests 256 → 257 slots; c128 state rows ceil((257·128 + 129)/128)·128 = 33152,
    # × 2 × 512 × 4 B × 20 c128 layers = 2,715,811,840
    fixed = 33152 * 2 * 512 * 4 * 20
    assert out["fixed_state_bytes"] == fixed == 2_715_811_840
    # (21,474,836,480 − 2,715,811,840) / 7086.75 = 2,647,060.4 → page 256: 10340 × 256 = 2,647,040 (the oracle's)
    assert out["max_total_num_tokens"] == 2_647_040
    assert out["max_running_requests"] == 256
    assert any("index map" in a for a in out["assumptions"])  # the allocator's +8 B per token


# -- page size and backend per GPU generation (sglang_backend) -------------------------------------


def sm(name: str, cc: str | None, **options) -> dict:
    return simulate(report(name, **options), engine="sglang", budget_bytes=None, max_model_len=None,
                    compute_capability=cc)


def test_sglang_minimax_m3_pages_128_on_hopper_and_blackwell():
    assert sm("nvidia__MiniMax-M3-NVFP4", None)["page_size"] == 128  # fa3 on SM90
    assert sm("nvidia__MiniMax-M3-NVFP4", "10.0")["page_size"] == 128  # fa4 / trtllm_mha on SM100


def test_sglang_sm100_page_sizes():
    assert sm("meta-llama__Meta-Llama-3.1-8B", "10.0")["page_size"] == 64  # trtllm_mha raises page 1 to 64
    assert sm("meta-llama__Meta-Llama-3.1-8B", "9.0")["page_size"] == 1  # fa3
    assert sm("deepseek-ai__DeepSeek-V3", "10.0")["page_size"] == 64  # trtllm_mla
    assert sm("deepseek-ai__DeepSeek-V2-Lite", "10.0")["page_size"] == 1  # flashinfer MLA
    assert sm(QWEN3_NEXT, "10.0")["page_size"] == 1  # qwen3_5 override: triton


def test_sglang_sm100_dsa_auto_is_fp8_with_the_raw_latent():
    typed_auto = Typed(report(V32), "auto")
    out = simulate(typed_auto, engine="sglang", budget_bytes=None, max_model_len=None, compute_capability="10.0")
    # auto → fp8_e4m3 on SM100 (no learnable sink); trtllm's raw layout: 61 × (512 + 64 + 132 indexer) = 43188
    assert out["bytes_per_token"] == 61 * (576 + 132) == 43188
    assert out["page_size"] == 64
    assert out["warnings"] == []
    unknown = untyped(report(V32, kv_cache_dtype="bf16"))  # bf16 resolved, but typed or auto? sized as auto
    out = simulate(unknown, engine="sglang", budget_bytes=None, max_model_len=None, compute_capability="10.0")
    assert out["bytes_per_token"] == 43188
    assert any("does not say which was given" in w for w in out["warnings"])
    typed = Typed(report(V32, kv_cache_dtype="bf16"), "bf16")
    out = simulate(typed, engine="sglang", budget_bytes=None, max_model_len=None, compute_capability="10.0")
    assert out["bytes_per_token"] == 61 * (1152 + 132) == 78324  # an explicit bf16 stays bf16


def test_sglang_sm100_mla_names_the_bfloat16_spelling():
    out = sm("deepseek-ai__DeepSeek-V3", "10.0")
    assert any("'bfloat16'" in w for w in out["warnings"])


def test_sglang_other_gpu_generations_are_said_to_be_unmodelled():
    out = sm("meta-llama__Meta-Llama-3.1-8B", "8.0")
    assert any("SM8x is not modelled" in w for w in out["warnings"])


# -- budget arithmetic (sglang_pools) --------------------------------------------------------------


def test_sglang_mamba_running_ratio_per_architecture():
    budget = 10 * GiB
    nano = simulate(report(NEMOTRON), engine="sglang", budget_bytes=budget, max_model_len=8192)
    assert nano["mamba_running_ratio"] == 5  # NemotronH: extra buffer, 3 + 2 tracking slots
    assert nano["max_running_requests"] == min(2048, nano["max_mamba_cache_size"] // 5)
    mamba = simulate(report("state-spaces__mamba-2.8b-hf"), engine="sglang", budget_bytes=budget, max_model_len=4096)
    assert mamba["mamba_running_ratio"] == 3  # MambaForCausalLM: no extra buffer
    off = simulate(report(NEMOTRON), engine="sglang", budget_bytes=budget, max_model_len=8192,
                   enable_prefix_caching=False)
    assert off["mamba_running_ratio"] == 1  # no radix cache


def test_sglang_pure_ssm_pool_is_the_context_length():
    out = simulate(report("state-spaces__mamba-2.8b-hf"), engine="sglang", budget_bytes=10 * GiB, max_model_len=4096)
    # per slot: 64 layers × (SSM 5120 × 16 × 4 B + conv 5120 × 3 × 2 B) = 64 × 358,400 = 22,937,600
    assert out["mamba_bytes_per_request"] == 64 * (5120 * 16 * 4 + 5120 * 3 * 2) == 22_937_600
    # 10 GiB × 0.9 / 1.9 = 5,086,305,683.2 B → (that − 22,937,600) // 22,937,600 = 220 slots
    assert out["max_mamba_cache_size"] == 220
    assert out["max_total_num_tokens"] == 4096  # no KV: SGLang's token count is the context length
    # min(clamp(4096/4096 · 512, 2048, 4096), 4096 // 2) = 2048, capped at 220 // 3 = 73
    assert out["max_running_requests"] == 73


def test_sglang_swa_pool_too_small_for_one_window_is_refused():
    # gpt-oss: cell 66355.2; 6,700,000 // 66355.2 = 100 full tokens, int(100 × 0.8) = 80 SWA tokens ≤ 128 + 1
    with pytest.raises(UnsupportedModelError, match="cannot hold even one request"):
        simulate(report(GPT_OSS), engine="sglang", budget_bytes=6_700_000, max_model_len=4096)


def test_sglang_hybrid_swa_notes_the_index_map():
    out = simulate(report(GPT_OSS), engine="sglang", budget_bytes=None, max_model_len=None)
    assert out["configurator"] == "HybridSWAPoolConfigurator"
    assert any("8 B per full token" in a for a in out["assumptions"])


def test_sglang_sm100_asymmetric_kv_takes_fa4_and_page_128():
    data = json.loads((FIXTURES / "meta-llama__Meta-Llama-3.1-8B" / "config.json").read_text())
    r = inspect_config({**data, "head_dim": 192, "v_head_dim": 128}, model="asymmetric")
    out = simulate(r, engine="sglang", budget_bytes=None, max_model_len=None, compute_capability="10.0")
    assert out["bytes_per_token"] == 32 * 8 * (192 + 128) * 2 == 163840  # K rows 192 wide, V rows 128
    assert out["page_size"] == 128  # has_asymmetric_kv → fa4 → page 128


def test_sglang_architectures_its_config_classes_rename_are_native():
    # configs/olmo3.py: Olmo3ForCausalLM → Olmo2ForCausalLM; configs/deepseek_v41.py: DeepseekV41 → DeepseekV4
    out = simulate(report("allenai__Olmo-3-7B-Instruct-transformers-defaults"), engine="sglang", budget_bytes=None,
                   max_model_len=None)
    assert out["warnings"] == []
    out = simulate(report("deepseek-ai__DeepSeek-V4.1-synthetic"), engine="sglang", budget_bytes=None,
                   max_model_len=None)
    assert out["configurator"] == "DSV4PoolConfigurator"


def test_sglang_context_length_is_its_get_context_length():
    data = json.loads((FIXTURES / "meta-llama__Meta-Llama-3.1-8B" / "config.json").read_text())
    yarn = {**data, "max_position_embeddings": 32768, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}
    out = simulate(inspect_config(yarn, model="yarn"), engine="sglang", budget_bytes=None, max_model_len=None)
    assert out["context_length"] == 4 * 32768 == 131072  # the factor applies: no original_max_position_embeddings
    out = simulate(report("meta-llama__Meta-Llama-3.1-8B"), engine="sglang", budget_bytes=None, max_model_len=None)
    assert out["context_length"] == 131072  # llama3 rope scaling: factor ignored, max_position_embeddings as is
    out = simulate(report("state-spaces__mamba-2.8b-hf"), engine="sglang", budget_bytes=None, max_model_len=None)
    assert out["context_length"] == 2048  # no context key at all: get_context_length's default
    assert any("names no context length" in w for w in out["warnings"])



def test_sglang_refuses_a_context_past_the_derived_one_unless_told(monkeypatch):
    # model_config.py: "User-specified context_length (262144) is greater than the derived context_length
    # (131072) ... set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"; with it, a warning.
    llama = report("meta-llama__Meta-Llama-3.1-8B")
    with pytest.raises(UnsupportedModelError, match=r"context_length \(262144\) is greater than the derived "
                                                    r"context_length \(131072\).*LONGER_CONTEXT_LEN=1"):
        simulate(llama, engine="sglang", budget_bytes=None, max_model_len=262144)
    monkeypatch.setenv("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "1")
    out = simulate(llama, engine="sglang", budget_bytes=None, max_model_len=262144)
    assert out["context_length"] == 262144
    assert any("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is set" in w for w in out["warnings"])


def test_vllm_refuses_a_max_model_len_past_the_derived_one_unless_told(monkeypatch):
    # config/model.py _get_and_verify_max_len: Qwen3-8B derives 40,960 (max_position_embeddings).
    qwen = report("Qwen__Qwen3-8B")
    with pytest.raises(UnsupportedModelError, match=r"max_model_len \(131072\) is greater than the derived "
                                                    r"max_model_len \(40960\).*VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"):
        simulate(qwen, engine="vllm", budget_bytes=None, max_model_len=131072)
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
    assert simulate(qwen, engine="vllm", budget_bytes=None, max_model_len=131072)["max_model_len"] == 131072


def test_sglang_radix_off_with_a_request_cap_sizes_the_swa_pool_from_the_cap():
    budget = (30 << 30) + 7777  # 32,212,262,497 B
    out = simulate(report(GPT_OSS), engine="sglang", budget_bytes=budget, max_model_len=None,
                   enable_prefix_caching=False, max_running_requests=100)
    # SWARequestCapPoolConfigurator: per request window 128 + eviction 128 + page 1 + decode page 1 = 258;
    # 258 × 100 + 2 prefill chunks × 8192 + page 1 = 42185 SWA slots
    assert out["configurator"] == "SWARequestCapPoolConfigurator"
    assert out["swa_tokens"] == 258 * 100 + 2 * 8192 + 1 == 42185
    # the rest to the full pool: 18 full layers × 2048 B = 36864 per token; the SWA pool is 18 × 2048 per slot
    assert out["max_total_num_tokens"] == (budget - 42185 * 36864) // 36864 == 831628  # the oracle's figure
    assert out["max_running_requests"] == 100


def test_sglang_deepseek_v41_warns_that_its_swa_cap_mode_is_not_modelled():
    # The oracle row (fixtures file, TP 1 fp8): 1632.5 B per full token = 653 × 1 + 326.5 × 3 compressed layers,
    # with the SWA pool held as fixed bytes (cap mode); hfkv's ratio sizing differs, so it must say so.
    out = simulate(report("deepseek-ai__DeepSeek-V4.1-synthetic", kv_cache_dtype="fp8"), engine="sglang",
                   budget_bytes=None, max_model_len=None)
    assert any("cap mode" in w and "\n" not in w for w in out["warnings"])
    assert out["swa_full_tokens_ratio"] == 0.1  # DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO, the row's dsv4.swa_ratio
    out = simulate(report("deepseek-ai__DeepSeek-V4-Flash", kv_cache_dtype="fp8"), engine="sglang",
                   budget_bytes=None, max_model_len=None)
    assert not any("cap mode" in w for w in out["warnings"])
