"""The whole budget of a log's own release against what the log printed, and the answers people want
(``hfkv.planning.explain``: ``predict``, ``answers``), on real logs only.

- vLLM: row R04 of ``../shared/docs/engine-logs.tsv`` (a vLLM tutorial's start of Qwen3-14B; the row
  records that the tutorial names vLLM 0.28.0, pasted beside the lines as users paste it, and a
  "46 GB-class GPU" that ``tests/planning/engine-log-budgets.tsv`` reads as an L40S), with the
  Qwen3-14B fixture (40 layers, 8 KV heads × 128, hidden 5,120, intermediate 17,408, vocabulary 151,936).
- SGLang: ``../shared/engine-logs/L001.log`` (sgl-project/sglang#18263: Qwen3-30B-A3B on one MI355X-class
  GPU, a PR build whose debug prints are interleaved), with the Qwen3-30B-A3B fixture (48 layers × 2 ×
  4 KV heads × 128 × 2 B = 98,304 B a token; context 40,960).

Every expected figure is worked out below from the log's numbers and the release's rule; a printed GiB
figure is its value × 2³⁰ (SGLang's "GB" too): 27.52 GiB = 29,549,374,996 B, 11.57 GiB = 12,423,192,904 B,
230.20 GB = 247,175,367,885 B, 56.98 GB = 61,181,809,132 B, 76.44 GB = 82,076,825,027 B.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import hfkv
from hfkv.errors import UsageError
from hfkv.planning.explain import gpu_for, with_options
from hfkv.sources.startup_log import parse_log

from _helpers import FIXTURES, HUB_CONFIGS

SHARED = HUB_CONFIGS.parent
GIB = 1 << 30
QWEN3_14B = str(FIXTURES / "Qwen__Qwen3-14B-from-engine-log")
QWEN3_30B = str(FIXTURES / "Qwen__Qwen3-30B-A3B")

# R04's four lines as the row quotes them, with the version the tutorial names pasted above them.
R04 = """vLLM: 0.28.0
Model loading took 27.52 GiB
Available KV cache memory: 11.57 GiB
GPU KV cache size: 75,824 tokens
Maximum concurrency for 40,960 tokens per request: 1.85x
"""
# L001's three lines of SGLang's own (the author's debug prints between them left out; they are not read).
L001 = """[2026-07-15 13:14:53] Load weight end. elapsed=19.09 s, type=Qwen3MoeForCausalLM, avail mem=230.20 GB, mem usage=56.98 GB.
[2026-07-15 13:14:54] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1669816, K size: 76.44 GB, V size: 76.44 GB
[2026-07-15 13:14:54] Memory pool end. avail mem=74.01 GB
"""


def rows(explanation) -> dict:
    return {c.term: c for c in explanation.comparisons if c.check == "prediction"}


def answers(explanation) -> dict:
    return {a.field: a for a in explanation.answers}


@pytest.fixture(scope="module")
def r04():
    return with_options(hfkv.explain_log(R04, model=QWEN3_14B), gpu="L40S-48GB")


@pytest.fixture(scope="module")
def l001():
    return with_options(hfkv.explain_log(L001, model=QWEN3_30B), gpu="MI355X-288GB")


def test_the_quoted_lines_are_the_shared_logs():
    if not (SHARED / "docs").is_dir():
        pytest.skip("../shared is absent")
    row = next(line for line in (SHARED / "docs" / "engine-logs.tsv").read_text().splitlines() if line.startswith("R04\t"))
    assert all(line in row for line in R04.splitlines()[1:]) and "0.28.0" in row
    stored = (SHARED / "engine-logs" / "L001.log").read_text()
    assert all(line in stored for line in L001.splitlines())


# -- vLLM 0.28.0 on an L40S (R04) -------------------------------------------------------------------

def test_vllm_requested_memory_and_the_printed_weights(r04):
    assert r04.budget["release"] == "vLLM 0.28.0: rules of 0.28–0.32" and r04.gpu.startswith("L40S-48GB")
    got = rows(r04)
    # requested = ceil(CUDA total × 0.92) (0.28's default utilization): the L40S's 44.39 GiB = 47,663,399,567 B,
    # × 0.92 = 43,850,327,601.64 → 43,850,327,602 B. The log prints no requested figure.
    assert got["requested memory"].computed_value == 43_850_327_602
    assert got["requested memory"].status == "not printed"
    # The printed "Model loading took 27.52 GiB" is the weights term itself.
    assert got["weights"].computed_value == 29_549_374_996 and got["weights"].status == "from the log"


def test_vllm_terms_the_log_does_not_print(r04):
    got = rows(r04)
    # sampler buffers (code): 256 sequences (vLLM's default below 70 GiB) × 151,936 × 4 B of penalty counts
    # = 155,582,464, plus the grammar bitmask (1 + 1) × 256 × ceil(151,936 / 32) × 4 = 9,723,904: 165,306,368 B.
    assert got["sampler buffers"].computed_value == 165_306_368 and got["sampler buffers"].source == "code"
    # peak activation (estimate ±10%): the sampler warm-up 14 × 256 × 151,936 + 2,048 × 5,120 × 2 = 565,510,144 B
    # beats the forward pass 2,048 × (5,120 + 4 × 17,408) × 2 = 306,184,192 B.
    assert got["peak activation"].computed_value == 565_510_144 and got["peak activation"].band == 56_551_014
    # CUDA graphs (estimate ±50%, subtracted from 0.20 on NVIDIA): capture sizes 1, 2, 4, 8…248 by 8, 256…512 by 16
    # = 51 piecewise, 35 of them ≤ 256 also full: int(0.30 GiB) + int(0.15 MiB) × 40 layers × 86
    # = 322,122,547 + 157,286 × 3,440 = 863,186,387 B.
    assert got["CUDA graphs"].computed_value == 863_186_387
    # non-torch int(2³⁰ / 4) = 268,435,456 B and allocator slack int(0.05 GiB) = 53,687,091 B, both estimates.
    assert got["non-torch memory"].computed_value == 268_435_456
    assert got["allocator slack"].computed_value == 53_687_091
    assert all(got[name].status == "not printed" for name in ("sampler buffers", "peak activation", "CUDA graphs"))


def test_vllm_what_the_log_implies_and_the_available_memory(r04):
    got = rows(r04)
    # The log implies requested − weights − available = 43,850,327,602 − 29,549,374,996 − 12,423,192,904
    # = 1,877,759,702 B for the terms it does not print; hfkv's are 165,306,368 + 565,510,144 + 268,435,456
    # + 863,186,387 + 53,687,091 = 1,916,125,446 B: 0.04 GiB over, inside their band.
    rest = got["the terms not printed"]
    assert rest.printed_value == 1_877_759_702 and rest.computed_value == 1_916_125_446 and rest.status == "estimate"
    # available = requested − every term = 43,850,327,602 − 29,549,374,996 − 1,916,125,446 = 12,384,827,160 B
    # (11.53 GiB); printed 11.57 GiB = 12,423,192,904 B, 38,365,744 B above, within the band: 56,551,014 (peak)
    # + int(0.15 GiB) 161,061,273 (non-torch) + 431,593,193 (graphs) + 53,687,091 (slack) = 702,892,571 B.
    available = got["available KV cache memory"]
    assert available.computed_value == 12_384_827_160 and available.band == 702_892_571
    assert available.status == "estimate" and "0.65" not in available.printed


def test_vllm_tokens_at_the_predicted_memory(r04):
    got = rows(r04)
    # 12,384,827,160 ± 702,892,571 B over 16-token blocks of 2,621,440 B: 4,456–4,992 blocks (by floor), whose
    # tokens are int(blocks / 2,560 × 40,960) = blocks × 16: 71,296–79,872; the printed 75,824 is inside.
    tokens = got["KV cache tokens (predicted)"]
    assert tokens.computed_value == [71_296, 79_872] and tokens.status == "estimate"
    assert got["max concurrency (predicted)"].computed_value == [1.74, 1.95]  # 4,456 / 2,560, 4,992 / 2,560


def test_vllm_answers(r04):
    found = answers(r04)
    # From the printed 11.565–11.575 GiB: 4,737–4,741 blocks of 2,621,440 B; a 40,960-token request takes 2,560
    # blocks, so 1 fits; the memory holds one request of (blocks − 1 null block) × 16 = 75,776–75,840 tokens, but
    # vLLM refuses a --max-model-len past the model's 40,960 (max_position_embeddings) before sizing anything.
    assert found["requests_fit"].value == 1 and found["requests_fit"].source == "the log"
    assert found["max_model_len_fit"].value == 40_960 and "75,776–75,840" in found["max_model_len_fit"].how
    # Two requests (one more than fit now) need 2 × 2,560 × 2,621,440 = 13,421,772,800 B; the engine's own other
    # terms are requested − printed available = 43,850,327,602 − 12,423,192,904 = 31,427,134,698 B; (13,421,772,800
    # + 31,427,134,698) / 47,663,399,567 = 0.9410 → 0.95. Checked: ceil(47,663,399,567 × 0.95) = 45,280,229,589
    # − 31,427,134,698 = 13,853,094,891 B = 5,284 blocks: 2 requests (0.94 gives 5,102 blocks: 1).
    setting = found["gpu_memory_utilization"]
    assert setting.value == 0.95 and setting.answer.startswith("0.95 (2 fit)") and setting.source == "the log"


def test_vllm_the_same_start_on_the_newest_release(r04):
    newest = answers(r04)["newest"]
    # vLLM 0.34 requests the whole 47,663,399,567 B and keeps, besides the same terms, the CUDA context
    # int(0.38 GiB) = 408,021,893 B and the margin max(1 GiB, 0.75 × 565,510,144) = 1,073,741,824 B:
    # 47,663,399,567 − 29,549,374,996 − 1,916,125,446 − 408,021,893 − 1,073,741,824 = 14,716,135,408 B, i.e.
    # 2,331,308,248 B more than 0.28's 12,384,827,160; moved onto the printed 12,423,192,904: 14,754,501,152 B.
    # 0.34's 64-token blocks (10,485,760 B): 1,407 blocks; 1,407 / 640 = 2.20×; 1,407 × 64 = 90,048 tokens.
    assert newest.value == {"kv_bytes": 14_754_501_152, "kv_cache_tokens": 90_048, "max_concurrency": 2.2}
    assert newest.source == "estimate" and "0.34.0" in newest.question


def test_requests_asked_for(r04):
    asked = with_options(r04, gpu="L40S-48GB", requests=3)
    # 3 × 6,710,886,400 + 31,427,134,698 = 51,559,793,898 B > 47,663,399,567: more than the whole GPU.
    setting = answers(asked)["gpu_memory_utilization"]
    assert setting.value is None and setting.answer.startswith("none: even 1.00 holds 2")


# -- SGLang on an MI355X (L001) ---------------------------------------------------------------------

def test_sglang_fraction_and_free_memory(l001):
    got = rows(l001)
    # The log prints no mem_fraction_static. SGLang 0.5.23's rule for G = 294,912 MiB (288 GiB): reserve 512 +
    # 1.5 × 16,384 (chunk, ≥ 160 GiB tier) + 1 × 1 / 8 × 1,024 + 2 × 512 (decode graphs) = 26,240 MiB (no prefill
    # graph on ROCm); (294,912 − 26,240) / 294,912 = 0.9110 → 0.911; × 0.85 on ROCm (aiter, context 40,960 > 8,192).
    assert got["mem_fraction_static"].computed_value == pytest.approx(0.911 * 0.85) and \
        got["mem_fraction_static"].status == "not printed"
    # Free before loading = the end's avail + mem usage = 247,175,367,885 + 61,181,809,132 = 308,357,177,017 B;
    # hfkv's estimate: 288 GiB − 454 MiB − int(0.38 GiB) = 309,237,645,312 − 476,053,504 − 408,021,893
    # = 308,353,569,915 B (read back from the budget's int(free × fraction): to a byte), 3,607,102 B below: inside
    # its ±0.2 GiB.
    before = got["free memory before loading"]
    assert before.printed_value == 308_357_177_017 and abs(before.computed_value - 308_353_569_915) <= 1
    assert before.status == "estimate"
    assert got["weights (mem usage)"].status == "from the log"


def test_sglang_pools_against_what_the_fraction_leaves(l001):
    got = rows(l001)
    # The pools' budget from the log's own figures: int(308,357,177,017 × 0.77435) − 61,181,809,132
    # = 177,594,570,891 B (165.40 GiB); the printed pools are 2 × 82,076,825,027 = 164,153,650,054 B (152.88 GiB):
    # 12.52 GiB less. What they are is what (164,153,650,054 + 61,181,809,132) / 308,357,177,017 = 0.731 would
    # leave: this PR build sized its pools by a rule of its own (its debug lines print 0.911 and "Case 2").
    pools = got["KV pools"]
    assert pools.computed_value == 177_594_570_891 and pools.printed_value == 164_153_650_054
    assert pools.status == "differs" and "0.731" in pools.reason
    # Free after the pools: 247,175,367,885 − 164,153,650,054 = 83,021,717,831 B (77.32 GiB); printed 74.01 GB:
    # 3.31 GiB more was taken between the weights and the pool end.
    after = got["free memory after the pools"]
    assert after.computed_value == 83_021_717_831 and after.status == "differs" and "3.31 GiB" in after.reason
    # Tokens at 177,594,570,891 B (± one token's 98,306 B of rounding): // 98,304 = 1,806,584–1,806,586; printed
    # 1,669,816, below.
    tokens = got["KV cache tokens (predicted)"]
    assert tokens.computed_value == [1_806_584, 1_806_586] and tokens.status == "differs"


def test_sglang_answers(l001):
    found = answers(l001)
    # The printed pool of 1,669,816 tokens holds 1,669,816 // 40,960 = 40 requests of the model's 40,960 tokens.
    assert found["requests_fit"].value == 40 and found["max_model_len_fit"].value == 1_669_816
    # 41 requests need 41 × 40,960 × 98,304 = 165,087,805,440 B. The fraction f SGLang applies leaves
    # int(308,357,177,017 × f) − 61,181,809,132 − 13,440,920,837 (the pools' shortfall above, as measured);
    # typed, it is × 0.85 on ROCm: 0.91 → 0.7735: 238,514,276,422 − 74,622,729,969 = 163,891,546,453 B =
    # 1,667,191 tokens: 40 requests; 0.92 → 0.782: 241,135,312,427 − 74,622,729,969 = 166,512,582,458 B =
    # 1,693,853 tokens: 41.
    setting = found["mem_fraction_static"]
    assert setting.value == 0.92 and "0.782" in setting.how
    assert found["newest"].value is None  # the log tells no release: 0.5.23's rules are already the newest


# -- the GPU -----------------------------------------------------------------------------------------

def test_without_a_gpu_there_is_no_prediction_and_the_note_says_why():
    explained = hfkv.explain_log(R04, model=QWEN3_14B)
    assert not rows(explained) and not explained.answers
    assert any("give --gpu" in note for note in explained.notes)


def test_the_gpu_the_log_lists_is_the_gpu():
    # L020's nvidia-smi listing "0 NVIDIA A100-SXM4-80GB" (an HPC guide's MiniMax-M2.7 start, verbatim).
    preset, how = gpu_for(parse_log("0 NVIDIA A100-SXM4-80GB\nGPU KV cache size: 244,576 tokens\n"), "L40S-48GB")
    assert preset.name == "A100-SXM-80GB" and "GPU listing" in how


def test_the_cuda_total_the_log_prints_is_the_total():
    # vLLM's post-capture summary as a public vLLM 0.11 log printed it (2 × H200, TP 2): the total is 139.81 GiB.
    line = ("(Worker_TP0 pid=1806413) INFO 10-23 15:14:56 [gpu_worker.py:391] Free memory on device (139.21/139.81 "
            "GiB) on startup. Desired GPU memory utilization is (0.9, 125.83 GiB). Actual usage is 74.28 GiB for "
            "weight, 5.58 GiB for peak activation, 1.38 GiB for non-torch memory, and 2.37 GiB for CUDAGraph memory.")
    parsed = parse_log(line)
    alone, how = gpu_for(parsed)
    assert alone.cuda_total_bytes == 150_119_844_413 and "139.81 GiB" in how  # 139.81 × 2³⁰ = 150,119,844,413.44
    named, how = gpu_for(parsed, "H200-141GB")
    assert named.name == "H200-141GB" and named.cuda_total_bytes == 150_119_844_413 and "--gpu" in how
    # requested = ceil(150,119,844,413 × 0.9) = 135,107,859,972 B: 125.83 GiB as printed (± 0.005 GiB × 0.9 of the total's
    # rounding).
    assert abs(135_107_859_972 - parsed.value("requested_bytes")) < 0.01 * GIB


def test_an_unknown_gpu_is_refused():
    with pytest.raises(UsageError):
        with_options(hfkv.explain_log(R04, model=QWEN3_14B), gpu="no-such-gpu")
