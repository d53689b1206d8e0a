"""SGLang 0.5.23's DeepSeek V4 pools (``DSV4PoolConfigurator``, ``mem_cache/kv_cache_configurator.py``).

Every layer keeps a sliding-window latent in fp8 rows of the v4 layout (584 B, pages padded to
576 B); compressed layers add a pool per compression ratio (c4 with its indexer, c128), and the
request slots hold fixed compressor state. The KV dtype is always fp8: ``auto`` resolves to
fp8_e4m3, and ``DeepSeekV4SingleKVPool.create_buffer`` asserts uint8 (fp8) storage, so SGLang accepts
``--kv-cache-dtype bf16`` and then fails at start-up. The allocator adds an int64 full→SWA index map
(8 B per full token) that the sizing figure leaves out; hfkv prints the sizing figure and notes it.

Which configurator is the release's (``RuleSet.dsv4_pool``): ``paged`` above; ``ring`` (0.5.12–0.5.14)
prices flat 584 B rows over every entry of ``compress_ratios`` (the MTP layer's too) and charges both
compressor rings per SWA token over a window-sized page, with no fixed bytes; ``request`` (0.5.15–0.5.19)
is ``ring`` with the c128 ring moved out of the coefficient into fixed bytes per request slot; ``none``:
the release has no DeepSeek V4 pool.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from hfkv.model.dtypes import block_scaled_bytes, ceil_div
from hfkv.errors import UnsupportedModelError
from hfkv.model.specs import CompressedKV, IndexerKeys, LayerSpec, MLALatent

from hfkv.engines.sglang import registry, swa_pool
from hfkv.engines.sglang.backend import SIXTEEN_BIT, requested_kv_dtype
from hfkv.engines.sglang.config import context_length
from hfkv.engines.sglang.pools import concurrency, floor_to_page, page_size, require_a_page, running_requests
from hfkv.engines.sglang.rules import rules
from hfkv.engines.contract import EngineInput, EngineKnobs, number

DSV4_PAGE = 256
DSV4_ROW = 584  # 448 fp8 nope + 64·2 bf16 rope + 7 scales + 1 pad
DSV4_ALIGN = 576
DSV4_LOW_RATIO_INDEXER = 68  # fp4 indexer of the ratio-1/2 pools
DSV4_C4_RING = 8
DSV4_STATE_BYTES = 4  # fp32 compressor state
DEFAULT_SWA_RATIO = Fraction(1, 10)  # DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO, taken whatever the architecture
DEFAULT_RUNNING_REQUESTS = 256  # arg_groups/deepseek_v4_hook.py: max_running_requests when unset


def dsv4_paged(page_tokens: int) -> Fraction:
    """Bytes per entry of a pool paged ``page_tokens`` entries at a time (rows padded to 576 B)."""
    return Fraction(ceil_div(page_tokens * DSV4_ROW, DSV4_ALIGN) * DSV4_ALIGN, page_tokens)


def dsv4_layers(layers: list[LayerSpec]) -> tuple[int, dict[int, int], int, int]:
    """(layers with a raw window, owned compressed layers per ratio, c4 indexer head dim, latent dim)."""
    windowed = sum(1 for layer in layers if any(isinstance(p, MLALatent) for p in layer.parts))
    per_ratio: dict[int, int] = {}
    index_dim, latent_dim = 128, 512
    for layer in layers:
        for part in layer.parts:
            if isinstance(part, CompressedKV) and part.copies:
                per_ratio[part.ratio] = per_ratio.get(part.ratio, 0) + 1
                latent_dim = part.head_dim
            elif isinstance(part, IndexerKeys) and part.ratio > 1:
                index_dim = part.head_dim
    return windowed or len(layers), per_ratio, index_dim, latent_dim


def bytes_per_full_token(layers: list[LayerSpec], page: int, ratio: Fraction) -> tuple[Fraction, Fraction, dict]:
    """(bytes per full-pool token, bytes per SWA token, {ratio: (bytes per full token, layers)})."""
    windowed, per_ratio, index_dim, latent_dim = dsv4_layers(layers)
    c4_state = Fraction(DSV4_C4_RING, page) * (2 * 2 * latent_dim + 2 * 2 * index_dim) * DSV4_STATE_BYTES
    per_swa = dsv4_paged(page) * windowed + c4_state * per_ratio.get(4, 0)
    indexer = block_scaled_bytes(index_dim, "fp8")
    coeff: dict[int, Fraction] = {}
    for r in per_ratio:
        paged = dsv4_paged(max(page // r, 1))
        if r == 4:
            coeff[r] = paged / 4 + indexer / 4
        elif r in (1, 2):
            coeff[r] = (paged + DSV4_LOW_RATIO_INDEXER) / r
        else:
            coeff[r] = paged / r
    total = ratio * per_swa + sum(coeff[r] * n for r, n in per_ratio.items())
    return total, per_swa, {r: (coeff[r], per_ratio[r]) for r in per_ratio}


RING_ROWS = {4: 8, 128: 128}  # get_compress_state_ring_size: compressor ring rows per window page
RING_ROWS_SPECULATIVE = {4: 16, 128: 256}  # ... with a speculative algorithm
RING_ROW_PAD = 8  # _get_bytes_per_full_token: kv_bytes = nope + rope·2 + 8


def flat_bytes_per_full_token(report: EngineInput, layers: list[LayerSpec], ratio: Fraction, speculative: bool,
                              c128_per_token: bool) -> tuple[Fraction, Fraction, dict]:
    """``ring`` / ``request`` ``_get_bytes_per_full_token`` (0.5.12 ``pool_configurator.py:365–403``,
    0.5.16 the same without the c128 ring when ``c128_per_token`` is False): (bytes per full-pool token,
    bytes per SWA token, {ratio: (bytes per full token, layers)}). SGLang counts the layers from the
    config's ``compress_ratios`` itself, the MTP layers' entries included; the window is the page the
    rings are spread over."""
    window = next((p for layer in layers for p in layer.parts if isinstance(p, MLALatent)), None)
    if window is None or not window.window:
        raise UnsupportedModelError("SGLang's DeepSeek V4 pool needs the windowed latent (sliding_window)")
    listed = (report.config or {}).get("compress_ratios")
    entries = list(listed) if isinstance(listed, list) else [
        next((p.ratio for p in layer.parts if isinstance(p, CompressedKV)), 0) for layer in layers]
    counts = {r: entries.count(r) for r in (4, 128)}
    _, _, index_dim, _ = dsv4_layers(layers)
    row = window.kv_lora_rank + window.rope_dim * 2 + RING_ROW_PAD
    head = window.kv_lora_rank + window.rope_dim  # attn_head_dim: the compressor state's width
    rings = RING_ROWS_SPECULATIVE if speculative else RING_ROWS
    c4_state = Fraction(rings[4], window.window) * (2 * 2 * head + 2 * 2 * index_dim) * DSV4_STATE_BYTES
    c128_state = Fraction(rings[128], window.window) * 2 * head * DSV4_STATE_BYTES if c128_per_token else 0
    per_swa = row * len(entries) + c4_state * counts[4] + c128_state * counts[128]
    coeff = {4: Fraction(row + block_scaled_bytes(index_dim, "fp8"), 4), 128: Fraction(row, 128)}
    total = ratio * per_swa + sum(coeff[r] * n for r, n in counts.items())
    if speculative:  # the draft worker: × (T + 1)/T, one draft layer whatever the draft
        total = total * (len(entries) + 1) / len(entries)
    return total, per_swa, {r: (coeff[r], n) for r, n in counts.items() if n}


def fixed_state_bytes(per_ratio: dict, slots: int, latent_dim: int) -> int:
    """``_get_c128_state_fixed_bytes`` + ``_get_c2_state_fixed_bytes`` for ``slots`` request slots."""
    fixed = 0
    if 128 in per_ratio:
        rows = ceil_div(slots * 128 + 129, 128) * 128
        fixed += rows * 2 * latent_dim * DSV4_STATE_BYTES * per_ratio[128][1]
    if 2 in per_ratio:
        rows = ceil_div(slots * 2 + 3, 2) * 2
        fixed += rows * 2 * latent_dim * DSV4_STATE_BYTES * per_ratio[2][1]
    return fixed


def check_kv_dtype(report: EngineInput, warnings: list[str]) -> None:
    """A 16-bit KV dtype given explicitly fails SGLang's start-up; refused, or warned when unknown."""
    if report.precision.kv not in SIXTEEN_BIT:
        return
    reason = ("DeepSeekV4SingleKVPool.create_buffer asserts fp8 (uint8) storage, so SGLang fails at start-up "
              "with --kv-cache-dtype bf16")
    requested = requested_kv_dtype(report)
    if requested is None:
        warnings.append(f"DeepSeek V4: sized for the default auto (fp8_e4m3) KV; {reason}")
    elif requested != "auto":
        raise UnsupportedModelError(f"SGLang cannot serve DeepSeek V4 with a {requested} KV cache: {reason}")


def warn_cap_mode(report: EngineInput, warnings: list[str]) -> None:
    """Say that SGLang sizes this model's SWA pool in cap mode (the model type's ``swa_cap_mode``:
    ``_resolve_swa_cap_tokens``, a fixed SWA pool for the request cap plus radix headroom, out of the
    per-token coefficient), which these figures do not follow."""
    if registry.model_type(report).swa_cap_mode:
        warnings.append("DeepSeek-V4.1: SGLang reserves the SWA pool as fixed bytes for the request cap (cap "
                        "mode, _resolve_swa_cap_tokens), not per full token; hfkv's ratio sizing differs from it")


def applies(report: EngineInput) -> bool:
    """Whether the model has DeepSeek V4's compressed layers, which only this pool sizes."""
    return any(isinstance(part, CompressedKV) for layer in report.layer_specs for part in layer.parts)


def simulate(report: EngineInput, *, budget_bytes: int | None, max_model_len: int | None, knobs: EngineKnobs,
             warnings: list[str]) -> dict:
    """DSV4PoolConfigurator's figures (see the module docstring)."""
    release = rules(knobs.engine_version)
    if release.dsv4_pool == "none":
        raise UnsupportedModelError(f"SGLang {release.label} has no DeepSeek V4 pool (DSV4PoolConfigurator "
                                    "arrives in 0.5.12)")
    if release.dsv4_pool == "unmodelled":
        raise UnsupportedModelError(f"SGLang {release.label}'s DeepSeek V4 pool (its ring and unified modes) is not "
                                    "modelled by hfkv: ask 0.5.16 or 0.5.21 for the pools either side of it")
    notes: list[str] = []
    swa_ratio = swa_pool.ratio(report, knobs, notes, DEFAULT_SWA_RATIO)
    check_kv_dtype(report, warnings)
    warn_cap_mode(report, warnings)
    context_notes: list[str] = []
    context = context_length(report, max_model_len, context_notes, warnings)
    assumptions = [*warnings, "DeepSeek V4 pool: fp8 rows in the v4 layout (584 B, pages padded to 576 B)", *notes,
                   *context_notes]
    layers = list(report.layer_specs)
    draft = int(knobs.speculative_draft_layers or 0)
    page = page_size(knobs, DSV4_PAGE, "SGLang default for DeepSeek V4", assumptions)
    if release.dsv4_pool == "paged":
        per_token, per_swa, per_ratio = bytes_per_full_token(layers, page, swa_ratio)
        if draft:
            per_token = per_token * (len(layers) + draft) / len(layers)
            assumptions.append(f"speculative draft pool: {draft} MTP layer(s), bytes per token × (L + {draft})/L, "
                               f"L = {len(layers)}")
    else:
        per_token, per_swa, per_ratio = flat_bytes_per_full_token(report, layers, swa_ratio, bool(draft),
                                                                  release.dsv4_pool == "ring")
        assumptions.append(f"DeepSeek V4 pool of SGLang {release.label}: 584 B rows unpadded over every "
                           "compress_ratios entry, compressor rings per SWA token"
                           + (", the c128 ring fixed per request slot" if release.dsv4_pool == "request" else "")
                           + (" (speculative: rings 16/256, × (L + 1)/L)" if draft else ""))
    if not draft:
        assumptions.append("no speculative draft pool (--speculative-draft-layers: MTP multiplies by (L+1)/L)")
    swa_pool.index_map_note(assumptions)
    result: dict[str, Any] = {
        "configurator": "DSV4PoolConfigurator",
        "bytes_per_token": number(per_token),
        "bytes_per_swa_token": number(per_swa),
        "compressed_bytes_per_token": {str(r): number(c) for r, (c, _) in sorted(per_ratio.items())},
        "page_size": page,
        "swa_full_tokens_ratio": float(swa_ratio),
        "context_length": context,
    }
    if budget_bytes is not None:
        stateful = per_ratio if release.dsv4_pool != "ring" else {}  # ring: no fixed state bytes
        result.update(pools(budget_bytes, float(per_token), float(swa_ratio), page, stateful,
                            dsv4_layers(layers)[3], context, knobs, assumptions))
    result["warnings"] = warnings
    result["assumptions"] = assumptions
    return result


def pools(budget: int, per_token: float, ratio: float, page: int, per_ratio: dict, latent_dim: int,
          context: int | None, knobs: EngineKnobs, assumptions: list[str]) -> dict:
    """``calculate_pool_sizes``: compressor state for the request slots, then the pools."""
    given = knobs.max_running_requests
    if given is None:
        given = DEFAULT_RUNNING_REQUESTS
        knobs = knobs.replace(max_running_requests=given)
        assumptions.append(f"max_running_requests = {given} (SGLang's DeepSeek V4 default)")
    slots_for = max(1, int(given))
    fixed = fixed_state_bytes(per_ratio, slots_for + 1, latent_dim)
    # int(x / coefficient), not the default pool's x // cell: DSV4PoolConfigurator divides so
    full = floor_to_page(int(max(budget - fixed, 0) / per_token), page)
    swa = swa_pool.swa_tokens(full, ratio, page)
    require_a_page(full, "DeepSeek V4")
    running = running_requests(full, context, knobs, None)
    out = {
        "max_total_num_tokens": full, "kv_cache_tokens": full, "swa_tokens": swa,
        "c4_tokens": full // 4, "c128_tokens": full // 128, "fixed_state_bytes": fixed,
        "max_running_requests": running, "max_mamba_cache_size": None,
    }
    if context:
        out["max_concurrency"] = concurrency(full, context, running)
    return out
