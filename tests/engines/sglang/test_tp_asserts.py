"""SGLang mode refuses a TP the model's own attention class asserts against while it is built.

Expected verdicts are SGLang 0.5.23's assertions (``sglang/srt/models/<file>.py``, cited per test) over
the config's head counts, with the arithmetic beside them; the stored oracle rows that SGLang would
crash on are listed in tests/engines/sglang/test_oracle.py (``BUILD_ASSERTS``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hfkv.engines import simulate
from hfkv.engines.sglang.facts import TpAssert, parse_tp_asserts
from hfkv.engines.sglang.facts import architectures as sglang_architectures
from hfkv.engines.sglang.facts import tp_asserts as sglang_tp_asserts
from hfkv.engines.sglang.support import tp_failure, tp_refusal
from hfkv.errors import UnsupportedModelError
from hfkv.inspection import inspect_config
from hfkv.model.options import Options

ROOT = Path(__file__).resolve().parents[3]
PREFIX = "SGLang 0.5.23 cannot serve this model"


def fixture(folder: str, tp: int, **changes) -> object:
    data = json.loads((ROOT / "fixtures" / folder / "config.json").read_text())
    data.update(changes)
    return inspect_config(data, model=folder, options=Options(tensor_parallel_size=tp))


def refusal(report: object, **knobs) -> str:
    with pytest.raises(UnsupportedModelError) as err:
        simulate(report, engine="sglang", **knobs)
    message = str(err.value)
    assert "\n" not in message and PREFIX in message
    return message


# -- the table ------------------------------------------------------------------------------------

# What each class's __init__ asserts, read from SGLang 0.5.23's source:
TABLE = {
    # qwen2.py Qwen2Attention: tp_size = get_parallel().tp_size; assert self.total_num_heads % tp_size == 0;
    # kv: assert total_num_kv_heads % tp_size == 0 if >= tp_size else assert tp_size % total_num_kv_heads == 0
    "Qwen2ForCausalLM": "heads+kv@tp:Qwen2Attention",
    # qwen3.py Qwen3Attention: attn_tp_size = get_parallel().attn_tp_size; the same two assertions on it
    "Qwen3ForCausalLM": "heads+kv@attn_tp:Qwen3Attention",
    # llama.py LlamaAttention: tp_size = get_parallel().tp_size; heads and KV heads
    "LlamaForCausalLM": "heads+kv@tp:LlamaAttention",
    # opt.py OPTAttention: assert num_heads % tensor_model_parallel_world_size == 0 (no KV assertion)
    "OPTForCausalLM": "heads@tp:OPTAttention",
    # deepseek_v2.py DeepseekV2AttentionMLA: assert num_heads % attn_tp_size == 0 (MLA: no KV heads)
    "DeepseekV3ForCausalLM": "heads@attn_tp:DeepseekV2AttentionMLA",
    # commandr.py CohereAttention: num_heads = total_num_heads // tp_size (floor, no assert); KV asserted
    "CohereForCausalLM": "kv@tp:CohereAttention",
    # mamba.py: no attention layer at all
    "MambaForCausalLM": "?",
}


@pytest.mark.parametrize("arch, value", sorted(TABLE.items()))
def test_table_records_what_the_attention_class_asserts(arch, value):
    assert sglang_tp_asserts()[arch] == parse_tp_asserts(value)


def test_every_native_architecture_has_a_parsable_verdict():
    table = sglang_tp_asserts()
    assert set(table) == set(sglang_architectures())
    assert all(v is None or all(isinstance(e, TpAssert) for e in v) for v in table.values())


def test_malformed_cells_are_refused_by_the_reader():
    with pytest.raises(ValueError, match="malformed"):
        parse_tp_asserts("heads@dp:X")
    assert parse_tp_asserts("none") == () and parse_tp_asserts("?") is None
    assert parse_tp_asserts("heads@?:CCA") == (TpAssert(frozenset({"heads"}), None, "CCA"),)


# -- refusals -------------------------------------------------------------------------------------


def test_qwen25_7b_at_tp8_is_refused_naming_the_assertion():
    # Qwen2.5-7B: 28 heads, 28 % 8 = 4 ≠ 0 → qwen2.py Qwen2Attention's first assertion fails.
    message = refusal(fixture("Qwen__Qwen2.5-7B", 8))
    assert message.endswith(f"{PREFIX} at TP 8: its Qwen2Attention asserts total_num_heads (28) % tp_size (8) == 0")


def test_unlimited_ocr_at_tp8_is_refused():
    # 10 heads, 10 % 8 = 2 ≠ 0 → deepseek.py DeepseekAttention (the class unlimited_ocr.py builds).
    message = refusal(fixture("baidu__Unlimited-OCR", 8))
    assert "DeepseekAttention asserts total_num_heads (10) % tp_size (8) == 0" in message


def test_mla_heads_are_asserted_too():
    # DeepSeek-V3: 128 heads; 128 % 8 = 0 is served, a synthetic 120 heads: 120 % 16 = 8 ≠ 0 is refused.
    assert simulate(fixture("deepseek-ai__DeepSeek-V3", 8), engine="sglang")["bytes_per_token"] > 0
    message = refusal(fixture("deepseek-ai__DeepSeek-V3", 16, num_attention_heads=120))
    assert "DeepseekV2AttentionMLA asserts total_num_heads (120) % attn_tp_size (16) == 0" in message


def test_kv_heads_above_and_below_tp():
    # llama.py LlamaAttention, Llama-3.2-3B (24 heads; 24 % 4 = 0): 6 KV heads ≥ 4 → 6 % 4 = 2 ≠ 0;
    # 3 KV heads < 4 → tp_size % kv: 4 % 3 = 1 ≠ 0; 2 KV heads < 4 → 4 % 2 = 0 is served.
    assert "total_num_kv_heads (6) % tp_size (4) == 0" in refusal(
        fixture("meta-llama__Llama-3.2-3B-Instruct", 4, num_key_value_heads=6))
    assert "tp_size (4) % total_num_kv_heads (3) == 0" in refusal(
        fixture("meta-llama__Llama-3.2-3B-Instruct", 4, num_key_value_heads=3))
    served = simulate(fixture("meta-llama__Llama-3.2-3B-Instruct", 4, num_key_value_heads=2), engine="sglang")
    assert served["bytes_per_token"] > 0


def test_attention_tp_is_what_qwen3_divides_by_under_dp_attention():
    # Qwen3-14B: 40 heads. TP 16: qwen3.py divides by attn_tp_size = 16, 40 % 16 = 8 ≠ 0 → refused.
    # TP 16 with --dp 2 --enable-dp-attention: attn_tp_size = 16 / 2 = 8, 40 % 8 = 0 → served.
    assert "attn_tp_size (16)" in refusal(fixture("Qwen__Qwen3-14B-from-engine-log", 16))
    out = simulate(fixture("Qwen__Qwen3-14B-from-engine-log", 16), engine="sglang", data_parallel_size=2,
                   enable_dp_attention=True)
    assert out["bytes_per_token"] > 0


def test_qwen2_divides_by_the_full_tp_even_under_dp_attention():
    # qwen2.py Qwen2Attention reads get_parallel().tp_size (the whole group: 8), not the attention TP
    # (8 / 2 = 4): 28 % 8 = 4 ≠ 0 still fails although 28 % 4 = 0.
    message = refusal(fixture("Qwen__Qwen2.5-7B", 8), data_parallel_size=2, enable_dp_attention=True)
    assert "TP 8 (attention TP 4): its Qwen2Attention asserts total_num_heads (28) % tp_size (8) == 0" in message


def test_tp_refusal_takes_the_layout_directly():
    # For a serving plan: TP and attention TP given. Qwen2 (full TP 8): 28 % 8 = 4 → refused; Qwen3-14B
    # at TP 16, attention TP 8 (qwen3.py: attn_tp_size): 40 % 8 = 0 → None.
    assert "tp_size (8)" in tp_refusal(fixture("Qwen__Qwen2.5-7B", 1), 8, 4)
    assert tp_refusal(fixture("Qwen__Qwen3-14B-from-engine-log", 1), 16, 8) is None


def test_figures_are_still_produced_when_tp_divides():
    # 28 % 4 = 0 and KV 4 % 4 = 0: Qwen2.5-7B at TP 4 is sized, 28 layers × 1 KV head × (128 + 128) × 2 B.
    out = simulate(fixture("Qwen__Qwen2.5-7B", 4), engine="sglang")
    assert out["bytes_per_token"] == 28 * 1 * (128 + 128) * 2  # = 14336


def test_an_unknown_tp_makes_no_claim():
    # zaya.py CCA divides by self.tp_size set by resolve_linear_parallel_group(parallel_group): the table
    # says '?', so 7 heads at TP 2 (7 % 2 = 1) are not refused on its account; a known TP is.
    unknown = TpAssert(frozenset({"heads"}), None, "CCA")
    assert tp_failure(unknown, [7], [], {"tp": 2, "attn_tp": 2}) is None
    known = TpAssert(frozenset({"heads"}), "tp", "CCA")
    assert tp_failure(known, [7], [], {"tp": 2, "attn_tp": 2}) == "total_num_heads (7) % tp_size (2) == 0"


def test_refused_only_when_every_listed_class_fails():
    # deepseek_ocr.py reaches both deepseek.py DeepseekAttention (full TP) and deepseek_v2.py's MLA
    # (attention TP); with TP 8, DP attention 2: 12 heads % 8 = 4 fails the first, 12 % 4 = 0 holds for
    # the second, so hfkv makes no claim; 10 heads fail both (10 % 8 = 2, 10 % 4 = 2).
    entries = parse_tp_asserts(sglang_tp_asserts_cell("DeepseekOCRForCausalLM"))
    sizes = {"tp": 8, "attn_tp": 4}
    assert [tp_failure(e, [12], [12], sizes) is None for e in entries] == [False, True]
    assert all(tp_failure(e, [10], [10], sizes) for e in entries)


def test_several_listed_classes_are_all_named():
    # llama4 (mllama4.py) reaches Llama4Attention (attention TP) and llama.py LlamaAttention (full TP):
    # Llama-3.2-3B's 24 heads at TP 16 fail both, 24 % 16 = 8 ≠ 0; neither is singled out.
    report = fixture("meta-llama__Llama-3.2-3B-Instruct", 16, architectures=["Llama4ForConditionalGeneration"])
    message = refusal(report)
    assert "every attention class it may build (Llama4Attention, LlamaAttention) fails its TP assertion" in message
    assert "Llama4Attention asserts total_num_heads (24) % attn_tp_size (16) == 0" in message


def sglang_tp_asserts_cell(arch: str) -> str:
    lines = (ROOT / "hfkv" / "engines" / "sglang" / "0.5.23.tsv").read_text(encoding="utf-8").splitlines()
    return next(line.split("\t")[2] for line in lines if line.startswith(arch + "\t"))


# -- the command line -----------------------------------------------------------------------------


def test_cli_exits_2_with_one_line():
    done = subprocess.run([sys.executable, "-c", "from hfkv.commands.cli import entry; entry()", "fixtures/Qwen__Qwen2.5-7B",
                           "--engine", "sglang", "--tp", "8"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert re.search(r"at TP 8: its Qwen2Attention asserts total_num_heads \(28\) % tp_size \(8\) == 0$", lines[0])


def test_a_serving_plan_checked_as_sglang_is_refused_too(tmp_path):
    """plot's deployment panel plans through serving.plan_serving (hfkv.engines.check_layout): Qwen2.5-7B at TP 8
    is refused as SGLang would refuse it (28 heads % 8 = 4), and TP 4 is drawn (28 % 4 = 0)."""
    pytest.importorskip("matplotlib")

    def plot(tp: int) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", "from hfkv.commands.cli import entry; entry()", "plot",
                               "fixtures/Qwen__Qwen2.5-7B", "--gpu", "H200:8", "--engine", "sglang", "--tp", str(tp),
                               "-o", str(tmp_path / f"tp{tp}.png")], capture_output=True, text=True, cwd=ROOT,
                              timeout=120)

    refused = plot(8)
    assert refused.returncode == 2 and "Qwen2Attention asserts total_num_heads (28) % tp_size (8) == 0" in refused.stderr
    assert not (tmp_path / "tp8.png").exists()
    assert plot(4).returncode == 0 and (tmp_path / "tp4.png").exists()
