"""The layer specs and the accounting core, on hand-built layers (no config, no mapper)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings, strategies as st

from hfkv import Options, inspect_config
from hfkv.model import accounting as acc
from hfkv.model.dtypes import Precision
from hfkv.model.specs import (
    ChunkedLocal, CompressedKV, FullAttention, IndexerKeys, LayerSpec, Layout, LinearAttentionState, MambaState,
    MLALatent, ShortConvState, SlidingWindow,
)

from _helpers import FIXTURES, report


# -- entry widths ---------------------------------------------------------------------------------


BF16 = Precision(kv="bf16")

FP8 = Precision(kv="fp8")


def test_gqa_entry_bytes():
    part = FullAttention(kv_heads=8, head_dim=128)
    assert part.entry_bytes(BF16) == 4096  # 2 × 8 × 128 × 2
    assert part.entry_bytes(FP8) == 2048  # 2 × 8 × 128 × 1
    assert part.entry_bytes(Precision(kv="fp4")) == 1024  # 2 × 8 × 128 × 0.5


def test_asymmetric_k_and_v_heads():
    part = FullAttention(kv_heads=4, head_dim=192, v_head_dim=128)
    assert part.entry_bytes(BF16) == 2560  # 4 × (192 + 128) × 2


def test_tp_splits_kv_heads_then_replicates():
    part = FullAttention(kv_heads=4, head_dim=128)
    assert part.entry_bytes(BF16, tp=2) == 1024  # 2 heads × 2 × 128 × 2
    assert part.entry_bytes(BF16, tp=4) == 512  # 1 head × 2 × 128 × 2
    assert part.entry_bytes(BF16, tp=8) == 512  # past TP = K: max(1, 4 // 8) = 1 head, replicated


def test_mla_latent_bf16_fp8_and_replicated():
    part = MLALatent(kv_lora_rank=512, rope_dim=64)
    assert part.entry_bytes(BF16) == 1152  # (512 + 64) × 2
    assert part.entry_bytes(FP8) == 656  # 512 × 1 + 64 × 2 + (512 / 128) × 4
    assert part.entry_bytes(Precision(kv="fp4")) == 288  # (512 + 64) × 0.5
    assert part.entry_bytes(BF16, tp=8) == 1152  # the latent has no head axis: every rank holds it


def test_indexer_key_bytes():
    part = IndexerKeys(head_dim=128)
    assert part.entry_bytes(BF16) == 132  # default indexer dtype fp8: 128 × 1 + (128 / 128) × 4
    assert part.entry_bytes(Precision(indexer="fp4")) == 68  # 128 × 0.5 + 4
    assert part.entry_bytes(Precision(indexer="bf16")) == 256  # 128 × 2, no scales


# -- entries and memory ---------------------------------------------------------------------------


def test_window_and_chunk_entries():
    sw = SlidingWindow(kv_heads=8, head_dim=64, window=128)
    assert [sw.entries(s) for s in (1, 128, 129, 10**6)] == [1, 128, 128, 128]
    ch = ChunkedLocal(kv_heads=8, head_dim=128, chunk=8192)
    assert ch.entries(20000) == 8192


def test_compressed_entries_floor():
    part = CompressedKV(head_dim=512, rope_dim=64, ratio=128)
    assert part.entries(127) == 0
    assert part.entries(255) == 1  # floor(255 / 128)
    assert part.entry_bytes(BF16) == 1024  # (448 + 64) × 2


def layer(i, *parts, kind="x"):
    return LayerSpec(index=i, kind=kind, parts=parts)


def test_shared_layer_owns_nothing_but_reads_the_source():
    part = FullAttention(kv_heads=1, head_dim=256, source_layer=14)
    assert part.copies == 0
    assert part.memory(4096, BF16) == 0
    assert part.read_bytes(4096, BF16) == 4096 * 1024  # S × 2 × 1 × 256 × 2
    spec = layer(20, part)
    assert spec.copies == 0 and spec.source_layer == 14


def test_gdn_state_and_tp_split():
    gdn = LinearAttentionState(variant="gdn", num_qk_heads=16, num_v_heads=32, head_k_dim=128, head_v_dim=128, conv_kernel=4)
    # recurrent 32 × 128 × 128 × 4 = 2097152; conv 3 × (32 × 128 + 2 × 16 × 128) × 2 = 49152
    assert gdn.state_bytes(BF16) == 2097152 + 49152
    # TP 2: 16 v heads, 8 qk heads → 16 × 128 × 128 × 4 + 3 × (16 × 128 + 2 × 8 × 128) × 2 = 1048576 + 24576
    assert gdn.state_bytes(BF16, tp=2) == 1048576 + 24576
    assert gdn.entries(10**6) == 0
    assert gdn.read_bytes(10**6, BF16) == gdn.state_bytes(BF16)  # r = C


def test_kda_matches_the_reference_formula():
    kda = LinearAttentionState(variant="kda", num_qk_heads=32, num_v_heads=32, head_k_dim=128, head_v_dim=128, conv_kernel=4)
    # C_KDA = N·H²·e_s + 3·(w − 1)·N·H·e_conv = 32 × 128² × 4 + 3 × 3 × 32 × 128 × 2 = 2097152 + 73728
    assert kda.state_bytes(BF16) == 2170880


def test_mamba2_and_mamba1_state():
    m2 = MambaState(version=2, num_heads=128, head_dim=64, state_size=128, n_groups=8, conv_kernel=4)
    # ssm 128 × 64 × 128 × 4 = 4194304; conv 3 × (128 × 64 + 2 × 8 × 128) × 2 = 3 × 10240 × 2 = 61440
    assert m2.state_bytes(BF16) == 4194304 + 61440
    # TP 16: heads 8, groups ceil(8 / 16) = 1 → 8 × 64 × 128 × 4 + 3 × (512 + 2 × 128) × 2 = 262144 + 4608
    assert m2.state_bytes(BF16, tp=16) == 262144 + 4608
    m1 = MambaState(version=1, num_heads=5120, head_dim=1, state_size=16, n_groups=0, conv_kernel=4)
    # ssm 5120 × 16 × 4 = 327680; conv 3 × 5120 × 2 = 30720
    assert m1.state_bytes(BF16) == 327680 + 30720


def test_short_conv_state():
    conv = ShortConvState(dim=2048, conv_kernel=3)
    assert conv.state_bytes(BF16) == 8192  # (3 − 1) × 2048 × 2


# -- the core ---------------------------------------------------------------------------------------


def hybrid():
    """2 full GQA layers, 2 sliding (W = 128), 1 GDN layer."""
    full = FullAttention(kv_heads=8, head_dim=64)  # E = 2 × 8 × 64 × 2 = 2048
    sw = SlidingWindow(kv_heads=8, head_dim=64, window=128)
    gdn = LinearAttentionState(variant="gdn", num_qk_heads=2, num_v_heads=4, head_k_dim=64, head_v_dim=64, conv_kernel=4)
    # C = 4 × 64 × 64 × 4 + 3 × (4 × 64 + 2 × 2 × 64) × 2 = 65536 + 3072 = 68608
    return [layer(0, full), layer(1, sw), layer(2, full), layer(3, sw), layer(4, gdn)]


def test_alpha_gamma_crossover():
    layers = hybrid()
    assert acc.alpha(layers, BF16) == 4096  # 2 full layers × 2048
    assert acc.gamma(layers, BF16) == 2 * 128 * 2048 + 68608  # windows full + GDN state = 592896
    assert acc.crossover(Fraction(4096), Fraction(592896)) == Fraction(592896, 4096)
    assert acc.crossover(Fraction(0), Fraction(5)) is None


def test_exact_memory_with_mins():
    layers = hybrid()
    # S = 100 < W: 2 × 100 × 2048 (full) + 2 × 100 × 2048 (sliding) + 68608
    assert acc.request_bytes(layers, 100, BF16) == 409600 + 409600 + 68608
    # S = 1000 > W: 2 × 1000 × 2048 + 2 × 128 × 2048 + 68608 = α·S + γ exactly
    assert acc.request_bytes(layers, 1000, BF16) == 4096 * 1000 + 592896


def test_compressed_alpha_is_fractional_and_exact():
    layers = [layer(0, CompressedKV(head_dim=512, rope_dim=64, ratio=128))]
    assert acc.alpha(layers, Precision(kv="fp4")) == Fraction(256, 128)  # 512 × 0.5 / 128 = 2
    layers = [layer(0, IndexerKeys(head_dim=128, ratio=4))]
    assert acc.alpha(layers, BF16) == 33  # 132 / 4
    assert acc.as_number(Fraction(1156, 4)) == 289 and acc.as_number(Fraction(3, 2)) == 1.5


def test_dsa_reads_topk_latents_and_all_indexer_keys():
    spec = layer(0, MLALatent(kv_lora_rank=512, rope_dim=64, topk=2048), IndexerKeys(head_dim=128))
    # S = 8192: min(8192, 2048) × 1152 + 8192 × 132 = 2359296 + 1081344
    assert spec.read_bytes(8192, BF16) == 3440640
    assert spec.memory(8192, BF16) == 8192 * (1152 + 132)


def test_max_concurrency_and_bounds():
    assert acc.max_concurrency(1000, Fraction(300)) == 3
    assert acc.max_concurrency(1000, Fraction(0)) is None
    budget = 80 * 2**30
    per = acc.request_bytes(hybrid(), 32768, BF16)
    b = acc.max_concurrency(budget, per)
    assert b * per <= budget < (b + 1) * per


def test_max_context_binary_search():
    layers = hybrid()
    budget, batch = 10 * 2**30, 4
    s = acc.max_context(layers, budget, batch, BF16)
    # largest S with 4 × (4096·S + 592896) ≤ 10 GiB → S = floor((10 × 2^30 / 4 − 592896) / 4096) = 655215
    assert s == (10 * 2**30 // 4 - 592896) // 4096 == 655215
    assert acc.max_context(layers, 10, 1, BF16) == 0  # not even one token fits
    windowed = [layer(0, SlidingWindow(kv_heads=1, head_dim=64, window=64))]
    assert acc.max_context(windowed, 2**30, 1, BF16) is None  # memory stops growing: any context fits


def test_state_copies_for_prefix_cache_and_speculation():
    state = acc.recurrent_state_bytes(hybrid(), BF16)
    assert state == 68608  # only the GDN layer's state is recurrent
    assert acc.prefix_cache_extra(state, 10000, 4096) == 2 * 68608  # floor(10000 / 4096) = 2 snapshots
    assert acc.speculative_extra(state, 3) == 3 * 68608
    with pytest.raises(ValueError):
        acc.prefix_cache_extra(state, 1, 0)


def test_equivalent_tokens():
    # S_eq = N·H²·e_s / (2·K·H·e): G = 4, H = 128, e_s = 4, e = 2 → G·H = 512
    state = Fraction(16 * 128 * 128 * 4)
    entry = Fraction(2 * 4 * 128 * 2)
    assert acc.equivalent_tokens(state, entry) == 512


def test_memory_is_non_decreasing_and_linear_in_batch():
    layers = hybrid() + [layer(5, CompressedKV(head_dim=512, rope_dim=64, ratio=4)), layer(6, ShortConvState(dim=64, conv_kernel=3))]
    previous = Fraction(-1)
    for s in range(0, 600, 7):
        m = acc.request_bytes(layers, s, BF16)
        assert m >= previous
        previous = m


# -- equal parts by value, terms computed once --------------------------------------------------------


def v4_like_stack():
    """3 SWA, 20 CSA and 20 HCA layers, every layer with its own (equal) part objects, as V4's mapper builds."""
    def window():
        return MLALatent(kv_lora_rank=448, rope_dim=64, window=128)

    swa = [layer(i, window(), kind="swa") for i in range(3)]
    csa = [layer(3 + i, window(), CompressedKV(head_dim=512, rope_dim=64, ratio=4, topk=512, ring_slots=8, ring_factor=2),
                 IndexerKeys(head_dim=128, ratio=4, ring_slots=8, ring_factor=4), kind="csa") for i in range(20)]
    hca = [layer(23 + i, window(), CompressedKV(head_dim=512, rope_dim=64, ratio=128, ring_slots=128, ring_factor=2),
                 kind="hca") for i in range(20)]
    return swa + csa + hca


def test_equal_parts_built_apart_are_one_group():
    a, b = FullAttention(kv_heads=8, head_dim=128), FullAttention(kv_heads=8, head_dim=128)
    assert a is not b and a == b and hash(a) == hash(b)
    assert [n for _, n in acc.group([layer(0, a), layer(1, b)])] == [2]
    assert len(acc.group(v4_like_stack())) == 3  # 43 layers, 3 distinct storages


def test_v4_like_figures_by_hand():
    stack = v4_like_stack()
    # S = 10001, bf16 entries (448 + 64) × 2 = 1024 B, window n = 128; fp8 indexer key 128 + 4 = 132 B.
    # SWA: 128 × 1024 = 131072
    # CSA: 131072 + (10001 // 4 = 2500) × 1024 + ring 8 × 2 × 512 × 4 + 2500 × 132 + ring 8 × 4 × 128 × 4
    #    = 131072 + 2560000 + 32768 + 330000 + 16384 = 3070224
    # HCA: 131072 + (10001 // 128 = 78) × 1024 + ring 128 × 2 × 512 × 4 = 131072 + 79872 + 524288 = 735232
    assert acc.request_bytes(stack, 10001, BF16) == 3 * 131072 + 20 * 3070224 + 20 * 735232 == 76502336
    # reads: CSA top-512 compressed entries and every indexer key, no rings; HCA every compressed entry
    # CSA: 131072 + 512 × 1024 + 2500 × 132 = 985360; HCA: 131072 + 79872 = 210944
    assert acc.read_bytes(stack, 10001, BF16) == 3 * 131072 + 20 * 985360 + 20 * 210944 == 24319296
    # α = 20 × (1024/4 + 132/4) + 20 × 1024/128 = 20 × 289 + 20 × 8 = 5940
    assert acc.alpha(stack, BF16) == 5940
    # γ = 3 × 131072 + 20 × (131072 + 32768 + 16384) + 20 × (131072 + 524288) = 17104896
    assert acc.gamma(stack, BF16) == 17104896


def test_many_contexts_equal_the_per_layer_sums_on_every_fixture():
    """The grouped terms give exactly M(S) = Σ_l M_l(S) and r(S) = Σ_l r_l(S), summed layer by layer."""
    import json
    from pathlib import Path

    from hfkv import HfkvError, inspect_config

    sizes = [1, 2, 3, 127, 128, 129, 511, 512, 513, 4095, 4096, 4097, 10001, 131072, 131073, 1 << 20]
    fixtures = sorted((Path(__file__).resolve().parents[2] / "fixtures").glob("*/config.json"))
    checked = 0
    for path in fixtures:
        try:
            report = inspect_config(json.loads(path.read_text()), model=path.parent.name)
        except HfkvError:
            continue
        layers = report.layer_specs
        for p, tp in ((BF16, 1), (Precision(kv="fp4", indexer="fp4"), 8), (FP8, 3)):
            costs = acc.costs(layers, p, tp)
            assert costs.memory_at(sizes) == [sum(lay.memory(S, p, tp) for lay in layers) for S in sizes], path
            assert costs.read_at(sizes) == [sum(lay.read_bytes(S, p, tp) for lay in layers) for S in sizes], path
            assert costs.alpha == sum(lay.slope(p, tp) for lay in layers)
            assert costs.gamma == sum(lay.intercept(p, tp) for lay in layers)
        checked += 1
    assert checked >= 80, checked


# -- part shapes are checked when built -----------------------------------------------------------------


def test_part_sizes_are_checked_with_a_one_line_message():
    from hfkv.model.specs import ShapeError

    with pytest.raises(ShapeError, match=r"FullAttention.kv_heads must be ≥ 1, not 0"):
        FullAttention(kv_heads=0, head_dim=128)
    with pytest.raises(ValueError, match="must be an integer"):
        FullAttention(kv_heads=8, head_dim=12.5)
    assert FullAttention(kv_heads=8.0, head_dim="128").head_dim == 128  # whole numbers as JSON may spell them
    with pytest.raises(ShapeError, match=r"^MambaState.version must be ≤ 2, not 3$"):
        MambaState(version=3, num_heads=1, head_dim=1, state_size=1, conv_kernel=4)
    with pytest.raises(ShapeError, match=r"^FullAttention.heads is not a field"):
        FullAttention(kv_heads=8, head_dim=128, heads=32)  # a misspelt field is refused, not ignored


def test_parts_as_dicts_are_validated_by_kind_with_one_line_naming_where():
    from hfkv.model.specs import ShapeError

    spec = LayerSpec(index=3, kind="full", parts=[{"kind": "full", "kv_heads": 8, "head_dim": 128}])
    assert spec.parts == (FullAttention(kv_heads=8, head_dim=128),) and type(spec.parts) is tuple
    with pytest.raises(ShapeError) as err:
        LayerSpec(index=3, kind="full", parts=[{"kind": "full", "kv_heads": 0, "head_dim": 128}])
    assert str(err.value) == "LayerSpec.parts[0] (FullAttention.kv_heads must be ≥ 1, not 0)"
    with pytest.raises(ShapeError, match=r"^LayerSpec.parts\[0\] must be a part \(full, sliding, .*, not 'lstm'"):
        LayerSpec(index=0, kind="x", parts=["lstm"])
    with pytest.raises(ShapeError, match=r"^LayerSpec.index must be ≥ 0, not -1$"):
        LayerSpec(index=-1, kind="x")


@pytest.mark.parametrize("build, message", [
    (lambda: LayerSpec(index=0, kind="full", parts=[{"kind": "full", "kv_heads": 0, "head_dim": 128}]),
     "invalid layer shape: LayerSpec.parts[0] (FullAttention.kv_heads must be ≥ 1, not 0)"),
    (lambda: LayerSpec.model_validate({"index": -1, "kind": "full"}),  # pydantic's ValidationError path
     "invalid layer shape: LayerSpec.index must be ≥ 0, not -1"),
])
def test_a_mapper_building_a_bad_spec_is_one_config_error_line(monkeypatch, build, message):
    import hfkv.inspection
    from hfkv import ConfigError, inspect_config

    def mapper(view):
        return Layout(layers=[build()])

    mapper.name, mapper.family = "test.bad", "test"
    monkeypatch.setattr(hfkv.inspection, "resolve", lambda view: mapper)
    with pytest.raises(ConfigError) as err:
        inspect_config({"model_type": "llama"}, model="bad-model")
    assert str(err.value) == f"bad-model: {message}"


def test_model_copy_validates_its_update():
    from hfkv.model.specs import ShapeError

    part = FullAttention(kv_heads=8, head_dim=128)
    wider = part.model_copy(update={"head_dim": 256.0})
    assert type(wider.head_dim) is int and wider.entry_bytes(BF16) == 8192  # 2 × 8 × 256 × 2
    with pytest.raises(ShapeError, match="kv_heads must be ≥ 1, not 0"):
        part.model_copy(update={"kv_heads": 0})
    spec = LayerSpec(index=0, kind="full", parts=(part,)).model_copy(update={"parts": [wider]})
    assert spec.parts == (wider,) and hash(spec)  # a list given to the copy is the tuple the specs hash


# -- reports on implausible or enormous configs ---------------------------------------------------------


LLAMA_LIKE = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32,
              "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
              "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}


def test_implausible_head_dim_is_warned_not_printed_as_exact():
    from hfkv import inspect_config

    report = inspect_config(dict(LLAMA_LIKE, head_dim=2**40))
    assert report.alpha_bytes_per_token == 32 * 8 * 2 * 2**40 * 2  # what the config says, as written ...
    assert any("implausible head_dim = 1,099,511,627,776" in w for w in report.warnings)  # ... but flagged
    assert any("implausible α" in w for w in report.warnings)
    assert not [w for w in inspect_config(LLAMA_LIKE).warnings if "implausible" in w]


def test_kv_heads_that_cannot_serve_the_query_heads_are_warned():
    from hfkv import inspect_config

    report = inspect_config(dict(LLAMA_LIKE, num_key_value_heads=7))
    assert any("7 KV heads do not divide num_attention_heads = 32" in w for w in report.warnings)
    assert not [w for w in inspect_config(LLAMA_LIKE).warnings if "num_attention_heads" in w]


def test_a_claimed_depth_of_100000_layers_gives_a_bounded_report():
    import json

    from hfkv import inspect_config
    from hfkv.model.report import MAX_LISTED_LAYERS

    report = inspect_config(dict(LLAMA_LIKE, num_hidden_layers=100_000))
    data = report.to_dict()
    assert data["num_layers"] == 100_000 and len(data["layers"]) == MAX_LISTED_LAYERS == 1024
    assert data["groups"][0]["layers"] == 100_000 and len(data["groups"][0]["indices"]) == 1024
    assert data["alpha_bytes_per_token"] == 100_000 * 8 * 2 * 128 * 2  # every layer counted: 409,600,000
    assert len(json.dumps(data, indent=2)) < 1_000_000  # was 26-44 MB: the listing is bounded
    assert any("layers[] lists the first 1,024" in note for note in data["notes"])


def test_bad_options_are_one_line_usage_errors_naming_the_option():
    from hfkv import UsageError, inspect_config

    for knobs, text in (
        ({"contexts": (10**13,)}, "contexts (--context): 10,000,000,000,000 tokens is past 1,099,511,627,776 (2^40)"),
        ({"tensor_parallel_size": 0}, "tensor_parallel_size (--tensor-parallel-size): 0 is below the minimum 1"),
        ({"budget_bytes": "lots"}, "budget_bytes (--budget): a whole number, not 'lots'"),
        ({"tensorparallel": 8}, "unknown option(s) tensorparallel"),
        ({"kv_cache_dtype": 3}, "kv_cache_dtype (--kv-cache-dtype): a dtype name, not 3"),
        ({"contexts": 4096}, "contexts (--context): a list of token counts, not 4096"),
        ({"contexts": ("20000000000000",)}, "contexts (--context): input should be less than or equal to"),
    ):
        with pytest.raises(UsageError) as err:
            inspect_config(LLAMA_LIKE, **knobs)
        assert text in str(err.value) and "\n" not in str(err.value), str(err.value)
        assert "validation error" not in str(err.value)
    assert inspect_config(LLAMA_LIKE, contexts=[4096.0], tensor_parallel_size=2.0).contexts[0].tokens == 4096


# -- dense ------------------------------------------------------------------------------------------


def test_tp8_on_four_kv_heads_replicates():
    rep = report("Qwen__Qwen2-7B-Instruct", tensor_parallel_size=8)
    # head_dim 3584 / 28 = 128; per GPU max(1, 4 // 8) = 1 head: 28 × 2 × 1 × 128 × 2
    assert rep.alpha_bytes_per_token == 14336
    assert report("Qwen__Qwen2-7B-Instruct", tensor_parallel_size=2).alpha_bytes_per_token == 28672  # 2 heads


# -- budget questions ------------------------------------------------------------------------------------


def test_budget_and_batch():
    budget = 60 * 2**30
    rep = report("deepseek-ai__DeepSeek-V3.2", budget_bytes=budget, batch=32, contexts=(4096, 131072))
    ctx = {c.tokens: c for c in rep.contexts}
    # 4096 × 78324 = 320815104 B per request → floor(64424509440 / 320815104) = 200
    assert ctx[4096].kv_bytes_per_request == 320815104 and ctx[4096].max_concurrency == 200
    # 32 requests: S = floor(64424509440 / 32 / 78324) = floor(2013265920 / 78324) = 25704
    assert rep.max_context_for_batch == 25704


# -- invariants of the core -------------------------------------------------------------------------


P = Precision()

parts = st.one_of(
    st.builds(FullAttention, kv_heads=st.integers(1, 64), head_dim=st.integers(1, 512)),
    st.builds(SlidingWindow, kv_heads=st.integers(1, 64), head_dim=st.integers(1, 512), window=st.integers(1, 8192)),
    st.builds(MLALatent, kv_lora_rank=st.integers(1, 1024), rope_dim=st.integers(0, 128),
              topk=st.one_of(st.none(), st.integers(1, 4096))),
    st.builds(IndexerKeys, head_dim=st.integers(1, 256), ratio=st.integers(1, 128), ring_slots=st.integers(0, 256)),
    st.builds(CompressedKV, head_dim=st.integers(64, 1024), rope_dim=st.just(64), ratio=st.integers(1, 256),
              ring_slots=st.integers(0, 256)),
    st.builds(LinearAttentionState, variant=st.just("gdn"), num_qk_heads=st.integers(0, 32), num_v_heads=st.integers(1, 64),
              head_k_dim=st.integers(1, 256), head_v_dim=st.integers(1, 256), conv_kernel=st.integers(1, 8)),
    st.builds(MambaState, version=st.just(2), num_heads=st.integers(1, 256), head_dim=st.integers(1, 128),
              state_size=st.integers(1, 256), n_groups=st.integers(0, 16), conv_kernel=st.integers(1, 8)),
    st.builds(ShortConvState, dim=st.integers(1, 8192), conv_kernel=st.integers(1, 8)),
)

layer_lists = st.lists(st.lists(parts, min_size=1, max_size=3), min_size=1, max_size=6).map(
    lambda groups: [LayerSpec(index=i, kind="x", parts=tuple(g)) for i, g in enumerate(groups)]
)


@settings(max_examples=200, deadline=None)
@given(layers=layer_lists, s=st.integers(0, 10**6), ds=st.integers(0, 10**5), batch=st.integers(1, 64))
def test_memory_invariants(layers, s, ds, batch):
    m = acc.request_bytes(layers, s, P)
    assert acc.request_bytes(layers, s + ds, P) >= m  # non-decreasing in S
    assert acc.alpha(layers, P) >= 0 and acc.gamma(layers, P) >= 0
    assert batch * m == sum((acc.request_bytes(layers, s, P) for _ in range(batch)), Fraction(0))  # linear in B
    # past every window M(S) never exceeds the affine bound α·S + γ (floors only round down)
    assert m <= acc.alpha(layers, P) * max(s, 1) + acc.gamma(layers, P) or s == 0


@settings(max_examples=200, deadline=None)
@given(layers=layer_lists, s=st.integers(1, 10**6), budget=st.integers(1, 2**40))
def test_max_concurrency_brackets_the_budget(layers, s, budget):
    m = acc.request_bytes(layers, s, P)
    b = acc.max_concurrency(budget, m)
    if b is not None:
        assert b * m <= budget < (b + 1) * m


@settings(max_examples=200, deadline=None)
@given(layers=layer_lists, s=st.integers(1, 10**6), tp=st.integers(1, 16))
def test_per_gpu_times_tp_covers_the_total(layers, s, tp):
    # replicated parts keep everything on each rank; split parts round up: per-GPU × TP ≥ total.
    # Engines only accept TP dividing the KV heads or the reverse; other layouts get a warning instead.
    heads = [p.kv_heads for layer in layers for p in layer.parts if hasattr(p, "kv_heads")]
    assume(all(k % tp == 0 or tp % k == 0 for k in heads))
    assert acc.request_bytes(layers, s, P, tp) * tp >= acc.request_bytes(layers, s, P)


@settings(max_examples=100, deadline=None)
@given(layers=layer_lists, budget=st.integers(1, 2**36), batch=st.integers(1, 16))
def test_max_context_is_the_largest_that_fits(layers, budget, batch):
    s = acc.max_context(layers, budget, batch, P)
    if s is None:
        return
    if s > 0:
        assert batch * acc.request_bytes(layers, s, P) <= budget
    assert batch * acc.request_bytes(layers, s + 1, P) > budget


CONFIGS = {p.parent.name: json.loads(p.read_text()) for p in sorted(FIXTURES.glob("*/config.json"))}


def test_tp_that_does_not_divide_the_kv_heads_warns():
    report = inspect_config(CONFIGS["meta-llama__Meta-Llama-3.1-8B"], options=Options(tensor_parallel_size=3))
    assert any("TP 3" in w and "8 KV heads" in w for w in report.warnings)
