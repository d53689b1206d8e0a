"""``--engine sglang==X`` against SGLang X's own sizing code: every stored oracle row, under the rules of the
release that made it (its file name; ``release(row)``).

Rows: ``../shared/engine-oracles/sglang-0.5.23-h200.jsonl`` (the shared H200 run) and, in this
repository, ``tests/oracles/sglang-0.5.23-b200.jsonl`` (the same tool with ``--gpu b200``) and
``tests/oracles/sglang-0.5.23-budget.jsonl`` (SGLang's budget path driven by hand; see
``tests/oracles/README-sglang.md``) and ``tests/oracles/sglang-0.5.23-fixtures.jsonl`` (the tool on
fixtures this repository keeps, ``fixtures/<row config without .json>/config.json``). hfkv is driven as a user would drive it: the row's config from
``../shared/hub-configs``, inspected with the row's KV dtype and TP, then ``simulate(engine="sglang")``
on the row's GPU generation. A row SGLang serves must match to the byte (per-token cell, full/SWA
split, state per request slot, page size, configurator, Mamba running-request ratio; with a budget the
token, request and state-slot counts; with the config's MTP layers as the draft, the EAGLE cell); a row
SGLang cannot serve must be refused, or carry a one-line warning naming the reason.

SGLang 0.5.12's rows (``../shared/engine-oracles/sglang-0.5.12-h200.jsonl``, made by
``../shared/tools/sglang-oracle-0.5.12``: that release's ``ServerArgs``, ``ModelConfig`` and pool
configurators on the CPU, faking an H200) are swept by ``test_release_rows_match_sglang`` under
``engine="sglang==0.5.12"``: the cell, page size, configurator, per-layer SWA split, Mamba state per
request slot, and the ``mem_fraction_static`` that release's ``ServerArgs`` defaulted to; their known
gaps are the ``sglang==0.5.12`` rows of tests/oracles/known-gaps.tsv.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hfkv.engines import memory_budget, simulate
from hfkv.engines.contract import Device, EngineKnobs
from hfkv.engines.layout import Layout
from hfkv.errors import HfkvError
from hfkv.inspection import inspect_config
from hfkv.model.options import Options

SHARED = Path(__file__).resolve().parents[4] / "shared"
HUB_CONFIGS = SHARED / "hub-configs"
ORACLES = Path(__file__).resolve().parents[2] / "oracles"
SOURCES = {
    "h200": SHARED / "engine-oracles" / "sglang-0.5.23-h200.jsonl",
    "b200": ORACLES / "sglang-0.5.23-b200.jsonl",
    "budget": ORACLES / "sglang-0.5.23-budget.jsonl",
    "fixtures": ORACLES / "sglang-0.5.23-fixtures.jsonl",
    "configs": ORACLES / "sglang-0.5.23-configs.jsonl",
    "h200-0.5.12": SHARED / "engine-oracles" / "sglang-0.5.12-h200.jsonl",
}
PINNED = "0.5.23"  # the release of the files whose name carries none
FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
CAPABILITY = {"H200": "9.0", "B200": "10.0"}

# Rows whose SGLang figure hfkv cannot reproduce yet, each with SGLang's own reason, are the sglang rows of
# tests/oracles/known-gaps.tsv (engine, config, TP, KV dtype, reason; shared with the vLLM sweep): the H200
# rows of that config, TP and dtype are strict xfails, so a row that starts to match fails until it is taken
# off the file. (Minimal fixtures SGLang's own code raises on, its all-SWA Unlimited-OCR pool, Qwen3-ASR in
# transformers' format, DeepSeek-V4.1's cap mode.)
KNOWN_GAPS_FILE = ORACLES / "known-gaps.tsv"


def known_gaps(engine: str) -> dict[str, str]:
    """row id (``row_id``'s H200 form) -> reason, for ``engine``'s rows of ``KNOWN_GAPS_FILE``."""
    lines = KNOWN_GAPS_FILE.read_text(encoding="utf-8").splitlines()
    assert lines[0].split("\t") == ["engine", "config", "tp", "kv_cache_dtype", "reason"], lines[0]
    cells = [line.split("\t") for line in lines[1:] if line.strip()]
    return {f"h200-{config.removesuffix('.json')}-tp{tp}-{kv}": reason
            for eng, config, tp, kv, reason in cells if eng == engine}


KNOWN_GAPS = known_gaps("sglang")  # 0.5.23's rows; another release's gaps are filed as "sglang==X.Y.Z"


def release(row: dict) -> str:
    """The SGLang release whose own code made ``row`` (its file's name)."""
    return row.get("_release", PINNED)


def gap_reason(row: dict) -> str | None:
    """Why hfkv does not reproduce ``row`` yet (tests/oracles/known-gaps.tsv, under its release), or None."""
    gaps = KNOWN_GAPS if release(row) == PINNED else known_gaps(f"sglang=={release(row)}")
    return gaps.get(row_id(row))

# Rows the oracle sizes (it never builds the model) but SGLang crashes on while building it: the
# attention class asserts that TP divides the query heads. hfkv refuses them naming the assertion.
# config -> (SGLang class, its source, the config's num_attention_heads); each fails at TP 8:
BUILD_ASSERTS = {
    "Qwen__Qwen2-7B-Instruct.json": ("Qwen2Attention", "models/qwen2.py", 28),  # 28 % 8 = 4
    "Qwen__Qwen2.5-7B.json": ("Qwen2Attention", "models/qwen2.py", 28),  # 28 % 8 = 4
    "facebook__opt-125m.json": ("OPTAttention", "models/opt.py", 12),  # 12 % 8 = 4
    "baidu__Unlimited-OCR.json": ("DeepseekAttention", "models/deepseek.py", 10),  # 10 % 8 = 2
    "ibm-granite__granite-swash-2b-transformers-defaults.json": ("GraniteAttention", "models/granite.py", 20),
    # MiniCPMV2_6 builds a Qwen2ForCausalLM (models/minicpmv.py): 28 % 8 = 4
    "openbmb__MiniCPM-V-2_6.json": ("Qwen2Attention", "models/qwen2.py", 28),
}


# The same for a MoE block's ValueError: config -> (SGLang class, its source, the config's expert count); the
# block raises when the TP it compares (qwen3_moe.py: get_parallel().moe_tp_size, TP without EP) exceeds it.
BUILD_EXPERTS = {
    "Qwen__Qwen3-30B-A3B__experts-4.json": ("Qwen3MoeSparseMoeBlock", "models/qwen3_moe.py", 4),  # 8 > 4
}


def build_failure(row: dict) -> tuple[str, ...] | None:
    """Words of the failure SGLang's model build raises for this row (``BUILD_ASSERTS``, ``BUILD_EXPERTS``),
    or None."""
    cls, _, experts = BUILD_EXPERTS.get(row["config"], (None, None, None))
    if cls is not None and row["tp"] > experts:
        return cls, f"Tensor parallel size {row['tp']} is greater than the number of experts {experts}."
    cls, _, heads = BUILD_ASSERTS.get(row["config"], (None, None, None))
    if cls is None or heads % row["tp"] == 0:
        return None
    return cls, f"asserts total_num_heads ({heads}) % tp_size ({row['tp']}) == 0"



def rows(source: str) -> list[dict]:
    path = SOURCES[source]
    if not path.is_file() or (source != "fixtures" and not HUB_CONFIGS.is_dir()):  # configs: hub edits among them
        return []
    found = re.search(r"sglang-(\d+\.\d+\.\d+)", path.name)
    made_by = found.group(1) if found else PINNED
    return [{**json.loads(line), "_release": made_by} for line in path.read_text().splitlines() if line.strip()]


def row_id(row: dict) -> str:
    gpu = "b200" if "B200" in (row.get("gpu_assumed") or "") else "h200"
    budget = f"-{row['budget_bytes']}" if "budget_bytes" in row else ""
    extra = "".join(f"-{k}={v}" for k, v in sorted((row.get("server_args_extra") or {}).items()))
    return f"{gpu}-{row['config'].removesuffix('.json')}-tp{row['tp']}-{row['kv_cache_dtype_requested']}{budget}{extra}"


def params(source: str) -> list:
    found = rows(source)
    if not found:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{SOURCES[source]} or {HUB_CONFIGS} is absent"))]
    return [pytest.param(row, id=row_id(row), marks=gap_marks(row)) for row in found]


def gap_marks(row: dict) -> tuple:
    reason = gap_reason(row)
    return (pytest.mark.xfail(strict=True, reason=reason),) if reason else ()


ORACLE_CONFIGS = ORACLES / "configs"  # configs written for rows no hub config or fixture holds


def config_path(row: dict) -> Path:
    """The row's config: the shared hub config, else ``tests/oracles/configs/``, else the fixture of that
    name (a model no hub config holds)."""
    for path in (HUB_CONFIGS / row["config"], ORACLE_CONFIGS / row["config"]):
        if path.is_file():
            return path
    return FIXTURES / row["config"].removesuffix(".json") / "config.json"


def config_data(row: dict) -> dict:
    """The row's config; a ``tests/oracles/configs`` edit of a hub config (``{"edit_of", "set"}``) applied."""
    data = json.loads(config_path(row).read_text())
    if set(data) == {"edit_of", "set"}:
        edited = json.loads((HUB_CONFIGS / data["edit_of"]).read_text())
        edited.update(data["set"])
        return edited
    return data


def capability(row: dict) -> str:
    return next((cc for gpu, cc in CAPABILITY.items() if gpu in (row.get("gpu_assumed") or "")), "9.0")


def run(row: dict, budget: int | None = None, max_model_len: int | None = None, **knobs) -> dict:
    """hfkv's SGLang mode on the row's config, KV dtype, TP and GPU, with ``knobs`` (HfkvError propagates)."""
    data = config_data(row)
    report = inspect_config(data, model=row["config"], options=Options(
        kv_cache_dtype=row["kv_cache_dtype_requested"], tensor_parallel_size=row["tp"]))
    return simulate(report, engine=f"sglang=={release(row)}", budget_bytes=budget, max_model_len=max_model_len,
                    compute_capability=capability(row), **knobs)


# Architectures the oracle labels ``non_native_arch`` (it looks up the config's raw name) that SGLang's own
# config class renames to a native one before the model registry sees them: SGLang serves them natively.
CONFIG_CLASS_RENAMES = {"Olmo3ForCausalLM": "configs/olmo3.py", "DeepseekV41ForCausalLM": "configs/deepseek_v41.py"}


def served(row: dict) -> bool:
    """SGLang sizes this row for a model it serves: status ok, or renamed to a native class by its config class
    (mamba_ssm's raw config, no architectures at all, is its MambaConfig: ``RAW_MAMBA``)."""
    first = (row.get("architectures") or [None])[0]
    raw_mamba = (row.get("model_config") or {}).get("hf_config_class") == RAW_MAMBA and first is None
    return row["status"] == "ok" or (row["status"] == "non_native_arch" and (first in CONFIG_CLASS_RENAMES or raw_mamba))


# utils/hf_transformers/config.py _try_load_raw_mamba_config: a config with d_model and ssm_cfg and neither
# model_type nor architectures becomes SGLang's MambaConfig (MambaForCausalLM, native); the oracle labels the
# row non_native_arch from the raw (absent) architectures but sizes it through that config class.
RAW_MAMBA = "MambaConfig"


def startup_failure(row: dict) -> str | None:
    """Why SGLang fails at start-up on a row its sizing code still answers, or None."""
    if row["config"].startswith("deepseek-ai__DeepSeek-V4") and row["kv_cache_dtype_requested"] == "bf16":
        return "create_buffer"  # DeepSeekV4SingleKVPool asserts fp8 storage
    return None


def reason_words(row: dict) -> tuple[str, ...]:
    """Words hfkv's warning must contain for a row SGLang refuses (a refusal needs none)."""
    if "TensorRT-LLM MLA" in (row.get("error") or ""):
        return ("'bfloat16'",)  # the oracle typed bfloat16; SGLang's trtllm_mla check only takes bf16 / auto
    return ("no native class",)


def expect_startup_refusal(row: dict, **kwargs) -> None:
    """SGLang sizes the pools, then fails while building the model or allocating them: hfkv refuses
    with that reason."""
    with pytest.raises(HfkvError) as err:
        run(row, **kwargs)
    words = build_failure(row) or (startup_failure(row),)
    assert all(w in str(err.value) for w in words) and "\n" not in str(err.value), str(err.value)


def expect_refusal_or_warning(row: dict, reason_words: tuple[str, ...]) -> None:
    """hfkv refuses in one line, or serves with a one-line warning containing one of ``reason_words``."""
    try:
        out = run(row)
    except HfkvError as err:
        assert "\n" not in str(err) and str(err).strip(), str(err)
        return
    warnings = out.get("warnings") or []
    assert any(any(w in line for w in reason_words) and "\n" not in line for line in warnings), (
        f"SGLang cannot serve {row_id(row)} ({row['status']}: {row.get('error') or row.get('notes')}); "
        f"hfkv printed figures without a warning: {warnings}")
    if any(FALLBACK_CLAIM in line for line in warnings) and row.get("bytes_per_token") is not None:
        # hfkv says its figures are what SGLang's transformers fallback allocates: they must be the oracle's
        assert out["bytes_per_token"] == pytest.approx(row["bytes_per_token"], rel=1e-12)


FALLBACK_CLAIM = "the figures are what that path allocates"


def check_cell(row: dict, out: dict) -> None:
    """Per-token figures, page size and configurator of a row SGLang serves."""
    assert out["configurator"] == row["configurator"]
    assert out["page_size"] == row["page_size"]
    assert out["bytes_per_token"] == pytest.approx(row["bytes_per_token"], rel=1e-12)
    swa = row.get("swa")
    if row["configurator"] == "HybridSWAPoolConfigurator":
        assert out["full_bytes_per_token"] == row["full_attention"]["bytes_per_token"]
        assert out["swa_bytes_per_token"] == swa["bytes_per_token"]
        assert out["swa_full_tokens_ratio"] == swa["ratio"]
    elif row["configurator"] == "DSV4PoolConfigurator":
        assert out["bytes_per_swa_token"] == pytest.approx(swa["bytes_per_token"], rel=1e-12)
        assert out["swa_full_tokens_ratio"] == swa["ratio"]
    state = row.get("state") if isinstance(row.get("state"), dict) else None
    assert out.get("mamba_bytes_per_request") == (state["bytes_per_request"] if state else None)
    if state:
        assert out["mamba_running_ratio"] == state["mamba_running_ratio"]


def check_index_map_note(row: dict, out: dict) -> None:
    """Hybrid-SWA / DSV4 pools allocate 8 B per token more than the sizing figure: hfkv says so."""
    alloc = row.get("alloc_check") or {}
    allocated = alloc.get("kv_bytes_per_token_allocated")
    if allocated is not None and row.get("bytes_per_token") is not None:
        if allocated - row["bytes_per_token"] == pytest.approx(8):
            assert any("index map" in a for a in out["assumptions"])


NO_CONTEXT_KEY = "names no context length"


def check_context_length(row: dict, out: dict) -> None:
    """SGLang's derived context length, or hfkv's warning that the config names none."""
    expected = (row.get("model_config") or {}).get("context_len")
    if expected is None:
        return
    if any(NO_CONTEXT_KEY in w for w in out["warnings"]):
        return  # the config class's default (Gemma 3: 131072) is not in config.json; hfkv says so
    assert out["context_length"] == expected


@pytest.mark.parametrize("row", params("h200") + params("b200") + params("fixtures") + params("configs"))
def test_per_token_figures_match_sglang(row):
    if not served(row):
        expect_refusal_or_warning(row, reason_words(row))
        return
    if startup_failure(row) or build_failure(row):
        expect_startup_refusal(row)
        return
    out = run(row)
    check_cell(row, out)
    check_index_map_note(row, out)
    check_context_length(row, out)


# Fixture rows whose per-token cell and page size match although the row is a known gap (the configurator).
CELL_MATCHES_DESPITE_GAP = {f"h200-baidu__Unlimited-OCR-tp1-{dtype}" for dtype in ("bf16", "fp8")}


def fixture_cell_params() -> list:
    found = [row for row in rows("fixtures") if served(row)]
    if not found:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{SOURCES['fixtures']} is absent"))]
    return [pytest.param(row, id=row_id(row), marks=() if row_id(row) in CELL_MATCHES_DESPITE_GAP
                         else gap_marks(row)) for row in found]


@pytest.mark.parametrize("row", fixture_cell_params())
def test_fixture_bytes_per_token_match_sglang_even_where_the_pool_differs(row):
    """The served fixture rows' per-token cell and page size match SGLang's even while their configurator is
    a known gap (``CELL_MATCHES_DESPITE_GAP``): the mapper's geometry is checked on its own."""
    if build_failure(row) or startup_failure(row):
        pytest.skip("SGLang fails at start-up on this row (test_per_token_figures_match_sglang checks it)")
    out = run(row)
    assert out["page_size"] == row["page_size"]
    assert out["bytes_per_token"] == row["bytes_per_token"]


# ServerArgs the budget driver set (``server_args_extra``) -> hfkv's engine knobs.
SERVER_ARG_KNOBS = {
    "disable_radix_cache": ("enable_prefix_caching", lambda value: not value),
    "max_running_requests": ("max_running_requests", int),
    "swa_full_tokens_ratio": ("swa_full_tokens_ratio", float),
    "page_size": ("page_size", int),
    "mamba_full_memory_ratio": ("mamba_full_memory_ratio", float),
    "mamba_ssm_dtype": ("mamba_ssm_dtype", {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get),
}


def knobs_of(row: dict) -> dict:
    knobs = {}
    for arg, value in (row.get("server_args_extra") or {}).items():
        name, convert = SERVER_ARG_KNOBS[arg]
        knobs[name] = convert(value)
    return knobs


@pytest.mark.parametrize("row", params("budget"))
def test_pool_sizes_for_a_budget_match_sglang(row):
    knobs = knobs_of(row)
    if "budget_error" in row:  # SGLang's budget path raised: hfkv refuses in one line
        with pytest.raises(HfkvError) as err:
            run(row, budget=row["budget_bytes"], **knobs)
        assert "\n" not in str(err.value)
        return
    if startup_failure(row) or build_failure(row):
        expect_startup_refusal(row, budget=row["budget_bytes"], **knobs)
        return
    if row["status"] != "ok" or "max_total_num_tokens" not in row:
        reason = row.get("error")
        pytest.fail(f"stored budget row without pool sizes: {row_id(row)} {reason}")
    out = run(row, budget=row["budget_bytes"], **knobs)
    if any(NO_CONTEXT_KEY in w for w in out["warnings"]):  # as the warning says: give the context length
        out = run(row, budget=row["budget_bytes"], max_model_len=row["context_len"], **knobs)
    else:
        assert out["context_length"] == row["context_len"]
    assert out["configurator"] == row["configurator"]
    assert out["max_total_num_tokens"] == row["max_total_num_tokens"]
    assert out["max_running_requests"] == row["max_running_requests"]
    assert out["max_mamba_cache_size"] == row["max_mamba_cache_size"]
    if row["configurator"] != "DefaultPoolConfigurator":
        assert out["swa_tokens"] == row["swa_max_total_num_tokens"]
    if row["configurator"] == "DSV4PoolConfigurator":
        assert out["c4_tokens"] == row["c4_max_total_num_tokens"]
        assert out["c128_tokens"] == row["c128_max_total_num_tokens"]


def draft_rows() -> list:
    found = [r for r in rows("h200") if (r.get("draft") or {}).get("bytes_per_token_with_mtp_draft") is not None]
    if not found:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{SOURCES['h200']} or {HUB_CONFIGS} is absent"))]
    return [pytest.param(row, id=row_id(row), marks=gap_marks(row)) for row in found]


@pytest.mark.parametrize("row", draft_rows())
def test_mtp_draft_pool_matches_sglang(row):
    """With the config's MTP layers as the draft (``--speculative-draft-layers``), the EAGLE cell matches."""
    out = run(row, speculative_draft_layers=row["draft"]["num_nextn_predict_layers"])
    assert out["bytes_per_token"] == pytest.approx(row["draft"]["bytes_per_token_with_mtp_draft"], rel=1e-12)



# -- rows of other releases (SGLang 0.5.12) -------------------------------------------------------------------

RELEASE_SOURCES = ("h200-0.5.12",)
H200 = Device("H200", smi_bytes=143_771 << 20, cuda_total_bytes=150_754_820_096)  # what the 0.5.12 driver fakes
# The 0.5.12 driver serves each config from a temporary folder (tempfile.mkdtemp(prefix="o512-")), the model
# path SGLang's rules read: "llama-2" in it caps the prefill graph at 4,096 tokens (server_args.py
# _handle_gpu_memory_settings), so the Llama-2 rows carry no cap. hfkv is given that path for the fraction.
ORACLE_MODEL_PATH = {"0.5.12": "/tmp/o512-"}

# Architectures a release registers no class for: no EntryClass of its sglang/srt/models/*.py names them (read
# in the 0.5.12 wheel). The 0.5.12 driver never asks the registry (its README), so its figures for these say
# nothing of what SGLang serves: SGLang would take its transformers fallback or refuse; hfkv must refuse or say so.
NOT_REGISTERED = {"0.5.12": {
    "BartForConditionalGeneration", "BloomForCausalLM", "FalconForCausalLM", "KimiK3ForConditionalGeneration",
    "LLaMAForCausalLM", "Lfm2BidirectionalModel", "MPTForCausalLM", "MambaForCausalLM", "MiniMaxM1ForCausalLM",
    "MiniMaxM3SparseForConditionalGeneration", "RWForCausalLM", "T5ForConditionalGeneration",
}}
RELEASE_REGISTRY_WORDS = ("registers no class",)  # hfkv's warning for a class the release does not register

# Rows where the driver failed before SGLang's own code decided (its README: "configs whose class needs repo
# code error instead of falling back"): no verdict of SGLang's to compare with.
DRIVER_LIMITS = {
    "nvidia__Llama-3_3-Nemotron-Super-49B-v1.json": "the driver drops auto_map and its transformers has no "
                                                    "nemotron-nas config class (the repo's own is remote code)",
}


def release_params() -> list:
    found = [row for source in RELEASE_SOURCES for row in rows(source)]
    if not found:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{SOURCES[RELEASE_SOURCES[0]]} or {HUB_CONFIGS} "
                                                                 "is absent"))]
    return [pytest.param(row, id=f"sglang=={release(row)}-{row_id(row)}", marks=gap_marks(row)) for row in found]


def registered_by_release(row: dict) -> bool:
    """Whether any of the row's architectures has a class in the row's release."""
    names = config_data(row).get("architectures") or []
    return not names or any(name not in NOT_REGISTERED.get(release(row), set()) for name in names)


def release_fraction(row: dict) -> float:
    """hfkv's default ``mem_fraction_static`` for the row's model, TP and release on the driver's H200, the
    model named by the path SGLang saw (``ORACLE_MODEL_PATH``)."""
    report = inspect_config(config_data(row), model=ORACLE_MODEL_PATH[release(row)], options=Options(
        kv_cache_dtype=row["kv_cache_dtype_requested"], tensor_parallel_size=row["tp"]))
    return memory_budget(f"sglang=={release(row)}", report, H200, None, None, EngineKnobs.resolve({}),
                         Layout(tp=row["tp"], engine="sglang")).fraction


def _same(ours: object, theirs: object) -> bool:
    """Equal, numbers to 1e-12 relative (SGLang's float cells); names and None compared as they are (pytest's
    approx refuses a non-number from 9.2 on)."""
    if isinstance(theirs, (int, float)) and not isinstance(theirs, bool) and isinstance(ours, (int, float)):
        return ours == pytest.approx(theirs, rel=1e-12)
    return ours == theirs


def release_mismatches(row: dict, out: dict) -> list[str]:
    """What differs between a served row of another release and hfkv's answer under that release's rules.
    The rows keep the configurator's own attributes (``configurator_attrs``): DeepSeek V4's bytes per full
    token, the hybrid-SWA pool's layer counts and per-layer bytes."""
    attrs = row["configurator_attrs"]
    full = attrs.get("_full_layers_num", 0) * attrs.get("_full_per_token", 0)
    swa = attrs.get("_swa_layers_num", 0) * attrs.get("_swa_per_token", 0)
    expected = {
        "configurator": row["configurator"], "page_size": row["page_size"],
        "bytes_per_token": attrs.get("bytes_per_full_token", row.get("bytes_per_token")),
        "mamba_bytes_per_request": (row.get("state") or {}).get("bytes_per_request"),
    }
    if row["configurator"] == "HybridSWAPoolConfigurator":
        expected.update(full_bytes_per_token=full, swa_bytes_per_token=swa,
                        swa_full_tokens_ratio=attrs["_swa_full_tokens_ratio"])
    diffs = [f"{key}: SGLang {value}, hfkv {out.get(key)}" for key, value in expected.items()
             if not _same(out.get(key), value)]
    allocated = row.get("mla_kv_cache_dim_allocated")  # the latent the pool allocates (DSA fp8: 656 B)
    if allocated == 656 and row["kv_cache_dtype_requested"] == "fp8" \
            and not any("sized with the raw 576 B latent" in note for note in out["assumptions"]):
        diffs.append("the pool allocates the 656 B latent but is sized with 576 B: hfkv does not say so")
    fraction = release_fraction(row)
    if fraction != pytest.approx(row["server_args"]["mem_fraction_static"], abs=1e-12):
        diffs.append(f"mem_fraction_static: SGLang {row['server_args']['mem_fraction_static']}, hfkv {fraction}")
    return diffs


@pytest.mark.parametrize("row", release_params())
def test_release_rows_match_sglang(row):
    """Every row of another release: refused or warned where that release has no class for the model, refused
    where its own code refused (DeepSeek V4 with a bf16 KV: ``deepseek_v4_hook`` asserts fp8) or its model
    build asserts (``BUILD_ASSERTS``, the same asserts in 0.5.12's qwen2.py and opt.py), else every figure."""
    if row["config"] in DRIVER_LIMITS:
        pytest.skip(DRIVER_LIMITS[row["config"]])
    if not registered_by_release(row):
        expect_refusal_or_warning(row, RELEASE_REGISTRY_WORDS)
        return
    if row["status"] != "ok" or build_failure(row):
        with pytest.raises(HfkvError) as err:
            run(row)
        words = build_failure(row) or ()
        assert all(w in str(err.value) for w in words) and "\n" not in str(err.value), str(err.value)
        return
    diffs = release_mismatches(row, run(row))
    assert not diffs, "\n".join(diffs)
