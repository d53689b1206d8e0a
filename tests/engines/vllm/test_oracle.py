"""``--engine vllm`` against what vLLM 0.33.0's own code computes (the oracle rows).

The rows come from ``shared/tools/vllm-oracle`` (vLLM's start-up path run on CPU with a simulated GPU):
``shared/engine-oracles/vllm-0.33.0-h200.jsonl`` (H200, SM 9.0) and this project's
``tests/oracles/vllm-0.33.0-*.jsonl`` (other GPU generations, and hub configs edited to a window that covers
every position, see tests/oracles/README.md). Every row is driven the way a user would: the config from
``shared/hub-configs`` (or ``tests/oracles/window-configs``), the row's TP and KV dtype, the
row's budget, no ``max_model_len`` (so hfkv's own default is compared with vLLM's), the row's GPU
generation. A row with vLLM's error must make hfkv refuse with vLLM's reason; any other row must match
on every figure vLLM logs or keeps. Rows where the oracle itself failed offline are listed in
``NOT_COMPARABLE`` with the reason.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import pytest

from hfkv.engines import simulate
from hfkv.errors import HfkvError
from hfkv.inspection import inspect_config
from hfkv.model.options import Options

from _helpers import WINDOW_CONFIGS, window_config  # the window-configs entries (tests/oracles/README.md)

TESTS = Path(__file__).resolve().parents[2]
SHARED = Path(__file__).resolve().parents[4] / "shared"
HUB_CONFIGS = SHARED / "hub-configs"
FIXTURES = TESTS.parent / "fixtures"  # configs of vllm-0.33.0-fixtures.jsonl: fixtures/<name>/config.json
ORACLE_CONFIGS = TESTS / "oracles" / "configs"  # configs written for rows no hub config or fixture holds
FIXTURE_ROWS = TESTS / "oracles" / "vllm-0.33.0-fixtures.jsonl"
ORACLE_FILES = (SHARED / "engine-oracles" / "vllm-0.33.0-h200.jsonl", SHARED / "engine-oracles" / "vllm-0.34.0-h200.jsonl",
                *sorted((TESTS / "oracles").glob("vllm-*.jsonl")))
PINNED = "0.33.0"  # the release the rows without a version of their own come from (this project's files)
SM_OF_PLATFORM = {"H200": "9.0", "B200": "10.0", "A100": "8.0"}
DEFAULT_BATCHED_TOKENS = 8192  # hfkv's default (vLLM on a >= 70 GiB non-A100 GPU)

# Rows that say nothing about vLLM: the oracle could not run vLLM's code offline (README of the tool).
# By config, and by an error text the oracle's substitutions cause.
NOT_COMPARABLE = {
    "MiniMaxAI__MiniMax-M1-80k.json": "auto_map config class needs the repo's code (trust_remote_code); "
                                      "vLLM would then refuse MiniMaxM1ForCausalLM (dropped after 0.23.0)",
    "nvidia__Llama-3_3-Nemotron-Super-49B-v1.json": "auto_map config class needs the repo's code (trust_remote_code)",
    "replit__replit-code-v1_5-3b.json": "transformers' built-in MptConfig rejects the repo's attn_type; the repo's own "
                                        "config class (remote code) is not run",
    # vllm-0.33.0-fixtures-sweep.jsonl: fixtures written from a config class's defaults (or from an engine log)
    # lack keys the checkpoint's config.json sets and vLLM's model code reads; vLLM stops on them before any
    # KV-cache spec, so the rows say nothing about the cache.
    **{f"{name}.json": f"the fixture lacks {key}, which vLLM's model code reads (the checkpoint's config sets it)"
       for name, key in (
           ("LiquidAI__LFM2-1.2B-transformers-defaults", "block_dim (lfm2.py)"),
           ("MiniMaxAI__MiniMax-M2.7-from-engine-log", "rotary_dim (minimax_m2.py)"),
           ("Qwen__Qwen3-VL-MoE-transformers-defaults", "text_config.norm_topk_prob (qwen3_moe MoE block)"),
           ("Qwen__Qwen4-Exp-transformers-defaults", "vision_config.deepstack_visual_indexes"),
           ("XiaomiMiMo__MiMo-V2-Flash-transformers-defaults", "hybrid_layer_pattern (mimo_v2_flash.py)"),
           ("allenai__Molmo2-transformers-defaults", "vit_config (molmo2.py)"),
           ("arcee-ai__Trinity-Mini-transformers-defaults", "score_func (afmoe.py router)"),
           ("deepseek-ai__DeepSeek-V4.1-synthetic", "vocab_size"),
           ("meituan-longcat__LongCat-Flash-Chat-transformers-defaults", "mla_scale_q_lora (longcat_flash.py)"),
           ("stepfun-ai__Step-3.7-Flash-transformers-defaults", "vision_config.output_dim"),
           ("zai-org__GLM-5.3-Flash-transformers-defaults", "text_config.mhc (glm5_next)"),
           ("thinkingmachines__Inkling-transformers-defaults",
            "n_shared_experts / shared_expert_sink (inkling/nvidia/moe.py asserts both)"),
       )},
    "XiaomiMiMo__MiMo-7B-RL-from-engine-log.json": "model_type mimo has no config class in the oracle's transformers "
                                                   "(the repo's own is remote code)",
    "openbmb__MiniCPM3-4B-transformers-defaults.json": "the fixture has no model_type, which transformers' AutoConfig "
                                                       "needs (the checkpoint's config sets minicpm3)",
    "domyn__Domyn-Edge-Base-config-class-defaults.json": "transformers 5.20 has no domynedge config class; the "
                                                         "window-configs rows run Domyn-Edge as a qwen2 copy",
}
OFFLINE_ERRORS = {
    "Found no NVIDIA driver on your system": "vLLM 0.34.0's DeepSeek-V3.2 fp8 build asks the driver itself (the "
                                             "oracle's fake platform has none): no vLLM verdict",
    "Can't load image processor for": "the oracle has no processor files: a multimodal build loads an image "
                                      "processor (preprocessor_config.json) offline",
    "Can't load feature extractor for": "the oracle has no processor files: an audio build loads a feature "
                                        "extractor offline",
    "contains custom code which must be executed": "auto_map config class needs the repo's code (trust_remote_code), "
                                                   "which the oracle never runs",
    "TimmWrapperModel requires the timm library": "the oracle venv has no timm (Gemma 3n's vision tower)",
    "Input device meta does not match TP device": "meta-device limitation: Kimi-K3's SM100 TP>1 layers check their "
                                                  "input device, and the oracle builds on torch.device('meta')",
}


# Rows hfkv's vLLM mode does not match yet, each with the engine's own reason: tests/oracles/known-gaps.tsv
# (engine, config, TP, KV dtype, reason), shared with the SGLang sweep. They must still mismatch
# (test_known_gaps_still_differ), so a row that starts to match fails until it is taken off the file.
KNOWN_GAPS_FILE = TESTS / "oracles" / "known-gaps.tsv"


def known_gaps(engine: str) -> dict:
    """(config, TP, KV dtype) -> reason, for ``engine``'s rows of ``KNOWN_GAPS_FILE``."""
    lines = KNOWN_GAPS_FILE.read_text(encoding="utf-8").splitlines()
    assert lines[0].split("\t") == ["engine", "config", "tp", "kv_cache_dtype", "reason"], lines[0]
    cells = [line.split("\t") for line in lines[1:] if line.strip()]
    return {(config, int(tp), kv): reason for eng, config, tp, kv, reason in cells if eng == engine}


KNOWN_GAPS = known_gaps("vllm")  # vLLM 0.33.0's rows; another release's gaps are filed as "vllm==X.Y.Z"


def release(row: dict) -> str:
    """The vLLM release whose own code made ``row`` (its file's name)."""
    return row.get("_release", PINNED)


# Rows where the oracle's start-up stops before the weights load (it builds the model on the meta device) but
# vLLM would fail loading them: hfkv refuses, with a reason containing these words. config -> (words, why).
LOAD_FAILURES = {
    f"Qwen__Qwen3-8B__mlx-{bits}bit.json": ("MLX's format", "MLX's quantization_config has no quant_method: "
        "_verify_quantization quantizes nothing and vLLM builds a bf16 Qwen3, which cannot load MLX's packed "
        f"{bits}-bit weights and their scales/biases")
    for bits in (4, 8)
}


def gap_reason(row: dict) -> str | None:
    gaps = KNOWN_GAPS if release(row) == PINNED else known_gaps(f"vllm=={release(row)}")
    return gaps.get((row["config"], row["tp"], row["kv_cache_dtype_arg"]))


def offline_reason(row: dict) -> str | None:
    """Why ``row`` is the oracle failing offline rather than vLLM's verdict (None: comparable)."""
    if row["config"] in NOT_COMPARABLE:
        return NOT_COMPARABLE[row["config"]]
    return next((why for text, why in OFFLINE_ERRORS.items() if text in (row.get("error") or "")), None)


@lru_cache(maxsize=None)
def rows() -> list[dict]:
    out = []
    for path in ORACLE_FILES:
        if path.is_file():
            found = re.search(r"vllm-(\d+\.\d+\.\d+)", path.name)
            version = found.group(1) if found else PINNED
            out += [{**json.loads(line), "_release": version} for line in path.read_text().splitlines() if line.strip()]
    return out


def capability(row: dict) -> str:
    """The row's GPU generation, from the platform the oracle simulated."""
    platform = " ".join(row.get("rederived", []))
    for name, sm in SM_OF_PLATFORM.items():
        if f" {name}" in platform:
            return sm
    raise AssertionError(f"{row['config']}: no known platform in {platform!r}")


def config_data(row: dict) -> dict:
    """The row's config: its window-configs entry when there is one (``_helpers.window_config``), else
    the shared hub config, else ``tests/oracles/configs/``, else the fixture of that name (a model no hub
    config holds)."""
    edited = window_config(row["config"])
    if edited is not None:
        return edited
    for path in (HUB_CONFIGS / row["config"], ORACLE_CONFIGS / row["config"]):
        if path.is_file():
            return oracle_config(json.loads(path.read_text()))
    return json.loads((FIXTURES / row["config"].removesuffix(".json") / "config.json").read_text())


def oracle_config(data: dict) -> dict:
    """A config of ``tests/oracles/configs``: as written, or an edit of a shared hub config
    (``{"edit_of": hub config, "set": {key: value}}``, top-level keys; the hub configs are never copied)."""
    if set(data) != {"edit_of", "set"}:
        return data
    edited = json.loads((HUB_CONFIGS / data["edit_of"]).read_text())
    edited.update(data["set"])
    return edited


class ModelRefused(Exception):
    """hfkv itself refuses the model (no layer specs), before any engine mode runs."""


# vLLM's --kv-cache-dtype as the oracle passed it -> hfkv's. "auto" stays "auto": vLLM refuses an
# explicit bfloat16/float16 that is not the model's dtype (_reject_mismatched_float_kv_cache), so the
# shared H200 rows, run as "auto" though labelled bf16, must be asked as "auto" too.
KV_ARGS = {"auto": "auto", "bfloat16": "bf16", "float16": "fp16"}


def kv_arg(row: dict) -> str:
    """The row's KV dtype as hfkv's --kv-cache-dtype (``KV_ARGS``; fp8 and the like as labelled)."""
    passed = row.get("vllm_kv_cache_dtype_arg")
    return KV_ARGS.get(passed, row["kv_cache_dtype_arg"]) if passed else row["kv_cache_dtype_arg"]


def run_hfkv(row: dict):
    """hfkv's vLLM mode for the row, as a user would ask: (result, None) or (None, the refusal).

    A refusal of the model itself (the mapper's: encoder-decoder, encoder-only) comes back as a
    ``ModelRefused``: no engine figure is printed then either.
    """
    data = config_data(row)
    options = Options(kv_cache_dtype=kv_arg(row), tensor_parallel_size=row["tp"])
    try:
        report = inspect_config(data, model=row["config"], options=options)
    except HfkvError as err:
        return None, ModelRefused(str(err))
    # The oracle's fake platform reports an H200's memory on every generation, so its scheduler
    # default is the row's (2048 under the A100 name); a real GPU's comes from --gpu (enrich).
    # The oracle stops once the KV cache is sized, before CUDA-graph capture, where vLLM (from 0.20) refuses a
    # max_num_seqs above the Mamba cache blocks: its rows say nothing of that check, so it is left out here
    # (enforce_eager changes nothing else in the cache; tests/engines/vllm/test_startup.py has the check).
    knobs = {"compute_capability": capability(row), "enforce_eager": True}
    if row.get("max_num_batched_tokens") not in (None, DEFAULT_BATCHED_TOKENS):
        knobs["max_num_batched_tokens"] = row["max_num_batched_tokens"]
    try:
        out = simulate(report, engine=f"vllm=={release(row)}", budget_bytes=row["budget_bytes"], max_model_len=None,
                       **knobs)
    except HfkvError as err:
        return None, err
    return out, None


REASON_CHARS = 36  # how much of vLLM's own message hfkv's refusal must repeat


MODEL_FOLDER = re.compile(r"^(Unrecognized model) in .*?\.(?= Should)")  # transformers names the folder: the oracle's is a temp one


def vllm_reason(error: str) -> str:
    """The start of vLLM's own message inside the oracle's error text (pydantic's wrapper dropped, the model
    folder transformers names left out)."""
    text = error.split("Value error, ", 1)[-1] if "Value error, " in error else error
    text = text.split(": ", 1)[1] if text.split(": ", 1)[0].endswith("Error") else text
    return MODEL_FOLDER.sub(r"\1.", text.strip().splitlines()[0])[:REASON_CHARS]


def refused_like_vllm(err, error: str | None = None) -> bool:
    """A refusal that repeats vLLM's reason (``error``: the row's), or hfkv's own refusal of the model."""
    if isinstance(err, ModelRefused):
        return True
    if err is None or "vLLM" not in str(err):
        return False
    return error is None or vllm_reason(error) in MODEL_FOLDER.sub(r"\1.", str(err).split("start: ", 1)[-1])


def fit_error(row: dict) -> bool:
    return (row.get("error") or "").startswith("vllm: To serve at least one request")


def mismatches(row: dict, out: dict | None, err: HfkvError | None) -> list[str]:
    """What differs between vLLM's row and hfkv's answer (empty when they agree)."""
    error = row.get("error")
    if row["config"] in LOAD_FAILURES:
        words, why = LOAD_FAILURES[row["config"]]
        ok = err is not None and "vLLM" in str(err) and words in str(err)
        return [] if ok else [f"vLLM fails to load the weights ({why}); hfkv says {out or err}"]
    if error and not fit_error(row):
        if err is None:
            return [f"vLLM refuses ({error.splitlines()[0][:120]}) but hfkv answers"]
        if not refused_like_vllm(err, error):
            return [f"hfkv refuses without vLLM's reason ({vllm_reason(error)!r}): {err}"]
        return []
    if row.get("num_groups") == 0:  # a pooling model with encoder-only attention: vLLM starts with no KV cache
        if isinstance(err, ModelRefused):  # hfkv's own refusal of an encoder-only model: no cache either
            return []
        if err is not None:
            return [f"vLLM starts with no KV cache groups; hfkv refuses: {err}"]
        return [f"{name}: vLLM {row.get(key)}, hfkv {out.get(out_key)}" for name, key, out_key in (
            ("groups", "num_groups", "kv_cache_groups"), ("block_size", "block_size", "block_size"),
            ("bytes_per_block", "bytes_per_block", "bytes_per_block"), ("num_blocks", "num_blocks", "num_blocks"),
            ("blocks_per_request", "blocks_per_request", "blocks_per_request"),
            ("max_model_len", "max_model_len", "max_model_len"), ("kv_cache_tokens", "kv_cache_tokens", "kv_cache_tokens"))
            if (len(out[out_key]) if key == "num_groups" else out.get(out_key)) != row.get(key)]
    if fit_error(row):
        if err is None or getattr(err, "details", None) is None or "To serve at least one request" not in str(err):
            return [f"vLLM refuses (one request does not fit) but hfkv says {out or err}"]
        out = err.details
    elif err is not None:
        return [f"hfkv refuses where vLLM serves: {err}"]
    diffs = []

    def check(name: str, expected, actual):
        if expected != actual:
            diffs.append(f"{name}: vLLM {expected}, hfkv {actual}")

    check("max_model_len", row["max_model_len"], out.get("max_model_len"))
    check("block_size", row["block_size"], out.get("block_size"))
    check("bytes_per_block", row["bytes_per_block"], out.get("bytes_per_block"))
    check("groups", row["num_groups"], len(out.get("kv_cache_groups", [])))
    check("blocks_per_request", row["blocks_per_request"], out.get("blocks_per_request"))
    if fit_error(row):
        check("estimated_max_model_len", row["estimated_max_model_len"], out.get("max_model_len_fit"))
    else:
        check("num_blocks", row["num_blocks"], out.get("num_blocks"))
        check("kv_cache_tokens", row["kv_cache_tokens"], out.get("kv_cache_tokens"))
        check("max_concurrency", round(row["max_concurrency"], 2), out.get("max_concurrency"))
    return diffs


def sweep(selected: list[dict] | None = None) -> tuple[int, list[str]]:
    """(rows compared, one line per mismatch) over the comparable rows (``selected``, default all)."""
    failures, compared = [], 0
    for row in rows() if selected is None else selected:
        if offline_reason(row) or gap_reason(row):
            continue
        compared += 1
        out, err = run_hfkv(row)
        for diff in mismatches(row, out, err):
            failures.append(f"{row['config']} TP{row['tp']} {row['kv_cache_dtype_arg']} SM{capability(row)}: {diff}")
    return compared, failures


def test_every_oracle_row_is_matched_or_listed():
    if not HUB_CONFIGS.is_dir() or not rows():
        pytest.skip(f"{SHARED} is absent: the vLLM oracle rows cannot be swept")
    compared, failures = sweep()
    assert compared
    assert not failures, f"{len(failures)} mismatch(es) over {compared} rows:\n" + "\n".join(failures)


def test_covering_window_rows():
    """The rows of tests/oracles/window-configs (windows that cover every position, Domyn-Edge): 7 configs ×
    TP 1/8 × bf16/fp8. The 3 configs this repository writes out are swept even without ../shared (12
    rows); the 4 edits of hub configs need it."""
    window_rows = [row for row in rows() if (WINDOW_CONFIGS / row["config"]).is_file()]
    assert len(window_rows) == 28
    buildable = [row for row in window_rows if window_config(row["config"]) is not None]
    assert len(buildable) == (28 if HUB_CONFIGS.is_dir() else 12)
    compared, failures = sweep(buildable)
    assert compared == len(buildable)
    assert not failures, "\n".join(failures)


def test_fixture_rows_need_no_shared_folder():
    """The rows run on fixtures this repository keeps (vllm-0.33.0-fixtures.jsonl) are swept everywhere:
    Unlimited-OCR at TP 1/8 × bf16/fp8 (TP 1 bf16 served; TP 1 fp8 refused as FA4 on SM90 refuses it,
    TP 8 refused for 10 heads), all four compared."""
    fixture_rows = [{**json.loads(line), "_release": PINNED} for line in FIXTURE_ROWS.read_text().splitlines()
                    if line.strip()]
    assert len(fixture_rows) == 4
    compared, failures = sweep(fixture_rows)
    assert compared == 4
    assert not failures, "\n".join(failures)


def test_known_gaps_still_differ():
    """Each ``KNOWN_GAPS`` row still mismatches; once hfkv matches vLLM, take it off the list."""
    gaps = [row for row in rows() if gap_reason(row)]
    assert len(gaps) == len(KNOWN_GAPS)
    for row in gaps:
        out, err = run_hfkv(row)
        assert mismatches(row, out, err), f"{row['config']} TP{row['tp']} {row['kv_cache_dtype_arg']} now matches"


def test_not_comparable_rows_really_failed_offline():
    """Each listed config's rows carry an error (the oracle's), never figures."""
    if not rows():
        pytest.skip(f"{SHARED} is absent")
    listed = [row for row in rows() if offline_reason(row)]
    assert listed
    for row in listed:
        assert row.get("error") and row.get("num_blocks") is None, row["config"]
