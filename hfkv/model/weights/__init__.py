"""A checkpoint's parameters and bytes from its config.json and the mapped layers (never the weights): an
estimate, used when neither the Hub's safetensors metadata nor the files' headers give the exact figure.

``estimate_weights(config, layers)`` prices every tensor the checkpoint holds. ``layers`` are the
mapper's layer specs (a report's): each layer's parts give its attention or mixer shapes, the config
its query heads, feed-forwards (dense, routed and shared experts by the MoE layer pattern), embeddings
and MTP layers (``stack``), and the family's ``Style`` names the tensors and adds what no key states
(``styles``; a model type without one gets the generic decoder layout, and its figure says so). The
families whose layout no spec gives are priced from the config alone (``decoders``, ``more_decoders``,
``encoders``); vision and audio ``towers`` the config describes are added. Each tensor is priced at the
bytes its quantisation method stores (``quantization``: scales and zero points included) and the
total is split by role (embedding, attention, mixers, dense MLP, shared and routed experts, MTP,
towers, other) so that a parallel layout can split it. What is counted is what the checkpoint holds:
MTP layers that ship with the weights, Falcon's separate ``lm_head``, saved buffers; tied embeddings once.
A key a hand-written config (or a sub-config save_pretrained diffed) leaves out takes the value of
transformers' own config class for its model type (``builder.ClassValues``), which is what transformers and
the engines build: Qwen3MoeConfig's expert width, Gemma3Config's vision tower. Checked against
transformers' own count of the model built on the meta device, for every fixture and hub config it builds
(``tests/model/test_weights_transformers.py``).

It fails closed: a missing shape (a MoE without its expert count), a layer whose parts no layout
describes, a module the config describes and nothing prices, is ``Unknown(reason, missing_keys)``,
never a dense count of what is left.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

from hfkv.model.config import TEXT_KEYS, ConfigView
from hfkv.model.weights import stack
from hfkv.model.weights.builder import Builder, Cfg, ClassValues, Missing
from hfkv.model.weights.decoders import bloom, deepseek_v4, falcon, gemma4_text, gpt_oss, mpt, opt
from hfkv.model.weights.more_decoders import gpt2, gpt_neo, recurrent_gemma
from hfkv.model.weights.towers import (gemma4_audio, gemma4_vision, generic_tower, glm4v_tower, llama4_tower,
                                      minimax_m3_tower, moonvit_tower, qwen2_vl_tower, qwen25_vl_tower, qwen_vl_tower,
                                      siglip_tower)
from hfkv.model.weights.encoders import bart, t5, whisper
from hfkv.model.weights.loaded import DOWNCAST_NOTE, MTP_NOTE, PADDED_NOTE, as_loaded, downcast_checkpoint, loaded_base
from hfkv.model.weights.quantization import base_dtype, loaded_quantization
from hfkv.model.weights.records import ROLES, RoleWeights, Tensor, Unknown, WeightsEstimate
from hfkv.model.weights.styles import style_for

if TYPE_CHECKING:  # for annotations only: no import at run time
    from hfkv.model.report import Report
    from hfkv.model.specs import LayerSpec

__all__ = ["ROLES", "RoleWeights", "Tensor", "Unknown", "WeightsEstimate", "attach", "count_tensors",
           "estimate_weights", "weights_section"]


# Families whose checkpoint layout no layer spec gives, priced from the config alone: fused or
# positional blocks (GPT-2, GPT-Neo, BLOOM, OPT, Falcon, MPT), encoder-decoders (T5, BART, Whisper: the
# mappers' specs are a decoder's), RecurrentGemma's RG-LRU blocks (its mapper's state spec holds no projection
# shapes), DeepSeek-V4's compressors and hyper-connections, Gemma 4's per-layer
# embeddings, gpt-oss's biased fused experts and sinks. Every other family is priced from the layer
# specs and its style (``stack``, ``styles``).
_OWN_LAYOUT = {
    "deepseek_v4": deepseek_v4, "gpt_oss": gpt_oss, "bloom": bloom, "opt": opt, "falcon": falcon,
    "RefinedWeb": falcon, "RefinedWebModel": falcon, "mpt": mpt, "gemma4_text": gemma4_text, "t5": t5, "bart": bart,
    "gpt2": gpt2, "gpt_neo": gpt_neo, "whisper": whisper,
    "recurrent_gemma": recurrent_gemma,
}
_OWN_WRAPPERS = {"gemma4": "gemma4_text"}  # wrapper model_type -> its text model's
# wrappers whose tower the config must describe (a text-only count would leave it out)
_TOWER_WRAPPERS = ("gemma3", "gemma4", "kimi_k3", "qwen3_5", "qwen3_5_moe", "llama4", "qwen2_5_vl", "minimax_m3_vl")


def _own_layout(config: dict, klass: ClassValues) -> tuple[str, Cfg, dict] | None:
    """(text model type, its config view, its dict) for a family priced from the config alone, else None."""
    mt = str(config.get("model_type") or "")
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else None
    if mt in _OWN_WRAPPERS:
        text_mt = str((text or {}).get("model_type") or _OWN_WRAPPERS[mt])
        data = dict(text) if text is not None else {**config, "model_type": text_mt}
        # (the wrapper's class keeps its text model's values under text_config, a flat config's too)
        return text_mt, Cfg(data, where="text_config" if text is not None else "", klass=klass.at("text_config")), data
    if mt in _OWN_LAYOUT:
        return mt, Cfg(config, klass=klass.at()), config
    if text is not None and str(text.get("model_type") or "") in _OWN_LAYOUT:
        return str(text["model_type"]), Cfg(text, where="text_config", klass=klass.at("text_config")), text
    return None


def _sub_config(config: dict, key: str, klass: ClassValues) -> Any:
    """``config[key]``, or where the config leaves the key out, the sub-config transformers' class builds."""
    return config[key] if key in config else klass.missing(key)


def _towers(b: Builder, config: dict, text_hidden: int, klass: ClassValues) -> None:
    mt = str(config.get("model_type") or "")
    vision = _sub_config(config, "vision_config", klass)
    audio = _sub_config(config, "audio_config", klass)
    if mt in _TOWER_WRAPPERS and not (isinstance(vision, dict) and vision) and not klass.builds_none("vision_config"):
        raise Missing(f"{mt} has a vision tower but the config does not describe it", ["vision_config"])
    if isinstance(vision, dict) and vision:
        v = Cfg(vision, where="vision_config", klass=klass.at("vision_config"))
        vmt = str(vision.get("model_type") or "")
        if mt == "gemma3":
            h = siglip_tower(b, Cfg(vision, {"image_size": 896, "vision_use_head": False}, "vision_config",
                                     klass.at("vision_config")),
                              "model.vision_tower")
            b.param("model.multi_modal_projector.mm_input_projection_weight", (h, text_hidden), "towers")
            b.norm("model.multi_modal_projector.mm_soft_emb_norm", h, "towers")
        elif mt == "gemma4" or vmt == "gemma4_vision":
            gemma4_vision(b, v, text_hidden)
        elif mt == "qwen2_vl" or vmt == "qwen2_vl_vision":
            qwen2_vl_tower(b, v, text_hidden)
        elif mt in ("qwen2_5_vl", "exaone4_5"):
            qwen25_vl_tower(b, v, text_hidden)
        elif mt == "glm4v" or vmt == "glm4v_vision":
            glm4v_tower(b, v, text_hidden)
        elif mt == "llama4":
            llama4_tower(b, v, text_hidden)
        elif mt == "minimax_m3_vl":
            minimax_m3_tower(b, v, config, text_hidden)
        elif mt.startswith("qwen3_5") or mt.startswith("qwen3_vl"):
            qwen_vl_tower(b, v, text_hidden)
        elif mt == "kimi_k3" or "vt_hidden_size" in vision or vmt == "kimi_k25_vision":
            moonvit_tower(b, v, text_hidden)
        elif vmt in ("siglip_vision_model", "siglip2_vision_model"):
            siglip_tower(b, v, "model.vision_tower")
            b.linear("model.multi_modal_projector", text_hidden, v.req("hidden_size"), "towers", bias=True)
            b.notes.append("vision projector: one biased linear assumed")
        else:
            generic_tower(b, v, text_hidden, "model.vision_tower")
    if isinstance(audio, dict) and audio:
        a = Cfg(audio, where="audio_config", klass=klass.at("audio_config"))
        if mt == "gemma4" or audio.get("model_type") == "gemma4_audio":
            gemma4_audio(b, a, text_hidden)
        else:
            raise Missing(f"audio tower {audio.get('model_type')!r} is not one this estimator can price",
                           ["audio_config.model_type"])


def count_tensors(config: dict, layers: Sequence[LayerSpec] | None = None) -> list[Tensor] | Unknown:
    """The checkpoint's tensors as the estimator sees them (fail-closed: ``Unknown``)."""
    try:
        return _build(config, layers).builder.tensors
    except Missing as exc:
        return Unknown(exc.reason, exc.keys)


class _Built(NamedTuple):
    builder: Builder
    known: bool  # priced by a family's own layout or style, not the generic one
    text_type: str


def _build(config: dict, layers: Sequence[LayerSpec] | None, collapse: bool = False) -> _Built:
    """The tensor records for ``config``: a family's own layout, else the stack its layer specs give;
    ``collapse``: identical layers as one record each (``Builder.layers``), for a quantisation that
    names no layer by its index."""
    if not isinstance(config, dict):
        raise Missing("config is not a JSON object")
    b = Builder(collapse)
    where, data = ConfigView._select_text(config)
    # what transformers' config class gives the keys the config leaves out (sparse or diffed configs only)
    klass = ClassValues(config, data is not config or "transformers_version" not in config)
    own = _own_layout(config, klass)
    if own is not None:
        text_mt, c, data = own
        _OWN_LAYOUT[text_mt](b, c, text_mt, config if data is not config else None)
        known = True
        if isinstance(config.get("text_config"), dict):
            data = config["text_config"]  # (the wrapper's own text config, which the family read a copy of)
    else:
        mt = str(config.get("model_type") or "")
        text_mt = str(data.get("model_type") or mt)
        if not layers:
            raise Missing(f"model_type {text_mt or '(none)'!r} is priced from its layer specs, and none were given "
                          "(hfkv.inspect_config builds them)", ["model_type"])
        # mamba_ssm's own config format names no model type (its keys say it: ssm_cfg)
        style = style_for(text_mt, mt, "mamba_ssm" if not text_mt and "ssm_cfg" in data else None)
        c = Cfg(data, style.defaults, where or "", klass.at(where or ""), klass if data is not config else None)
        architectures = [a for a in config.get("architectures") or [] if isinstance(a, str)]
        b.notes += stack.price(b, c, style, text_mt, config if data is not config else None, layers, architectures)
        known = style.known
        if not known:
            unread = stack.unread_size_keys(c)
            if unread:
                b.notes.append(f"generic layout: keys it did not read, which may shape weights: {', '.join(unread)}")
    if data is not config or _sub_config(config, "vision_config", klass) or _sub_config(config, "audio_config", klass):
        _towers(b, config, c.req("hidden_size", "d_model"), klass)
    _refuse_undescribed(config, data, klass)
    # (a False from the class builds what the key's absence would: not worth a line)
    taken = {k: v for k, v in klass.taken.items() if v is not False and not isinstance(v, (dict, list))}
    if taken:
        shown = ", ".join(f"{k}={v}" for k, v in sorted(taken.items())[:8])
        more = len(taken) - min(len(taken), 8)
        b.notes.append(f"keys the config leaves out, as transformers' config class for {config.get('model_type')!r} "
                       f"gives them (what it and the engines build from this config): {shown}"
                       + (f" and {more} more" if more > 0 else ""))
    return _Built(b, known, text_mt)


# A sub-config with one of these keys describes a module of its own (a tower, a talker, an adapter).
_MODULE_KEYS = frozenset(("hidden_size", "d_model", "num_hidden_layers", "num_layers", "n_layer", "depth",
                          "encoder_layers", "embed_dim"))
_PRICED_SUBCONFIGS = ("vision_config", "audio_config")  # at the top level: ``_towers``


def _refuse_undescribed(config: dict, text: dict, klass: ClassValues) -> None:
    """Fail closed on a module the config describes and no pricer counts (Qwen2.5-Omni's talker, a
    thinker's own towers, Molmo 2's adapter), or that transformers' class builds where the config leaves
    its sub-config out: a figure without it would be too small."""
    def modules(node: dict, where: str):
        for key, value in node.items():
            if type(value) is dict and value is not text and not _MODULE_KEYS.isdisjoint(value):
                yield where + key, value
    built = {k: v for k, v in (klass.values() if klass.may_omit else {}).items()
             if k not in config and k not in TEXT_KEYS}  # (a flat config's text keys: the class's text_config)
    for name, sub in modules({**built, **config}, ""):
        if name in _PRICED_SUBCONFIGS:
            continue
        inner = [n for n, v in modules(sub, name + ".")]
        if any(v is text for v in sub.values()) and not inner:
            continue  # the text model's container (a thinker with nothing else in it)
        raise Missing(f"the config describes {inner[0] if inner else name} (a module of its own) that this "
                      "estimator does not price", [inner[0] if inner else name])


KNOWN_BAND = 1.0  # ± percent: a family's own layout (33 published counts within 0.01%; formats outside that table)
GENERIC_BAND = 3.0  # the generic layout: within 2.2% of the 23 published counts it was tried on
PADDED_BAND = 8.0  # MXFP4 as held: Marlin's padding measured −0.1% of a log; other backends pad less (up to 8%)
GENERIC_ERROR = ("estimated from the layer specs and the config's shapes by the generic decoder layout (model_type "
                 "{model_type!r} has no layout of its own here): on the 23 models of weights-truth.tsv it prices "
                 "as if their families were unknown it lands within 2.2% of the published counts (MTP layers, "
                 "router biases and q gates it cannot know); a module the config does not describe, or a key "
                 "meant in another sense, can put it further off; ")


def estimate_weights(config: dict, layers: Sequence[LayerSpec] | None = None) -> WeightsEstimate | Unknown:
    """Parameters and bytes as loaded of ``config`` (a parsed config.json), by role. ``layers``: the
    mapper's layer specs (a report's ``layer_specs``), which every family without a layout of its own
    is priced from; without them such a family is ``Unknown``."""
    if not isinstance(config, dict):
        return Unknown("config is not a JSON object")
    try:
        files_base, dtype_name, stated = base_dtype(config)
        base = loaded_base(files_base)
        quant = loaded_quantization(config)
        built = _build(config, layers, collapse=not quant.names_layers())
    except Missing as exc:
        return Unknown(exc.reason, exc.keys)
    if quant.unknown is not None:
        return Unknown(quant.unknown.reason, quant.unknown.keys)
    # MTP layers ship with the checkpoint, but the engines load them only as a speculative-decoding draft
    # (vLLM's load_weights skips get_spec_layer_idx_from_weight_name's layers; SGLang's too)
    tensors = [t._replace(loaded=False) if t.role == "mtp" and t.loaded else t for t in built.builder.tensors]
    params: dict[str, int] = {r: 0 for r in ROLES}
    for t in tensors:
        params[t.role] += t.numel
    sizes = _role_bytes(tensors, quant.bytes_of)
    breakdown = {r: RoleWeights(params[r], math.ceil(sizes[r])) for r in ROLES if params[r]}
    total_p = sum(params.values())
    total_b = math.ceil(sum(sizes.values()))
    skipped = [t for t in tensors if not t.loaded]
    if quant.padded or skipped:
        stored = math.ceil(sum(_role_bytes(tensors, quant.stored_bytes_of).values()))
        skipped_bytes = math.ceil(sum(_role_bytes(skipped, quant.stored_bytes_of).values()))
    else:
        stored, skipped_bytes = total_b, 0
    notes = list(built.builder.notes) + quant.notes
    mtp = [t for t in tensors if t.role == "mtp"]
    mtp_bytes = math.ceil(sum(_role_bytes(mtp, quant.stored_bytes_of).values())) if mtp else 0
    if mtp_bytes:
        notes.append(MTP_NOTE.format(bytes=mtp_bytes))
    if quant.padded and total_b - stored + skipped_bytes:
        notes.append(PADDED_NOTE.format(extra=total_b - stored + skipped_bytes, files=stored))
    if base != files_base:
        notes.append(DOWNCAST_NOTE.format(files=f"{files_base} B per unquantised element"))
    if not stated:
        notes.append("no torch_dtype/dtype in the config: unquantised tensors assumed 16-bit")
    if built.known:
        error = ("estimated from the config's shapes: every family here matches its published parameter count "
                 "within 0.01% (docs/deployments.md, weights); ")
        band = KNOWN_BAND
    else:
        error = GENERIC_ERROR.format(model_type=built.text_type)
        band = GENERIC_BAND
    if quant.padded:
        band = max(band, PADDED_BAND)  # the padding follows the engine's kernel backend, which the GPU picks
    if any("generic ViT" in n for n in notes):
        error += "a tower priced by the generic ViT formula may be off by ±15% of the tower; "
    if quant.label != "none":
        error += "quantised bytes follow the method's storage layout (scales included); "
    if not stated:
        error += "dtype not stated (a float32 checkpoint is loaded at 16 bits: the bytes stand); "
    return WeightsEstimate(
        total_parameters=total_p, weights_bytes=total_b, breakdown=breakdown, source="estimate",
        error_note=error.rstrip("; "), band_percent=band,
        architecture=str(config.get("model_type") or built.text_type),
        quantization=quant.label if quant.label != "none" else f"none ({_loaded_name(dtype_name, base, files_base)}, {base} B/param)",
        notes=tuple(notes), tensors=tuple(tensors), stored_bytes=stored if stored != total_b else None,
        skipped_bytes=skipped_bytes, mtp_bytes=mtp_bytes)


def _role_bytes(tensors: Sequence[Tensor], bytes_of) -> dict[str, Fraction | int]:
    """Bytes by role, summed exactly but without Fraction arithmetic per tensor (~7 µs each, 800,000
    tensors in a 100,000-layer config): integers apart, fractions as integer numerators per (role,
    denominator)."""
    whole: dict[str, int] = {r: 0 for r in ROLES}
    parts: dict[tuple[str, int], int] = {}
    for t in tensors:
        size = bytes_of(t)
        if type(size) is int:
            whole[t.role] += size
        else:
            key = (t.role, size.denominator)
            parts[key] = parts.get(key, 0) + size.numerator
    sizes: dict[str, Fraction | int] = dict(whole)  # ints until a role has a fractional part (Fractions cost ~2 µs)
    for (role, denominator), numerator in parts.items():
        sizes[role] += Fraction(numerator, denominator)
    return sizes


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
    mtp = {"mtp_bytes": estimate.mtp_bytes or None} if known else {}
    if checkpoint is not None and checkpoint.get("weights_bytes") is not None:
        return {**_EMPTY, **mtp, **checkpoint, "roles": roles,
                "quantization": estimate.quantization if known else None}
    if not known:
        return None
    return {**_EMPTY, **mtp, "source": "estimate", "total_parameters": estimate.total_parameters,
            "weights_bytes": estimate.weights_bytes, "parameters_exact": False, "roles": roles,
            "quantization": estimate.quantization, "error": estimate.error_note,
            "band_percent": estimate.band_percent, "note": "; ".join(estimate.notes) or None}


# Every key of the section, in order, null when it does not apply.
_EMPTY: dict[str, Any] = {"source": None, "total_parameters": None, "weights_bytes": None, "parameters": None,
                          "parameters_exact": None, "roles": None, "quantization": None, "error": None,
                          "band_percent": None, "mtp_bytes": None, "note": None}


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
        if isinstance(estimate, WeightsEstimate):
            checkpoint = as_loaded(checkpoint, estimate)
        else:
            checkpoint = {k: v for k, v in checkpoint.items() if k not in ("lm_head", "groups")}
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
