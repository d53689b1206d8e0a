"""DeepSeek-style multi-head latent attention (DeepSeek V2/V3, Kimi K2, MiniCPM3, ...) and DSA
(DeepSeek V3.2, GLM-5, HY-V4): one latent of ``kv_lora_rank`` + ``qk_rope_head_dim`` values per token,
plus, for DSA, indexer keys on every layer that computes its own top-k. A DeepSeek-V2 backbone with
``qk_nope_head_dim = qk_rope_head_dim = 0`` (Unlimited-OCR, DeepSeek-OCR) is plain MHA instead.
"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.model.specs import LayerSpec, Layout

from hfkv.mappings.readers.attention_keys import num_layers, sliding_window
from hfkv.mappings.readers.latent_keys import (
    MLA_IGNORES, dsa_indexer, dsa_skips_indexer, mha_part, mla_latent, plain_mha,
)
from hfkv.mappings.readers.layer_builders import mtp_note, pattern_layout
from hfkv.mappings.registry import register


MLA_READS = ("num_hidden_layers", "kv_lora_rank", "qk_rope_head_dim", "num_nextn_predict_layers")


@register(
    family="mla",
    model_types=(
        "deepseek_v2", "deepseek_v3", "kimi_k2", "kimi_k25", "kimi_vl", "minicpm3", "glm4_moe_lite",
        "sarvam_mla", "axk1", "pangu_ultra_moe", "mistral_large_3", "deepseek_vl_v2",
        "unlimited-ocr", "unlimited_ocr", "unlimited_language",  # Unlimited-OCR: root, vLLM alias, SGLang's text
    ),
    architectures=(
        "MiniCPM3ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM", "AXK1ForCausalLM",
        "Glm4MoeLiteForCausalLM", "KimiVLForConditionalGeneration", "KimiK25ForConditionalGeneration",
        "MistralLarge3ForCausalLM", "PanguUltraMoEForCausalLM", "SarvamMLAForCausalLM",
        "UnlimitedOCRForCausalLM",
    ),
    reads=MLA_READS,
    ignores=MLA_IGNORES,
    fixtures={
        "deepseek_v2": "deepseek-ai__DeepSeek-V2-Lite", "deepseek_v3": "deepseek-ai__DeepSeek-V3",
        "kimi_k2": "moonshotai__Kimi-K2-Instruct", "kimi_k25": "moonshotai__Kimi-K2.5-transformers-defaults",
        "minicpm3": "openbmb__MiniCPM3-4B-transformers-defaults", "unlimited-ocr": "baidu__Unlimited-OCR",
    },
)
def mla(cfg: ConfigView) -> Layout:
    """Every layer caches one latent: E = (d_c + d_r)·e, n = S, replicated across TP ranks.

    ``qk_nope_head_dim = qk_rope_head_dim = 0`` is plain MHA (``mha_layout``). A config that writes
    ``kv_lora_rank: null`` (DeepSeek-VL2-Tiny) is not MLA either: vLLM's ``use_mla`` is
    ``kv_lora_rank is not None``, and the layers are standard attention. A sliding window is never
    applied to the latent (``mla_latent``); a note says it was not.
    """
    if plain_mha(cfg):
        return mha_layout(cfg)
    if "kv_lora_rank" in cfg.text and cfg.text["kv_lora_rank"] is None:
        cfg.mark("kv_lora_rank")
        # DeepseekV2Config's head_dim is the RoPE dim; the engines' DeepseekAttention takes hidden/heads.
        cfg.ignore_class_value("head_dim")
        layout = pattern_layout(cfg, default_window=None, default_rule=None)
        layout.notes.insert(0, "kv_lora_rank is null: standard attention, not MLA (vLLM's use_mla rule)")
        return layout
    n = num_layers(cfg)
    latent = mla_latent(cfg)
    layers = [LayerSpec(index=i, kind="mla", parts=(latent,)) for i in range(n)]
    return Layout(layers=layers, notes=unapplied_window_note(cfg) + mtp_note(cfg))


def unapplied_window_note(cfg: ConfigView) -> list[str]:
    """A written window that bounds nothing here: neither engine windows a DeepSeek-V2 MLA latent."""
    window = sliding_window(cfg)
    if window is None:
        return []
    return [f"sliding window {window} not applied: vLLM's and SGLang's DeepSeek-V2 MLA layers read none "
            "(full latent cache, n = S)"]


def mha_layout(cfg: ConfigView) -> Layout:
    """Plain MHA on every layer, full attention: ``DeepseekAttention`` in both engines (``mha_part``).

    Unlimited-OCR's ``sliding_window_size`` is R-SWA, an attention mask over a prompt that stays
    cached: vLLM builds ``RSWAAttention`` whose ``RSWASpec`` is a full-attention spec (pools and
    admission sized for every token), SGLang's prefill-aware SWA never evicts the prompt. Only
    generated tokens further back than the window are freed during decode, which a warning says.
    """
    part = mha_part(cfg)
    notes = [f"qk_nope_head_dim = qk_rope_head_dim = 0: plain multi-head attention, not MLA "
             f"(vLLM's and SGLang's DeepseekAttention, head_dim = hidden_size / heads = {part.head_dim})"]
    window = sliding_window(cfg)
    if window is not None and "UnlimitedOCRForCausalLM" in cfg.architectures:
        notes.append(f"R-SWA window {window} masks attention, it does not bound the cache: every prompt token "
                     "is kept (vLLM's RSWASpec is full attention), n(S) = S")
        cfg.warn(f"R-SWA: generated tokens more than {window} behind the newest are freed during decode "
                 f"(vLLM's RSWAManager, SGLang's swa_evict_floor), so n(S) = S is exact for an S-token prompt "
                 f"and an upper bound once a request's output passes {window} tokens")
    elif window is not None:
        cfg.warn(f"sliding window {window} on DeepSeek-V2 plain-MHA layers not applied (full cache): vLLM's "
                 "Attention may still take it from its cache config, SGLang does not; not checked against either")
    layers = [LayerSpec(index=i, kind=part.kind, parts=(part,)) for i in range(num_layers(cfg))]
    return Layout(layers=layers, notes=notes + mtp_note(cfg))


@register(
    family="dsa",
    model_types=("deepseek_v32", "glm_moe_dsa", "hy_v4"),
    architectures=("DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM", "HYV4ForCausalLM"),
    reads=MLA_READS + (
        "index_topk", "index_head_dim", "indexer_types", "index_topk_freq", "index_topk_pattern",
        "index_skip_topk_offset", "cli_factor",
    ),
    ignores=MLA_IGNORES,
    fixtures={"deepseek_v32": "deepseek-ai__DeepSeek-V3.2", "glm_moe_dsa": "zai-org__GLM-5-transformers-defaults"},
)
def dsa(cfg: ConfigView) -> Layout:
    """MLA plus indexer keys on the layers that compute top-k; decode reads ``index_topk`` latents."""
    n = num_layers(cfg)
    topk = cfg.optional_int("index_topk", minimum=1)
    latent = mla_latent(cfg, topk=topk)
    indexer = dsa_indexer(cfg)
    cfg.mark("index_n_heads")
    layers = []
    for i in range(n):
        if dsa_skips_indexer(cfg, i):
            layers.append(LayerSpec(index=i, kind="dsa-shared-topk", parts=(latent,)))
        else:
            layers.append(LayerSpec(index=i, kind="dsa", parts=(latent, indexer)))
    notes = mtp_note(cfg)
    skipped = sum(1 for layer in layers if len(layer.parts) == 1)
    if skipped:
        notes.append(f"{skipped} layer(s) reuse the previous layer's top-k and keep no indexer keys")
    return Layout(layers=layers, notes=notes)
