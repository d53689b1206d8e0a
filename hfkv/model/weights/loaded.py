"""Bytes as the engines hold them, where that differs from the files: a float32 checkpoint, and MXFP4
experts padded to vLLM's Marlin kernel.

Under ``--dtype auto`` (the default) vLLM and SGLang load a float32 model in a 16-bit dtype: vLLM's
``_resolve_auto_dtype`` (vllm/config/model.py) replaces a float32 config dtype by the platform's
first supported dtype ("Downcast for float32 models": bfloat16 on GPUs that support it, float16
otherwise, float16 for pooling models); SGLang's ``_get_and_verify_dtype``
(python/sglang/srt/configs/model_config.py) casts float32 to float16 (bfloat16 for Gemma). Both
are 2 bytes an element, so a float32 checkpoint is held in half its file size. Tensors a family
keeps in float32 on purpose (router biases) are stated by the family and stay at 4 bytes.

MXFP4 experts (gpt-oss: ``quant_method: mxfp4``) are held padded. vLLM's ``Mxfp4MoEMethod.create_weights``
(vllm/model_executor/layers/quantization/mxfp4.py, 0.11.2) allocates, under its Marlin backend, the
fused gate/up weight as (E, 2 × I', H' / 2) uint8 with (E, 2 × I', H' / 32) e8m0 scales and a bf16
bias of 2 × I', and the down weight as (E, H', I' / 2) with (E, H', I' / 32) scales and a bf16 bias of H',
where I' is the expert width rounded up to 128 and H' the hidden size rounded up to 256 ("the moe marlin
kernel requires that for each linear n % 256 == 0 and k % 128 == 0");
``prepare_moe_fp4_layer_for_marlin`` (utils/marlin_utils_fp4.py) repacks them at the same sizes. Marlin
is what ``get_mxfp4_backend`` picks on an SM 8.x GPU, on SM 9.0 unless triton_kernels is installed (it is
not a vLLM dependency) or ``VLLM_USE_FLASHINFER_MOE_MXFP4_BF16`` is set, and with
``VLLM_MXFP4_USE_MARLIN``. gpt-oss-120b (H 2880 → 3072, I 2880 → 2944) is so held in 70,756,592,256 B
where its files hold 65,248,815,744 B; vLLM 0.11.2 printed "Model loading took 65.9651 GiB" (70.83e9 B,
../shared/docs/engine-logs.tsv R27), the rest its RoPE cache and workspaces. Other backends hold other
sizes: Blackwell's FlashInfer pads both to 256 (+4% over Marlin for gpt-oss-120b), Hopper with
triton_kernels keeps I at a multiple of 64 and H as it is (the files' sizes). Each TP shard pads its own
slice of I, so at TP > 1 the experts grow by up to another 128 columns a shard (``shards``: per GPU).

MTP layers are in the files but not loaded: vLLM's ``load_weights`` skips the layers
``get_spec_layer_idx_from_weight_name`` names (vllm/model_executor/models/utils.py, 0.34.0), and only a
speculative draft that uses them loads them.
"""

from __future__ import annotations

from typing import Any

from hfkv.model.weights.records import Tensor, WeightsEstimate

LOADED_BYTES = 2  # bfloat16 or float16: the engines' 16-bit dtype either way
PADDED_NOTE = ("MXFP4 experts as vLLM's Marlin backend holds them (vllm/model_executor/layers/quantization/mxfp4.py "
               "Mxfp4MoEMethod.create_weights: expert width padded to 128, hidden size to 256): {extra:,} B over the "
               "files' {files:,} B; Blackwell's FlashInfer backend pads both to 256, Hopper with triton_kernels keeps "
               "the files' sizes, and each TP shard pads its own slice")
DOWNCAST_NOTE = ("float32 checkpoint priced at the 16-bit dtype vLLM and SGLang load it in under --dtype auto "
                 "(bfloat16, or float16 where the GPU lacks it); the files hold {files}")


def loaded_base(base: int) -> int:
    """Bytes per unquantised element as loaded: a 32-bit (or wider) float checkpoint at 2."""
    return LOADED_BYTES if base > LOADED_BYTES else base


def downcast_checkpoint(section: dict[str, Any], base: int, stated: bool) -> dict[str, Any]:
    """``section`` (the checkpoint's figures: Hub metadata or headers) with its F32 elements at 2
    bytes when the model's dtype is float32 (``base`` 4) or unstated and the checkpoint all F32
    (vLLM then takes the dtype from the files); otherwise ``section`` unchanged."""
    counts = section.get("parameters") or {}
    f32 = counts.get("F32", 0)
    all_f32 = bool(counts) and set(counts) == {"F32"}
    if not f32 or section.get("weights_bytes") is None or not (base > LOADED_BYTES or (not stated and all_f32)):
        return section
    files = section["weights_bytes"]
    note = DOWNCAST_NOTE.format(files=f"{files:,} B")
    return {**section, "weights_bytes": files - (4 - LOADED_BYTES) * f32,
            "note": "; ".join(n for n in (section.get("note"), note) if n)}


MTP_NOTE = ("MTP layers: {bytes:,} B of the files, which the engines load only as a speculative-decoding draft "
            "(vLLM's load_weights skips the layers get_spec_layer_idx_from_weight_name names; SGLang's too): not "
            "counted as loaded")
TIED_NOTE = ("{bytes:,} B of the files are a head tied to the embeddings, which the engines do not load (vLLM's "
             "load_weights skips 'lm_head.' when tie_word_embeddings is set; it holds one copy)")


def as_loaded(section: dict[str, Any], estimate: WeightsEstimate) -> dict[str, Any]:
    """``section`` (the checkpoint's figures: files' bytes) as the engines hold them: plus the padding
    their layout adds (the estimate's, the same tensors and arithmetic), less a tied head's stored copy.
    That copy is known exactly from a folder's headers (``lm_head`` in ``section``: their head tensors, or
    zeros); from counts alone (the Hub's) only where the family stores one (Falcon), or where the count
    exceeds the estimate's by exactly one embedding matrix."""
    section = dict(section)
    head = section.pop("lm_head", None)
    groups = section.pop("groups", None)
    files = section["weights_bytes"]
    extra, notes = estimate.padding, []
    if extra:
        notes.append(PADDED_NOTE.format(extra=extra, files=files))
    skip = 0
    if estimate.ties_head:
        if head is not None:
            skip = head["bytes"]
        elif estimate.stores_head:
            skip = estimate.skipped_bytes - estimate.mtp_bytes
        elif section.get("total_parameters"):
            skip = _counted_twice(section["total_parameters"], estimate)
    if skip:
        notes.append(TIED_NOTE.format(bytes=skip))
    mtp = _mtp_in_files(section, groups, estimate)
    section["mtp_bytes"] = mtp or None
    if mtp:
        notes.append(MTP_NOTE.format(bytes=mtp))
    if not extra and not skip and not mtp:
        return section
    return {**section, "weights_bytes": files + extra - skip - mtp,
            "note": "; ".join(n for n in (section.get("note"), *notes) if n)}


def _mtp_in_files(section: dict[str, Any], groups: dict[str, int] | None, estimate: WeightsEstimate) -> int:
    """Bytes of the files' MTP layers (which the engines do not load): from the headers' tensor groups the
    estimate's MTP tensors fall in (exact; 0 for a checkpoint that dropped them), else the estimate's own
    figure where the files' parameter count says they hold them (nearer the estimate's count with its MTP
    layers than without)."""
    if not estimate.mtp_bytes:
        return 0
    if groups is not None:
        from hfkv.sources.checkpoint import tensor_group

        wanted = {tensor_group(t.name) for t in estimate.tensors if t.role == "mtp"}
        return sum(groups.get(g, 0) for g in wanted)
    total = section.get("total_parameters")
    if not isinstance(total, int):
        return estimate.mtp_bytes
    without = estimate.total_parameters - estimate.role("mtp").parameters
    return estimate.mtp_bytes if abs(total - estimate.total_parameters) <= abs(total - without) else 0


def _counted_twice(total: int, estimate: WeightsEstimate) -> int:
    """Bytes of the embedding matrix when ``total`` parameters exceed the estimate's by exactly its
    elements (the files hold the tied head again), else 0."""
    embedding = next((t for t in estimate.tensors if t.kind == "embedding" and t.role == "embedding"), None)
    role = estimate.role("embedding")
    if embedding is None or not role.parameters or total - estimate.total_parameters != embedding.numel:
        return 0
    return embedding.numel * role.bytes // role.parameters


MARLIN_HIDDEN = 256  # vLLM's Marlin MoE kernel: n % 256 == 0 for the down projection's rows ...
MARLIN_INTER = 128  # ... and k % 128 == 0 for its columns (the expert width)


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def mxfp4_marlin_shape(t: Tensor) -> tuple[int, ...] | None:
    """The shape vLLM's Marlin backend holds an MXFP4 expert tensor in (gpt-oss's fused ``gate_up_proj``
    (2 × I, H) and ``down_proj`` (H, I) with their biases), or None for any other tensor."""
    name = t.name
    if ".experts." not in name:
        return None
    if name.endswith("gate_up_proj"):
        return 2 * _round_up(t.shape[0] // 2, MARLIN_INTER), _round_up(t.shape[1], MARLIN_HIDDEN)
    if name.endswith("gate_up_proj.bias"):
        return (2 * _round_up(t.shape[0] // 2, MARLIN_INTER),)
    if name.endswith("down_proj"):
        return _round_up(t.shape[0], MARLIN_HIDDEN), _round_up(t.shape[1], MARLIN_INTER)
    if name.endswith("down_proj.bias"):
        return (_round_up(t.shape[0], MARLIN_HIDDEN),)
    return None
