"""The weights estimate against transformers' own parameter count (issue 30 item 1).

For every fixture and every ../shared/hub-configs config that transformers knows, the model built from the
config on the ``meta`` device (no memory, no weights, never ``trust_remote_code``) is counted:
parameters once each (a tied head is the embeddings' tensor) and the persistent buffers ``state_dict``
saves. ``python tests/model/test_weights_transformers.py`` rebuilds every model and writes the counts
to ``transformers-counts.tsv`` beside this file, with transformers' and torch's versions in its header; a
config transformers does not know, needs remote code for, or cannot build is a row saying why. torch is
needed only for that (and for ``test_the_table_is_what_transformers_says``): the comparison reads the
table.

hfkv's ``total_parameters`` must equal transformers' count exactly, after the named differences below and
nothing else: each is a tensor the checkpoint holds and transformers' module does not (or the other way
round), with its reason, and where a published count exists (../shared/weights-truth.tsv) it decides
which side the checkpoint is on. A row that stays different for a reason not yet fixed is a strict xfail
with that reason, never a tolerance.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

import hfkv.model.weights as W
from hfkv.errors import HfkvError
from hfkv.inspection import inspect_config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIXTURES = ROOT / "fixtures"
HUB = ROOT.parent / "shared" / "hub-configs"
TABLE = HERE / "transformers-counts.tsv"
COLUMNS = ("source", "model_type", "auto_class", "transformers_params", "persistent_buffers", "notes")
BUILD_SECONDS = 60  # a model that takes longer to build on the meta device is a row saying so


# -- the configs ------------------------------------------------------------------------------------

def sources() -> list[tuple[str, Path]]:
    """(the table's source name, the config's path): every fixture, then every hub config when present."""
    found = [(f"fixtures/{p.parent.name}", p) for p in sorted(FIXTURES.glob("*/config.json"))]
    if HUB.is_dir():
        found += [(f"hub-configs/{p.name}", p) for p in sorted(HUB.glob("*.json"))]
    return found


def config_of(source: str) -> dict | None:
    """The config a row was built from; None when it lives in ../shared and that is absent."""
    kind, _, name = source.partition("/")
    path = FIXTURES / name / "config.json" if kind == "fixtures" else HUB / name
    return json.loads(path.read_text()) if path.is_file() else None


# -- the generator (torch and transformers) ---------------------------------------------------------

# Where the config's architectures name no class transformers has: the Auto classes tried in order, each
# holding the whole checkpoint of its kind (towers and head with the text model, both stacks of a seq2seq).
AUTO_ORDER = ("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES", "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES",
              "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES", "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
              "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "MODEL_FOR_MASKED_LM_MAPPING_NAMES", "MODEL_MAPPING_NAMES")


class Skipped(Exception):
    """A config transformers does not build; the message is the row's note."""


def model_class(config: dict, built_config):
    """(the class, how it was chosen): the config's own architecture when transformers ships a class of
    that name for this config class (what save_pretrained wrote, so the whole checkpoint), else the first
    Auto mapping of ``AUTO_ORDER`` that has the model type."""
    import transformers
    from transformers.models.auto import modeling_auto

    for name in config.get("architectures") or []:
        cls = getattr(transformers, str(name), None) if isinstance(name, str) else None
        if cls is not None and getattr(cls, "config_class", None) is type(built_config):
            return cls, "architectures"
    mt = config["model_type"]
    for mapping in AUTO_ORDER:
        name = getattr(modeling_auto, mapping).get(mt)
        if name:
            name = name if isinstance(name, str) else name[0]
            return getattr(transformers, name), mapping.removesuffix("_MAPPING_NAMES").lower()
    raise Skipped(f"no Auto class of transformers builds model_type {mt!r}")


def count(config: dict) -> dict[str, str]:
    """One row: the model built from ``config`` on the meta device, counted (``Skipped`` when it cannot be)."""
    import torch
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    mt = config.get("model_type")
    if not isinstance(mt, str) or not mt:
        raise Skipped("no model_type: AutoConfig cannot pick a class")
    if mt not in CONFIG_MAPPING_NAMES:
        remote = " (its auto_map names remote code, never run here)" if config.get("auto_map") else ""
        raise Skipped(f"transformers has no config class for model_type {mt!r}{remote}")
    kwargs = {k: v for k, v in config.items() if k not in ("model_type", "auto_map", "trust_remote_code")}
    try:
        built_config = transformers.AutoConfig.for_model(mt, **kwargs)
        cls, how = model_class(config, built_config)
        with torch.device("meta"):
            model = cls._from_config(built_config)
    except Skipped:
        raise
    except Exception as exc:  # noqa: BLE001 - the row says what transformers said
        first = (str(exc).strip().splitlines() or [""])[0]
        raise Skipped(f"transformers cannot build it: {type(exc).__name__}: {first}"[:240]) from None
    params = sum(p.numel() for p in model.parameters())  # each Parameter once: a tied head is not counted again
    saved = model.state_dict()
    buffers: Counter[str] = Counter()
    for name, buffer in model.named_buffers():
        if name in saved:  # persistent: saved with the weights
            buffers[name.rsplit(".", 1)[-1]] += buffer.numel()
    notes = [] if how == "architectures" else [f"architectures name no class of transformers: {how}"]
    if config.get("auto_map"):
        notes.append("auto_map ignored: transformers' own class")
    return {"model_type": mt, "auto_class": cls.__name__, "transformers_params": str(params),
            "persistent_buffers": ",".join(f"{k}:{v}" for k, v in sorted(buffers.items())), "notes": "; ".join(notes)}


def _child(config: dict, pipe) -> None:
    try:
        pipe.send(count(config))
    except Skipped as exc:
        pipe.send({"notes": str(exc)})
    except BaseException as exc:  # noqa: BLE001
        pipe.send({"notes": f"the count failed: {type(exc).__name__}"})


def count_bounded(config: dict, seconds: float = BUILD_SECONDS) -> dict[str, str]:
    """``count`` in a forked child that is killed after ``seconds`` (a row saying so)."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(config, send), daemon=True)
    child.start()
    try:
        if receive.poll(seconds):
            return receive.recv()
        return {"notes": f"skipped: the build took over {seconds} s on the meta device"}
    finally:
        if child.is_alive():
            child.kill()  # this child only, by its handle
        child.join()


def write_table(path: Path = TABLE) -> None:
    import torch
    import transformers

    rows = []
    for source, config_path in sources():
        config = json.loads(config_path.read_text())
        row = {c: "" for c in COLUMNS}
        row.update(source=source, model_type=str(config.get("model_type") or ""))
        row.update(count_bounded(config))
        rows.append(row)
        print(f"{source}\t{row['transformers_params'] or row['notes']}", file=sys.stderr)
    with path.open("w", encoding="utf-8", newline="") as handle:
        handle.write(f"# transformers {transformers.__version__}, torch {torch.__version__}: "
                     "python tests/model/test_weights_transformers.py wrote this table\n")
        handle.write("# each config built on the meta device; transformers_params: parameters once each (a tied "
                     "head is the embeddings' tensor); persistent_buffers: leaf name:elements of the buffers "
                     "state_dict saves\n")
        writer = csv.DictWriter(handle, COLUMNS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


# -- the recorded table -----------------------------------------------------------------------------

def read_table() -> tuple[list[str], list[dict[str, str]]]:
    """(the header's comment lines, the rows); nothing before the generator first wrote the table."""
    lines = TABLE.read_text(encoding="utf-8").splitlines() if TABLE.is_file() else []
    header = [line for line in lines if line.startswith("#")]
    return header, list(csv.DictReader([line for line in lines if not line.startswith("#")], delimiter="\t"))


HEADER, ROWS = read_table()
BUILT = [row for row in ROWS if row["transformers_params"]]


def buffers_of(row: dict[str, str]) -> dict[str, int]:
    return {name: int(n) for name, _, n in (part.partition(":") for part in row["persistent_buffers"].split(",") if part)}


def estimate(config: dict):
    """The estimate as a report makes it: with the mapper's layer specs (none for a config the mappers refuse)."""
    try:
        layers = inspect_config(config).layer_specs
    except HfkvError:
        layers = None
    return W.estimate_weights(config, layers)


def test_the_table_says_its_versions_and_covers_every_config():
    assert re.match(r"# transformers \d+\.\d+\.\d+\S*, torch \d+\.\d+", HEADER[0])
    recorded = [row["source"] for row in ROWS]
    assert len(recorded) == len(set(recorded))
    fixtures = {s for s, _ in sources() if s.startswith("fixtures/")}
    assert fixtures == {s for s in recorded if s.startswith("fixtures/")}, \
        "a fixture was added or removed: python tests/model/test_weights_transformers.py"
    if HUB.is_dir():
        assert {s for s, _ in sources()} == set(recorded)
    for row in ROWS:
        assert row["transformers_params"] or row["notes"], row["source"]  # a row not built says why


# -- hfkv against the table --------------------------------------------------------------------------

# Persistent buffers transformers saves that the checkpoints do not hold, with why (the others, routers'
# e_score_correction_bias, DeepSeek-V4's tid2eid hash table, BART's final_logits_bias, Gemma 4's layer_scalar,
# are tensors of the files, which hfkv counts as parameters).
UNSAVED_BUFFERS = {
    # MiniMax-Text-01's lightning attention (transformers' MiniMaxLightningAttention): the ALiBi-like slope of
    # each head and the decay tables derived from it and block_size, rebuilt in __init__
    "slope_rate": "derived from the head count", "query_decay": "derived from slope_rate and block_size",
    "key_decay": "derived from slope_rate and block_size", "diagonal_decay": "derived from slope_rate and block_size",
    # Gemma 4's ClippableLinear bounds: google/gemma-4-E2B-it's published count, 5,123,178,051, is transformers'
    # parameters (5,104,297,504) + layer_scalar (35) + the KV-shared layers' k/v (18,880,512, below): none of them
    "input_min": "not in the published Gemma 4 count", "input_max": "not in the published Gemma 4 count",
    "output_min": "not in the published Gemma 4 count", "output_max": "not in the published Gemma 4 count",
}


def _mtp(est) -> int:
    return est.role("mtp").parameters


def _head(est) -> int:
    return sum(t.numel for t in est.tensors if t.kind == "lm_head" and t.role == "embedding")


# What a checkpoint holds and transformers' module does not: (amount in hfkv's estimate, why). A function of
# the estimate where hfkv prices the tensors as a role of their own, else hand arithmetic from the config.
MTP = (_mtp, "MTP layers ship in the checkpoint (model.layers.{num_hidden_layers} or mtp.*) and transformers' "
             "module builds the target layers only; the published counts include them (weights-truth.tsv: "
             "DeepSeek-V3, V3.2, V4-Flash, GLM-4.5, Qwen3-Next, each equal to hfkv's with its MTP layers)")
FALCON_HEAD = (_head, "Falcon's checkpoint stores lm_head.weight beside the word embeddings, which transformers "
                      "ties (one tensor); the published falcon-180B count (179,522,565,120) has both")
T5_HEAD = (_head, "transformers 5 ties every T5 head (configuration_t5.py: 'we tie weights always and force it to "
                  "be True'); a config saying tie_word_embeddings false is a T5 v1.1 checkpoint, whose lm_head.weight "
                  "is a tensor of its own in the files (the flag that the same comment says v1.1 configs carry)")
# google/gemma-4-E2B-it: the last num_kv_shared_layers (20) layers read the KV of earlier ones, and transformers'
# Gemma4 module builds no k/v for them; the checkpoint holds them: 16 sliding layers (head_dim 256) and 4 full
# ones (global_head_dim 512), one KV head each, k_proj and v_proj 1536 × head_dim and k_norm head_dim wide
E2B_SHARED_KV = (16 * (2 * 1536 * 256 + 256) + 4 * (2 * 1536 * 512 + 512),
                 "Gemma 4 E2B's KV-shared layers keep their k_proj/v_proj/k_norm in the checkpoint, which "
                 "transformers' module does not build; the published E2B-it count (5,123,178,051) has them")
assert E2B_SHARED_KV[0] == 18_880_512
DIFFERENCES: dict[str, tuple[tuple, ...]] = {
    **{s: (MTP,) for s in (
        "fixtures/deepseek-ai__DeepSeek-V3", "fixtures/deepseek-ai__DeepSeek-V3.2", "fixtures/deepseek-ai__DeepSeek-V4-Flash",
        "fixtures/zai-org__GLM-4.5", "fixtures/Qwen__Qwen3-Next-80B-A3B-Thinking", "fixtures/Qwen__Qwen3.5-35B-A3B",
        "fixtures/Qwen__Qwen3.6-27B-from-engine-log",
        # (its text config leaves the count out: DeepseekV3Config's num_mtp_layers, 1, "MTP modules available to
        # append after the base transformer model", which its module does not build)
        "fixtures/moonshotai__Kimi-K2.5-transformers-defaults",
        "hub-configs/deepseek-ai__DeepSeek-V3.json", "hub-configs/deepseek-ai__DeepSeek-V3.2.json",
        "hub-configs/deepseek-ai__DeepSeek-V4-Flash.json", "hub-configs/zai-org__GLM-4.5.json",
        "hub-configs/Qwen__Qwen3-Next-80B-A3B-Thinking.json", "hub-configs/Qwen__Qwen3.5-35B-A3B.json")},
    "fixtures/tiiuae__falcon-180B-chat": (FALCON_HEAD,), "hub-configs/tiiuae__falcon-180B-chat.json": (FALCON_HEAD,),
    "fixtures/VietAI__envit5-translation": (T5_HEAD,), "hub-configs/VietAI__envit5-translation.json": (T5_HEAD,),
    "fixtures/google__gemma-4-E2B-it": (E2B_SHARED_KV,), "hub-configs/google__gemma-4-E2B-it.json": (E2B_SHARED_KV,),
}

# Rows that stay different, each with why (strict: fixing one fails the test until its line goes).
_NEW_LAYOUT = ("hfkv: unknown, a layer of {parts}: {family}'s layout (transformers' {module}) is not one this estimator "
               "has; a layout of its own would price it")
_MODULE = "hfkv: unknown, {what} that this estimator does not price (transformers builds it)"
XFAIL: dict[str, str] = {
    "fixtures/Zyphra__Zamba-7B-v1-transformers-defaults": _NEW_LAYOUT.format(
        parts="attention + Mamba parts", family="Zamba", module="ZambaHybridLayer: one shared attention block"),
    "fixtures/Zyphra__Zamba2-2.7B-transformers-defaults": _NEW_LAYOUT.format(
        parts="attention + Mamba-2 parts", family="Zamba2", module="Zamba2HybridLayer: shared blocks with LoRA"),
    "fixtures/tiiuae__Falcon-H1-1.5B-Deep-Instruct-transformers-defaults": _NEW_LAYOUT.format(
        parts="attention + Mamba-2 parts", family="Falcon-H1", module="FalconH1DecoderLayer: parallel mixers"),
    "fixtures/Zyphra__ZAYA1-8B-transformers-defaults": _NEW_LAYOUT.format(
        parts="attention + two convolution parts", family="ZAYA1", module="ZayaDecoderLayer"),
    "fixtures/thinkingmachines__Inkling-transformers-defaults": _NEW_LAYOUT.format(
        parts="attention + short-convolution parts", family="Inkling", module="InklingTextDecoderLayer"),
    "fixtures/zai-org__GLM-5.3-Flash-transformers-defaults": _NEW_LAYOUT.format(
        parts="MLA + indexer parts", family="glm5_next_text", module="Glm5NextTextDecoderLayer"),
    "fixtures/google-bert__bert-base-uncased-transformers-defaults":
        "hfkv: unknown, BERT is an encoder the mappers give no layer specs for, and the estimator has no BERT "
        "layout (embeddings with token types and positions, biased layers, the MLM head BertForMaskedLM holds)",
    "fixtures/meituan-longcat__LongCat-Flash-Chat-transformers-defaults":
        "hfkv: unknown, LongCat-Flash's experts are expert_ffn_hidden_size wide and its layers hold two attention "
        "blocks and zero-computation experts (transformers' LongcatFlashDecoderLayer); no layout here reads them",
    "fixtures/nvidia__MiniMax-M3-NVFP4":
        "hfkv: unknown, the fixture's modelopt MIXED_PRECISION quantization_config lists no quantized_layers, which "
        "the quantisation reader (quantization.py) refuses; transformers builds the unquantised model",
    "fixtures/Qwen__Qwen2.5-Omni-transformers-defaults": _MODULE.format(what="Qwen2.5-Omni's talker and token2wav"),
    "fixtures/Qwen__Qwen3-ASR-transformers-defaults": _MODULE.format(what="Qwen3-ASR's audio encoder"),
    "fixtures/dots-studio__dots3-note-prev-transformers-defaults": _MODULE.format(what="dots3's audio encoder"),
    "fixtures/allenai__Molmo2-transformers-defaults": _MODULE.format(what="Molmo 2's vision adapter"),
    "fixtures/microsoft__VibeVoice-ASR-HF-transformers-defaults": _MODULE.format(
        what="VibeVoice's acoustic and semantic tokenizer encoders"),
    "fixtures/XiaomiMiMo__MiMo-V2-Flash-transformers-defaults":
        "204,486,848 short: transformers' MiMoV2FlashAttention doubles the KV heads of sliding layers "
        "(modeling_mimo_v2_flash.py: num_key_value_heads * 2 if is_swa) where the config writes no "
        "swa_num_key_value_heads, and the mapper gives them num_key_value_heads (4; the KV cache too: a mapper "
        "question); k/v 204,472,320 of it, the rest the sliding layers' sinks (2,496) and the routers' "
        "e_score_correction_bias (12,032), which no MiMo style here adds",
    "fixtures/meta-llama__Llama-3.2-11B-Vision-transformers-defaults":
        "232,106,531 short: Mllama's vision model (a local and a global encoder, gated layers, tiled positions) is "
        "priced by the generic ViT formula, and the text model's cross-attention layers as self-attention ones",
    "fixtures/stepfun-ai__Step-3.7-Flash-transformers-defaults":
        "907,939,904 short: Step-3.7's shared experts (660,602,880) and head-wise attention gate (g_proj) are not "
        "priced, and its vision model (lambda-scaled layers, two downsamplers) is priced by the generic ViT formula",
}


def checkpoint_count(row: dict[str, str]) -> int:
    """transformers' count of what the files hold: its parameters and the persistent buffers a checkpoint
    carries (``UNSAVED_BUFFERS`` left out)."""
    saved = sum(n for name, n in buffers_of(row).items() if name not in UNSAVED_BUFFERS)
    return int(row["transformers_params"]) + saved


def _param(row: dict[str, str]):
    reason = XFAIL.get(row["source"])
    return pytest.param(row, id=row["source"],
                        marks=[pytest.mark.xfail(strict=True, reason=reason)] if reason else [])


@pytest.mark.parametrize("row", [_param(row) for row in BUILT])
def test_the_estimate_is_transformers_count(row):
    config = config_of(row["source"])
    if config is None:
        pytest.skip(f"{row['source']}: ../shared/hub-configs absent")
    est = estimate(config)
    assert isinstance(est, W.WeightsEstimate), f"hfkv: unknown ({est.reason}); transformers builds it"
    named = {why: amount(est) if callable(amount) else amount for amount, why in DIFFERENCES.get(row["source"], ())}
    assert all(named.values()), named  # a named difference that is zero is no longer one: its line goes
    assert est.total_parameters - sum(named.values()) == checkpoint_count(row)


def test_every_named_row_is_in_the_table():
    built = {row["source"] for row in BUILT}
    assert set(DIFFERENCES) <= built and set(XFAIL) <= built
    assert not set(DIFFERENCES) & set(XFAIL)


# -- the table is still what transformers says ---------------------------------------------------------

# A few rows rebuilt in a few seconds: small models, each a path of the generator (tied heads, a fallback Auto
# class, persistent buffers, a mixture of experts with MLA, a vision wrapper, an encoder-decoder, a refusal).
CHEAP = ("fixtures/facebook__opt-125m", "fixtures/EleutherAI__gpt-neo-125m", "fixtures/RWKV__rwkv-4-169m-pile",
         "fixtures/LiquidAI__LFM2.5-Embedding-350M", "fixtures/facebook__bart-large-cnn",
         "fixtures/deepseek-ai__DeepSeek-V2-Lite", "fixtures/google__gemma-3-4b-it", "fixtures/google-t5__t5-base",
         "fixtures/THUDM__chatglm-6b")


def test_the_table_is_what_transformers_says():
    try:
        import torch  # noqa: F401  (the meta device)
        import transformers
    except ImportError:
        pytest.skip("torch is not installed: pip install torch enables rebuilding rows of transformers-counts.tsv")
    recorded = HEADER[0].split()[2].rstrip(",")
    if transformers.__version__ != recorded:
        pytest.skip(f"the table is transformers {recorded}'s, this is {transformers.__version__}: "
                    "python tests/model/test_weights_transformers.py rewrites it")
    rows = {row["source"]: row for row in ROWS}
    for source in CHEAP:
        try:
            got = count(config_of(source))
        except Skipped as exc:
            got = {"notes": str(exc)}
        assert {k: v for k, v in rows[source].items() if k in got} == got, source


if __name__ == "__main__":
    write_table()
