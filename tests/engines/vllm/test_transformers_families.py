"""vLLM 0.33.0's Transformers-backend families (tests/families/test_transformers_backend.py): the eleven
names it registers, its own start-up figures (``tests/oracles/transformers-families-vllm-0.33.0.jsonl``,
tests/oracles/README.md) matched row by row, and the multimodal backend refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hfkv.engines import simulate
from hfkv.engines.vllm.facts import transformers_registered
from hfkv.errors import UnsupportedModelError

from engines.vllm.test_oracle import mismatches
from engines.vllm.test_transformers import run_hfkv
from families.test_transformers_backend import FAMILIES, MULTIMODAL, report

VLLM_033 = "vllm==0.33.0"  # these figures follow vLLM 0.33.0's rules (block 16 by default), derived by hand or from its oracle rows


def test_the_eleven_are_the_backend_names_hfkv_lacked():
    assert {arch for arch, *_ in FAMILIES.values()} == {
        "CwmForCausalLM", "Emu3ForConditionalGeneration", "FlexOlmoForCausalLM", "GlmForCausalLM",
        "HunYuanVLForConditionalGeneration", "Jais2ForCausalLM", "Kolibri1ForCausalLM", "SeedOssForCausalLM",
        "SmolLM3ForCausalLM", "VaultGemmaForCausalLM", "VibeVoiceAsrForConditionalGeneration"}
    assert {arch for arch, *_ in FAMILIES.values()} <= set(transformers_registered())


# -- vLLM's own code ---------------------------------------------------------------------------------


TESTS = Path(__file__).resolve().parents[2]


ROWS = TESTS / "oracles" / "transformers-families-vllm-0.33.0.jsonl"


def oracle_rows() -> list[dict]:
    return [json.loads(line) for line in ROWS.read_text().splitlines() if line.strip()]


def test_every_oracle_row_is_matched():
    """12 rows: CWM, Kolibri-1, VaultGemma × TP 1/8 × bf16/fp8, all served by vLLM."""
    rows = oracle_rows()
    assert len(rows) == 12 and all(r.get("num_blocks") for r in rows)
    assert {r["config"].removesuffix("-transformers-defaults.json") for r in rows} == {
        "facebook__cwm", "Aleph-Alpha__Kolibri-1", "google__vaultgemma-1b"}
    failures = []
    for row in rows:
        out, err = run_hfkv(row)
        name = f"{row['config']} TP{row['tp']} {row['kv_cache_dtype_arg']}"
        failures += [f"{name}: {diff}" for diff in mismatches(row, out, err)]
    assert not failures, "\n".join(failures)


def test_oracle_rows_hold_the_hand_derived_pages():
    """vLLM's own pages agree with the fixtures' geometry: block 16 × K + V × KV heads × head_dim × 2 B."""
    pages = {(r["config"], g["kind"]): (g["page_size_bytes"], g["layers"]) for r in oracle_rows()
             if r["tp"] == 1 and r["kv_cache_dtype_arg"] == "bf16" for g in r["kv_cache_groups"]}
    assert pages[("facebook__cwm-transformers-defaults.json", "full_attention")] == (16 * 2 * 8 * 128 * 2, 16)
    assert pages[("Aleph-Alpha__Kolibri-1-transformers-defaults.json", "sliding_window")] == (16 * 2 * 4 * 128 * 2, 10)
    assert pages[("google__vaultgemma-1b-transformers-defaults.json", "full_attention")] == (16 * 2 * 4 * 256 * 2, 13)


GiB = 1 << 30


def test_multimodal_backend_is_not_replayed():
    """Emu3, HunYuanVL, VibeVoice-ASR: vLLM builds TransformersMultiModalForCausalLM, whose processors and
    towers hfkv's vLLM mode does not replay: a refusal rather than a figure (the report itself is exact)."""
    for name in MULTIMODAL:
        with pytest.raises(UnsupportedModelError, match="multimodal backend"):
            simulate(report(name), engine=VLLM_033, budget_bytes=40 * GiB, max_model_len=None)
