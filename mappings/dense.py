"""Dense attention (MHA / GQA / MQA): every layer full, or windowed on every layer when the config
sets ``sliding_window`` (Mistral, Phi-3, PhiMoE: vLLM applies it to all layers), or Qwen2-style
``use_sliding_window`` + ``max_window_layers``.
"""

from __future__ import annotations

from hfkv.config import ConfigView
from hfkv.specs import Layout

from .common import pattern_layout
from .registry import register

_GQA_READS = (
    "num_hidden_layers|n_layer|num_layers|n_layers", "num_attention_heads|n_head|n_heads",
    "num_key_value_heads|n_head_kv|num_kv_heads|multi_query_group_num|attn_config.kv_n_heads",
    "multi_query", "new_decoder_architecture", "head_dim|kv_channels", "hidden_size|n_embd|d_model",
    "v_head_dim", "sliding_window", "layer_types", "max_position_embeddings",
)


@register(
    family="dense",
    model_types=(
        "llama", "mistral", "mixtral", "ministral", "ministral3", "gpt2", "gpt_bigcode", "opt", "bloom",
        "falcon", "RefinedWeb", "RefinedWebModel", "gemma", "phi", "phi3", "phimoe", "glm4_moe", "glm4",
        "glm", "minimax_m2", "chatglm", "mpt", "dbrx", "baichuan", "internlm2", "starcoder2", "gpt_neox",
        "gptj", "stablelm", "olmo", "olmo2", "olmoe", "granite", "granitemoe", "cohere", "deepseek",
        "qwen", "yi", "nemotron", "arcee", "seed_oss", "ernie4_5", "ernie4_5_moe", "hunyuan_v1_dense",
        "hunyuan_v1_moe", "bailing_moe", "exaone", "persimmon", "codegen", "gpt_neo", "xverse", "step3",
    ),
    architectures=("LLaMAForCausalLM", "RWForCausalLM", "ChatGLMModel", "MPTForCausalLM"),
    reads=_GQA_READS,
    fixtures={
        "llama": "meta-llama__Meta-Llama-3.1-8B", "mistral": "Hugofernandez__Mistral-7B-v0.1-colab-sharded",
        "gemma": "google__gemma-2b-it", "falcon": "tiiuae__falcon-180B-chat",
        "RefinedWeb": "tiiuae__falcon-40b", "bloom": "bigscience__bloom", "opt": "facebook__opt-125m",
        "phi3": "microsoft__Phi-3-mini-4k-instruct", "phimoe": "microsoft__Phi-mini-MoE-instruct",
        "chatglm": "THUDM__chatglm2-6b", "mpt": "replit__replit-code-v1_5-3b",
        "glm4_moe": "zai-org__GLM-4.5", "mixtral": "mistralai__Mixtral-8x22B-v0.1",
    },
)
def dense(cfg: ConfigView) -> Layout:
    """Every layer full; a ``sliding_window`` (or ``layer_types``) windows the layers it names."""
    return pattern_layout(cfg, default_window=None, default_rule=None)


@register(
    family="dense",
    model_types=("qwen2", "qwen3", "qwen3_moe"),
    reads=_GQA_READS + ("use_sliding_window", "max_window_layers"),
    fixtures={"qwen2": "Qwen__Qwen2-7B-Instruct", "qwen3": "Qwen__Qwen3-8B", "qwen3_moe": "Qwen__Qwen3-30B-A3B"},
)
def qwen2(cfg: ConfigView) -> Layout:
    """Qwen2/Qwen3: a window only with ``use_sliding_window``; then layers i ≥ ``max_window_layers`` slide."""
    first = cfg.integer("max_window_layers", default=0)
    return pattern_layout(cfg, default_window=None, default_rule=lambda i, n: i >= first)


@register(
    family="dense",
    model_types=("qwen2_moe",),
    reads=_GQA_READS + ("use_sliding_window", "max_window_layers"),
)
def qwen2_moe(cfg: ConfigView) -> Layout:
    """Qwen2-MoE: with ``use_sliding_window``, odd-numbered (1-based) layers below ``max_window_layers`` slide."""
    below = cfg.integer("max_window_layers", default=0)
    return pattern_layout(cfg, default_window=None, default_rule=lambda i, n: (i + 1) % 2 == 1 and i < below)
