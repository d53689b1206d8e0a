"""A checkpoint's parameters and bytes from its config.json alone (never the weights): an estimate,
used when neither the Hub's safetensors metadata nor the files' headers give the exact figure.

``estimate_weights(config)`` prices every tensor the checkpoint holds, family by family (``decoders``,
``hybrids``, ``encoders``, vision and audio ``towers``), at the bytes its quantisation method stores
(``quantization``: scales and zero points included), and returns them by role (embedding, attention,
mixers, dense MLP, shared and routed experts, MTP, towers, other) so that a parallel layout can split
them. What is counted is what the checkpoint holds: MTP layers that ship with the weights, Falcon's
separate ``lm_head``, saved buffers; tied embeddings once.

It fails closed: an unknown ``model_type``, or a known one missing a key its architecture needs (a MoE
without its expert count), is ``Unknown(reason, missing_keys)``, never a dense count of what is left.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from hfkv.model.weights.builder import Builder, Cfg, Missing
from hfkv.model.weights.decoders import bloom, CLASS_DEFAULTS, deepseek, deepseek_v4, falcon, gemma4_text, glm4_moe, gpt_oss, llama_like, LLAMA_LIKE, mpt, opt
from hfkv.model.weights.more_decoders import gpt2, llama4_text, minimax_m2
from hfkv.model.weights.hybrids import kimi_linear, mamba1, minimax, nemotron_h, qwen3_next
from hfkv.model.weights.towers import gemma4_audio, gemma4_vision, generic_tower, moonvit_tower, qwen25_vl_tower, qwen_vl_tower, siglip_tower
from hfkv.model.weights.encoders import bart, t5
from hfkv.model.weights.loaded import DOWNCAST_NOTE, downcast_checkpoint, loaded_base
from hfkv.model.weights.quantization import base_dtype, Quantization, quantization_config
from hfkv.model.weights.records import ROLES, RoleWeights, Tensor, Unknown, WeightsEstimate

if TYPE_CHECKING:  # for annotations only: no import at run time
    from hfkv.model.report import Report

__all__ = ["ROLES", "RoleWeights", "Tensor", "Unknown", "WeightsEstimate", "attach", "count_tensors",
           "estimate_weights", "weights_section"]


_TEXT_FAMILIES = {
    **{mt: llama_like for mt in LLAMA_LIKE},
    "deepseek_v2": deepseek, "deepseek_v3": deepseek, "deepseek_v32": deepseek, "kimi_k2": deepseek,
    "glm4_moe": glm4_moe, "deepseek_v4": deepseek_v4,
    "gpt_oss": gpt_oss, "bloom": bloom, "opt": opt, "falcon": falcon, "RefinedWeb": falcon,
    "RefinedWebModel": falcon, "mpt": mpt, "mamba": mamba1, "falcon_mamba": mamba1, "nemotron_h": nemotron_h,
    "qwen3_next": qwen3_next, "qwen3_5_text": qwen3_next, "qwen3_5_moe_text": qwen3_next,
    "qwen3_5": qwen3_next, "qwen3_5_moe": qwen3_next,
    "minimax": minimax, "minimax_m1": minimax, "kimi_linear": kimi_linear, "gemma4_text": gemma4_text,
    "t5": t5, "bart": bart,
    "glm_moe_dsa": deepseek, "gpt2": gpt2, "minimax_m2": minimax_m2, "llama4_text": llama4_text,
}
# wrappers: top-level model_type -> (text model_type, tower pricer name)
_WRAPPERS = {
    "gemma3": "gemma3_text", "gemma4": "gemma4_text", "kimi_k3": "kimi_linear",
    "qwen3_5": "qwen3_5_text", "qwen3_5_moe": "qwen3_5_moe_text", "llama4": "llama4_text",
    "qwen2_5_vl": "qwen2_5_vl_text",
}


def _select(config: dict) -> tuple[str, Cfg, dict]:
    mt = str(config.get("model_type") or "")
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else None
    if mt in _WRAPPERS:
        text_mt = str((text or {}).get("model_type") or _WRAPPERS[mt])
        # Older wrappers (Qwen2.5-VL's first configs) keep the text keys at the top level.
        data = dict(text) if text is not None else {**config, "model_type": text_mt}
        return text_mt, Cfg(data, CLASS_DEFAULTS.get(text_mt), "text_config" if text is not None else ""), data
    if mt in _TEXT_FAMILIES:
        return mt, Cfg(config, CLASS_DEFAULTS.get(mt)), config
    if text is not None and str(text.get("model_type") or "") in _TEXT_FAMILIES:
        text_mt = str(text["model_type"])
        return text_mt, Cfg(text, CLASS_DEFAULTS.get(text_mt), "text_config"), text
    raise Missing(f"model_type {mt or '(none)'!r} is not one this estimator knows how to price", ["model_type"])


def _towers(b: Builder, config: dict, text_hidden: int) -> None:
    mt = str(config.get("model_type") or "")
    vision = config.get("vision_config")
    audio = config.get("audio_config")
    if mt in ("gemma3", "gemma4", "kimi_k3", "qwen3_5", "qwen3_5_moe", "llama4", "qwen2_5_vl") and not (isinstance(vision, dict) and vision):
        raise Missing(f"{mt} has a vision tower but the config does not describe it", ["vision_config"])
    if isinstance(vision, dict) and vision:
        v = Cfg(vision, where="vision_config")
        vmt = str(vision.get("model_type") or "")
        if mt == "gemma3":
            h = siglip_tower(b, Cfg(vision, {"image_size": 896, "vision_use_head": False}, "vision_config"),
                              "model.vision_tower")
            b.param("model.multi_modal_projector.mm_input_projection_weight", (h, text_hidden), "towers")
            b.norm("model.multi_modal_projector.mm_soft_emb_norm", h, "towers")
        elif mt == "gemma4" or vmt == "gemma4_vision":
            gemma4_vision(b, v, text_hidden)
        elif mt == "qwen2_5_vl":
            qwen25_vl_tower(b, v, text_hidden)
        elif mt.startswith("qwen3_5") or mt.startswith("qwen3_vl"):
            qwen_vl_tower(b, v, text_hidden)
        elif mt == "kimi_k3" or "vt_hidden_size" in vision:
            moonvit_tower(b, v, text_hidden)
        elif vmt in ("siglip_vision_model", "siglip2_vision_model"):
            siglip_tower(b, v, "model.vision_tower")
            b.linear("model.multi_modal_projector", text_hidden, v.req("hidden_size"), "towers", bias=True)
            b.notes.append("vision projector: one biased linear assumed")
        else:
            generic_tower(b, v, text_hidden, "model.vision_tower")
    if isinstance(audio, dict) and audio:
        a = Cfg(audio, where="audio_config")
        if mt == "gemma4" or audio.get("model_type") == "gemma4_audio":
            gemma4_audio(b, a, text_hidden)
        else:
            raise Missing(f"audio tower {audio.get('model_type')!r} is not one this estimator can price",
                           ["audio_config.model_type"])


def count_tensors(config: dict) -> list[Tensor] | Unknown:
    """The checkpoint's tensors as the estimator sees them (fail-closed: ``Unknown``)."""
    try:
        return _build(config).tensors
    except Missing as exc:
        return Unknown(exc.reason, exc.keys)


def _build(config: dict, collapse: bool = False) -> Builder:
    """The family's tensor records for ``config``; ``collapse``: identical layers as one record
    each (``Builder.layers``), for a quantisation that names no layer by its index."""
    if not isinstance(config, dict):
        raise Missing("config is not a JSON object")
    text_mt, c, data = _select(config)
    if text_mt in ("qwen3_5", "qwen3_5_moe") and isinstance(config.get("text_config"), dict):
        text_mt = text_mt + "_text"
    b = Builder(collapse)
    _TEXT_FAMILIES[text_mt](b, c, text_mt, config if data is not config else None)
    if data is not config or config.get("vision_config") or config.get("audio_config"):
        _towers(b, config, c.req("hidden_size", "d_model"))
    return b


def _names_layers(quant: Quantization) -> bool:
    """Whether a module pattern of the quantisation (ignore lists, group targets) holds a digit,
    e.g. ``model.layers.61`` (an MTP layer left unquantised): such a pattern can single out one
    layer, so every layer keeps its own name instead of one record per kind of layer."""
    patterns = [*quant.ignore, *(t for targets, _ in quant.rules for t in targets)]
    return any(ch.isdigit() for pattern in patterns for ch in str(pattern))


def estimate_weights(config: dict) -> WeightsEstimate | Unknown:
    """Parameters and checkpoint bytes of ``config`` (a parsed config.json), by role."""
    if not isinstance(config, dict):
        return Unknown("config is not a JSON object")
    try:
        text_mt, _, _ = _select(config)
        files_base, dtype_name, stated = base_dtype(config)
        base = loaded_base(files_base)
        quant = Quantization(quantization_config(config), base, text_mt)
        built = _build(config, collapse=not _names_layers(quant))
    except Missing as exc:
        return Unknown(exc.reason, exc.keys)
    if quant.unknown is not None:
        return Unknown(quant.unknown.reason, quant.unknown.keys)
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    if str(text.get("expert_dtype") or config.get("expert_dtype") or "").lower() in ("fp4", "mxfp4"):
        quant.fp4_experts()
    params: dict[str, int] = {r: 0 for r in ROLES}
    # Bytes summed exactly but without Fraction arithmetic per tensor (~7 µs each, 800,000 tensors in a
    # 100,000-layer config): integers apart, fractions as integer numerators per (role, denominator).
    whole: dict[str, int] = {r: 0 for r in ROLES}
    parts: dict[tuple[str, int], int] = {}
    for t in built.tensors:
        params[t.role] += t.numel
        size = quant.bytes_of(t)
        if type(size) is int:
            whole[t.role] += size
        else:
            key = (t.role, size.denominator)
            parts[key] = parts.get(key, 0) + size.numerator
    sizes = {r: Fraction(whole[r]) for r in ROLES}
    for (role, denominator), numerator in parts.items():
        sizes[role] += Fraction(numerator, denominator)
    breakdown = {r: RoleWeights(params[r], math.ceil(sizes[r])) for r in ROLES if params[r]}
    total_p = sum(params.values())
    total_b = math.ceil(sum(sizes.values()))
    notes = list(built.notes) + quant.notes
    if base != files_base:
        notes.append(DOWNCAST_NOTE.format(files=f"{files_base} B per unquantised element"))
    if not stated:
        notes.append("no torch_dtype/dtype in the config: unquantised tensors assumed 16-bit")
    error = ("estimated from the config's shapes: every family here matches its published parameter count "
             "within 0.01% (docs/deployments.md, weights); ")
    if any("generic ViT" in n for n in notes):
        error += "a tower priced by the generic ViT formula may be off by ±15% of the tower; "
    if quant.label != "none":
        error += "quantised bytes follow the method's storage layout (scales included); "
    if not stated:
        error += "dtype not stated (a float32 checkpoint is loaded at 16 bits: the bytes stand); "
    return WeightsEstimate(
        total_parameters=total_p, weights_bytes=total_b, breakdown=breakdown, source="estimate",
        error_note=error.rstrip("; "), architecture=str(config.get("model_type") or text_mt),
        quantization=quant.label if quant.label != "none" else f"none ({_loaded_name(dtype_name, base, files_base)}, {base} B/param)",
        notes=tuple(notes), tensors=tuple(built.tensors))


def _loaded_name(name: str, base: int, files_base: int) -> str:
    """The dtype's name, saying so when the engines load it narrower than the files hold it."""
    return name if base == files_base else f"{name} loaded as 16-bit"


def weights_section(estimate: WeightsEstimate | Unknown, checkpoint: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """A report's ``weights`` JSON section: the checkpoint's own figures when known (``checkpoint``, from
    ``hfkv.sources``: the Hub's metadata or the safetensors headers), else the estimate; either way the
    estimate's split by role (``roles``), which a parallel layout needs and no metadata gives. None when
    neither is known (the caller says why, from ``estimate.reason``)."""
    known = isinstance(estimate, WeightsEstimate)
    roles = {role: {"parameters": w.parameters, "bytes": w.bytes} for role, w in estimate.breakdown.items()} if known else None
    if checkpoint is not None and checkpoint.get("weights_bytes") is not None:
        return {**_EMPTY, **checkpoint, "roles": roles, "quantization": estimate.quantization if known else None}
    if not known:
        return None
    return {**_EMPTY, "source": "estimate", "total_parameters": estimate.total_parameters,
            "weights_bytes": estimate.weights_bytes, "parameters_exact": False, "roles": roles,
            "quantization": estimate.quantization, "error": estimate.error_note,
            "note": "; ".join(estimate.notes) or None}


# Every key of the section, in order, null when it does not apply.
_EMPTY: dict[str, Any] = {"source": None, "total_parameters": None, "weights_bytes": None, "parameters": None,
                          "parameters_exact": None, "roles": None, "quantization": None, "error": None, "note": None}


UNKNOWN_NOTE = "weights unknown: {reason}; give --weights-bytes, or a model folder with its safetensors files"
UNTRUSTED_WARNING = "safetensors headers not used: {reason}; the weights are the estimate from the config"


def attach(report: Report, checkpoint: dict[str, Any] | None = None) -> Any:
    """Give ``report`` its ``weights`` section (and ``weights_bytes``): the checkpoint's figures when
    ``checkpoint`` has them, else the estimate kept on the report (``report.weights_estimate``); when
    neither is known, both are None and a note says why. A checkpoint whose headers failed a check
    (``untrusted``, from ``hfkv.sources.checkpoint``) gives no figure but a warning. Returns ``report``."""
    estimate = report.weights_estimate
    if checkpoint is not None and checkpoint.get("weights_bytes") is not None:
        files_base, _, stated = base_dtype(report.root_config or {})
        checkpoint = downcast_checkpoint(checkpoint, files_base, stated)
    if checkpoint is not None and checkpoint.get("untrusted"):
        report.warnings.append(UNTRUSTED_WARNING.format(reason=checkpoint["untrusted"]))
    section = weights_section(estimate, checkpoint)
    report.extra["weights"] = section
    report.extra["weights_bytes"] = section["weights_bytes"] if section else None
    stale = [n for n in report.notes if n.startswith("weights unknown: ")]
    for note in stale:
        report.notes.remove(note)
    if section is None:
        reason = estimate.reason if isinstance(estimate, Unknown) else "no figure"
        report.notes.append(UNKNOWN_NOTE.format(reason=reason))
    return report
