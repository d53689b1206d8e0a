"""vLLM 0.33.0's attention backend for a model on one GPU generation, and the block size it implies.

The rules are read from ``vllm/platforms/cuda.py`` (``_get_backend_priorities``: the first backend
whose ``validate_configuration`` passes wins), each backend's ``supports_compute_capability`` and
``get_supported_kernel_block_sizes``, and ``Platform._preferred_block_size_for_backends``: the
default block 16 unless the backend's kernels refuse it, then their smallest size.

- MLA: SM 10.x FLASHINFER_MLA (kernels 32/64: block 32); SM 9.x FLASH_ATTN_MLA (FA3, 16-token
  multiples) for 16-bit KV, FLASHMLA (64) for fp8 (FA-MLA takes no fp8 KV); other generations
  TRITON_MLA (16).
- DSA (an indexer next to the latent): the indexer backend wants 64-token blocks on every generation;
  the sparse latent backend is named as vLLM picks it.
- Standard attention: SM 10.x FLASHINFER (16), else FLASH_ATTN (16). On SM 9.x with fp8 KV and a
  512-wide head (Gemma 4's full layers), FA3 cannot run and the FA4 fp8 kernel uses 64-token pages
  (``FlashAttentionBackend._get_sm90_fa4_fp8_kv_block_size``, ``Gemma4Config``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hfkv.model.specs import IndexerKeys, MLALatent

from hfkv.engines.vllm import facts as vllm_facts
from hfkv.engines.vllm.facts import ArchFacts
from hfkv.engines.vllm.models import VllmRefusal
from hfkv.engines.contract import EngineInput, EngineKnobs

if TYPE_CHECKING:
    from hfkv.engines.vllm.specs import AttentionSpec, KVCacheSpec

SPARSE_MLA_BLOCK = 64  # DeepseekV32IndexerBackend / FlashMLA-sparse kernels
FA4_FP8_HEAD = 512  # head size that sends SM90 fp8 KV to FA4's 64-token pages
FA4_FP8_BLOCK = 64
FA4_MAJORS = (9, 10)  # FlashAttention 4 runs on Hopper and Blackwell
FEW_HEADS = 16  # SM100 bf16 sparse MLA: FA4 sparse at <= 16 query heads per rank
SPARSE_MLA_MAJORS = (9, 10, 12)  # FlashMLA-sparse / FA-MLA-sparse (9, 10), FlashInfer-MLA-sparse-SM120 (12)
MM_PREFIX_SM100_BLOCK = 64  # triton_flashinfer.py kernel_block_sizes
GDN_FLASHINFER_HEAD = 128  # Blackwell FlashInfer GDN prefill needs head_k_dim 128 (and CUDA 13, as the wheels ship)
SPARSE_128_BLOCK = 128  # MINIMAX_M3_SPARSE's kernel pages (ArchFacts.sparse_128_blocks)


@dataclass(frozen=True)
class Backend:
    """The attention backend vLLM picks, the cache block size it leads to, and its smallest kernel block."""

    name: str
    block_size: int
    kernel_block: int  # smallest supported kernel block: the hybrid Mamba alignment starts from it
    why: str


def choose(*, major: int, mla: bool, dsa: bool, kv: str, max_head: int, query_heads: int | None,
           mm_prefix: bool = False, mixed_heads: bool = False, sinks: bool = False) -> Backend:
    """The backend for the model's attention layers on an SM ``major`` GPU with KV dtype ``kv``.

    ``mm_prefix``: the model attends bidirectionally over image positions (``is_mm_prefix_lm``); vLLM
    then routes through a Triton composite, whose SM100 form (TRITON_FLASHINFER) has 64-token kernels.
    ``mixed_heads``: Gemma 4's layers differ in head size; ``Gemma4Config`` wants FA4 for them, and
    forces TRITON_ATTN where FA4 does not run (below SM90). ``sinks``: attention sinks (gpt-oss),
    which FlashAttention supports from FA3 on.
    """
    quantized = kv in ("fp8", "fp4")
    if dsa:
        return Backend(_sparse_mla_name(major, quantized, query_heads), SPARSE_MLA_BLOCK, SPARSE_MLA_BLOCK,
                       "the DSA indexer backend takes 64-token blocks")
    if mla:
        return _mla_backend(major, quantized)
    if mixed_heads and major not in FA4_MAJORS:
        return Backend("TRITON_ATTN", 16, 16, f"mixed head sizes need FA4, which SM{major}x lacks: Triton attention")
    if major == 10 and mm_prefix:
        return Backend("TRITON_FLASHINFER", MM_PREFIX_SM100_BLOCK, MM_PREFIX_SM100_BLOCK,
                       "SM100 multimodal-prefix models: the Triton/FlashInfer composite's kernels are 64 tokens")
    if major == 10 and sinks:
        return Backend("FLASH_ATTN", 16, 16, "SM100 with attention sinks: FlashInfer is not valid, FlashAttention is")
    if major == 10:
        return Backend("FLASHINFER", 16, 16, "SM100 prefers FlashInfer; 16 is one of its kernel sizes")
    if major not in FA4_MAJORS and (mm_prefix or sinks):
        return Backend("TRITON_ATTN", 16, 16, f"FA2 (SM{major}x) has no {'multimodal prefix' if mm_prefix else 'sinks'}"
                                              " support and neither has FlashInfer here: Triton attention")
    if major not in FA4_MAJORS and kv in ("fp8", "fp4"):
        return Backend("FLASHINFER", 16, 16, f"FA2 (SM{major}x) takes no fp8 KV cache: FlashInfer")
    name = "TRITON_FLASH_ATTN" if major == 9 and mm_prefix else "FLASH_ATTN"
    if major == 9 and kv == "fp8" and max_head == FA4_FP8_HEAD:
        return Backend(name, FA4_FP8_BLOCK, FA4_FP8_BLOCK,
                       f"SM90 fp8 KV with {FA4_FP8_HEAD}-wide heads runs FA4, whose fp8 kernel uses 64-token pages")
    return Backend(name, 16, 16, f"SM{major}x prefers FlashAttention (16-token multiples)")


def _mla_backend(major: int, quantized: bool) -> Backend:
    if major == 10:
        return Backend("FLASHINFER_MLA", 32, 32, "SM100 prefers FlashInfer-MLA, whose kernels take 32 or 64 tokens")
    if major == 9 and not quantized:
        return Backend("FLASH_ATTN_MLA", 16, 16, "SM90 prefers FlashAttention-MLA (FA3) for 16-bit KV")
    if major == 9:
        return Backend("FLASHMLA", 64, 64, "SM90 fp8 KV: FlashAttention-MLA takes none, FlashMLA's kernel is 64")
    return Backend("TRITON_MLA", 16, 16, f"SM{major}x: no FA-MLA/FlashMLA/FlashInfer-MLA kernel, Triton MLA")


def _sparse_mla_name(major: int, quantized: bool, query_heads: int | None) -> str:
    if major == 10 and quantized:
        return "FLASHINFER_MLA_SPARSE"
    if major == 10:
        return "FLASH_ATTN_MLA_SPARSE_FA4" if query_heads is not None and query_heads <= FEW_HEADS else "FLASHMLA_SPARSE"
    return "FLASHMLA_SPARSE" if quantized else "FLASH_ATTN_MLA_SPARSE"


def packs_sparse_latent(major: int, kv: str) -> bool:
    """Whether the DSA latent is FlashMLA-sparse's packed fp8_ds_mla / nvfp4_ds_mla layout.

    SM100 with a quantized KV picks FLASHINFER_MLA_SPARSE, which stores the plain latent
    (kv_lora_rank + rope dims at the KV dtype's width; oracle rows: 61 × (576 + 132) × 64 per block).
    """
    quantized = kv in ("fp8", "fp4")
    return quantized and _sparse_mla_name(major, quantized, None) == "FLASHMLA_SPARSE"


def mamba_checkpoint_alignment(variant: str, major: int, head_dim: int = 0) -> int | None:
    """Token alignment of the prefill checkpoint a state layer exports in align mode (None: it exports none).

    GDN (``qwen_gdn_linear_attn.py``): FlashInfer's GDN prefill (SM90; SM 10/12 with head_k_dim 128)
    exports states every 64 tokens; OLMo-Hybrid's GDN (``olmo_gdn_linear_attn.py``, variant "gdn-plain")
    exports none. KDA (``kda_checkpoint.py``): FlashKDA (SM 9/10/12) every 16.
    Mamba-2 exports from inside the forward pass at any position but declares no alignment.
    """
    if variant == "gdn":
        flashinfer = major == 9 or (major in (10, 12) and head_dim == GDN_FLASHINFER_HEAD)
        return 64 if flashinfer else None
    if variant == "kda":
        return 16 if major in (9, 10, 12) else None
    return None


def checkpoint_blocks(variant: str, major: int, head_dim: int = 0) -> int:
    """``num_prefill_checkpoint_blocks`` of a state layer's MambaSpec (one more block per request in align mode)."""
    if variant == "mamba2":
        return 1  # MambaMixer2.get_kv_cache_spec
    return int(mamba_checkpoint_alignment(variant, major, head_dim) is not None)


# -- the model's side: what the choice reads from a report ---------------------------------------


def is_dsa(report: EngineInput) -> bool:
    """DeepSeek sparse attention: an indexer next to an MLA latent (MiniMax-M3's MSA is not one)."""
    parts = [p for layer in report.layer_specs for p in layer.parts]
    return any(isinstance(p, IndexerKeys) for p in parts) and any(isinstance(p, MLALatent) for p in parts)


def class_facts(report: EngineInput) -> ArchFacts | None:
    """The facts of the class vLLM builds for this model (None: not one of its registered classes)."""
    return vllm_facts.model_facts(report.architectures)


def sparse_128(report: EngineInput) -> bool:
    """MiniMax-M3's MSA (``ArchFacts.sparse_128_blocks``): 128-token kernel pages, index keys kept in
    the model dtype."""
    found = class_facts(report)
    return found is not None and found.sparse_128_blocks


def query_heads(report: EngineInput) -> int | None:
    config = report.config or {}
    heads = config.get("num_attention_heads")
    return heads // report.tensor_parallel_size if isinstance(heads, int) else None


def mm_prefix(report: EngineInput) -> bool:
    """is_mm_prefix_lm: bidirectional attention over image positions, a rule of the model type
    (``ModelTypeFacts.mm_prefix``: always, or when the text config says so)."""
    rule = vllm_facts.model_type_facts(report.model_type).mm_prefix
    return rule is not None and rule.applies(report.config or {})


def alibi(report: EngineInput) -> bool:
    """ALiBi position bias (``ArchFacts.alibi``: always, or when the config's ``alibi`` is true):
    FlashAttention falls back to FA2 for it."""
    found = class_facts(report)
    if found is None:
        return False
    return found.alibi == "always" or (found.alibi == "config" and (report.config or {}).get("alibi") is True)


def sinks(report: EngineInput) -> bool:
    """Every attention layer has per-head sinks (``ArchFacts.attention_sinks`` ``all``)."""
    found = class_facts(report)
    return found is not None and found.attention_sinks == "all"


def mixed_heads(report: EngineInput, attention: list[AttentionSpec]) -> bool:
    """The class's config hook wants FA4 for heterogeneous head sizes (``ArchFacts.mixed_heads_fa4``)
    and this model's attention layers do differ in head size."""
    found = class_facts(report)
    return found is not None and found.mixed_heads_fa4 and len({s.head_dim for s in attention}) > 1


def capability_tuple(knobs: EngineKnobs) -> tuple[int, int]:
    major, minor = knobs.compute_capability.split(".")
    return int(major), int(minor)


def choose_backend(report: EngineInput, specs: list[KVCacheSpec], kv: str, knobs: EngineKnobs) -> Backend | None:
    """The attention backend vLLM picks on this GPU generation (None for attention-free models);
    ``VllmRefusal`` where the picked backend cannot run the model."""
    attention = [s for s in specs if s.grows]
    if not attention:
        return None
    major, dsa = knobs.capability_major, is_dsa(report)
    if dsa and major not in SPARSE_MLA_MAJORS:
        raise VllmRefusal(f"No valid attention backend found for cuda (sparse MLA backends run on SM "
                          f"{'/'.join(f'{m}x' for m in SPARSE_MLA_MAJORS)}, not "
                          f"{knobs.compute_capability})")
    max_head = max(s.head_dim for s in attention)
    backend = choose(major=major, mla=any(s.mla for s in attention), dsa=dsa, kv=kv,
                     max_head=max_head, query_heads=query_heads(report), mm_prefix=mm_prefix(report),
                     mixed_heads=mixed_heads(report, attention), sinks=sinks(report))
    check_backend_dtype(report, backend, kv, knobs, max_head)
    if sparse_128(report):
        return Backend("MINIMAX_M3_SPARSE", SPARSE_128_BLOCK, SPARSE_128_BLOCK,
                       "MiniMax-M3's sparse attention kernels page by 128 tokens")
    return backend


FA4_SM90_FP8_HEAD = 512  # flash_attn.py: FA4 on SM90 takes an fp8 KV cache at this head size only


def check_backend_dtype(report: EngineInput, backend: Backend, kv: str, knobs: EngineKnobs, max_head: int = 0) -> None:
    """The KV dtypes the chosen backend refuses at layer build time (flash_attn.py, triton_*.py); a
    class whose config hook forces FlashAttention 4 (``ArchFacts.forced_fa4``) is checked as FA4."""
    found = class_facts(report)
    forced_fa4 = found is not None and found.forced_fa4
    if forced_fa4 and kv in ("fp8", "fp4") and knobs.capability_major == 9 and max_head != FA4_SM90_FP8_HEAD:
        raise VllmRefusal("Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this configuration. "
                          "Reason: ['FP8 KV cache requires FA3 on SM90, FA4 with head_size=512 on SM90, or FA4 on "
                          f"SM100'] ({found.architecture}'s config forces FlashAttention 4 on SM90)")
    if backend.name == "FLASH_ATTN" and alibi(report) and kv in ("fp8", "fp4"):
        raise VllmRefusal("FlashAttention does not support fp8 kv-cache on this device. (ALiBi runs FA2, which "
                          "takes no fp8 KV cache)")
    triton = {"TRITON_MLA": "Triton MLA", "TRITON_ATTN": "Triton attention"}.get(backend.name)
    if triton and kv == "fp8" and capability_tuple(knobs) < (8, 9):
        raise VllmRefusal(f"FP8 KV cache is not supported by the {triton} backend (compute capability "
                          f"{knobs.compute_capability}); native FP8 (fp8e4nv) requires SM89+")
