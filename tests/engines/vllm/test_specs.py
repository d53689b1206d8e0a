"""vLLM 0.33.0's KV-cache spec kinds (``hfkv/engines/vllm/specs.py``): each owns its page bytes and its
blocks per request, as ``vllm/v1/kv_cache_interface.py`` has them (``max_memory_usage_bytes`` / page size;
line numbers of the 0.33.0 wheel), and the groups and DeepSeek V4's packed pages use those rules, never
their own. Expected values are worked out by hand from vLLM's formulas."""

from __future__ import annotations

from fractions import Fraction

import pytest

from hfkv.engines.vllm import dsv4
from hfkv.engines.vllm.groups import Group, make_groups
from hfkv.engines.vllm.specs import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    MambaSpec,
    MLAAttentionSpec,
    RequestPlan,
    SlidingWindowMLASpec,
    SlidingWindowSpec,
)

PLAN = RequestPlan(in_flight=2 * 8192, state_blocks=2, align_mode=True)


def test_full_attention_holds_every_token():
    # kv_cache_interface.py:648 cdiv(max_model_len, block_size) pages
    spec = FullAttentionSpec(token_bytes=Fraction(2048), head_dim=128)
    assert spec.page_bytes(16) == 16 * 2048
    assert spec.blocks_per_request(4096, 16, PLAN) == 256
    assert spec.blocks_per_request(4097, 16, PLAN) == 257


def test_sliding_window_holds_the_window_and_the_tokens_in_flight_plus_one_block():
    # :937-944 num_tokens = min(sliding_window - 1 + max_in_flight_tokens, max_model_len); cdiv(…) + 1
    spec = SlidingWindowSpec(token_bytes=Fraction(2048), window=128, head_dim=64)
    assert spec.blocks_per_request(131072, 16, PLAN) == -(-(127 + 16384) // 16) + 1 == 1033
    assert spec.blocks_per_request(100, 16, PLAN) == 7 + 1  # a short request: its own length
    # a window covering the whole request still costs the extra block (Phi-3.5-mini: 257 at 4,096)
    wide = SlidingWindowSpec(token_bytes=Fraction(2048), window=262144)
    assert wide.blocks_per_request(4096, 16, RequestPlan(in_flight=16384, state_blocks=2, align_mode=True)) == 257


def test_chunked_local_attention_holds_the_chunk_and_the_tokens_in_flight():
    # :878-881 num_tokens = min(attention_chunk_size + max_in_flight_tokens, max_model_len); cdiv(…)
    spec = ChunkedLocalAttentionSpec(token_bytes=Fraction(1024), window=8192)
    assert spec.blocks_per_request(1 << 20, 16, PLAN) == (8192 + 16384) // 16
    assert spec.blocks_per_request(1000, 16, PLAN) == 63


def test_mamba_state_holds_its_blocks_and_a_checkpoint_only_in_align_mode():
    # :1135-1141 MambaSpec: 2 + speculative + prefill-checkpoint pages in align mode, else 1 + speculative
    spec = MambaSpec(state_bytes=Fraction(2_146_304), checkpoint_blocks=1, checkpoint_alignment=64)
    assert spec.page_bytes(576) == spec.page_bytes(16) == 2_146_304  # one state per page, whatever the block
    assert spec.blocks_per_request(1 << 20, 576, PLAN) == 3
    none_mode = RequestPlan(in_flight=16384, state_blocks=1, align_mode=False)
    assert spec.blocks_per_request(1 << 20, 576, none_mode) == 1


def test_mla_kinds_are_the_attention_rules_with_the_mla_flag():
    full = MLAAttentionSpec(token_bytes=Fraction(1152))
    sliding = SlidingWindowMLASpec(token_bytes=Fraction(1152), window=512)
    assert full.mla and sliding.mla and not FullAttentionSpec(token_bytes=Fraction(1)).mla
    assert full.blocks_per_request(4096, 64, PLAN) == 64
    assert sliding.blocks_per_request(4096, 64, PLAN) == 64 + 1  # min(511 + 16384, 4096) / 64, + 1
    assert sliding.as_full() == full  # what the hybrid manager's fallback allocates instead


def test_a_local_spec_promoted_keeps_its_bytes_and_head_size():
    spec = ChunkedLocalAttentionSpec(token_bytes=Fraction(1024), window=8192, head_dim=128)
    assert spec.as_full() == FullAttentionSpec(token_bytes=Fraction(1024), head_dim=128)


def test_a_group_counts_blocks_with_its_specs_rule_at_the_group_block():
    spec = SlidingWindowSpec(token_bytes=Fraction(2048), window=128)
    group = Group(spec=spec, layers=18, padding=0, block_size=32, block_bytes=Fraction(18 * 32 * 2048))
    assert group.blocks_per_request(131072, PLAN) == spec.blocks_per_request(131072, 32, PLAN)


def test_mixed_pages_unify_with_larger_blocks_for_smaller_pages():
    full = FullAttentionSpec(token_bytes=Fraction(4096))
    sliding = SlidingWindowSpec(token_bytes=Fraction(2048), window=128)
    groups = make_groups([full] * 2 + [sliding] * 2, 16, [])
    assert {(g.spec.kind, g.block_size) for g in groups} == {("full", 16), ("sliding", 32)}
    assert {g.block_bytes for g in groups} == {2 * 16 * 4096}


@pytest.mark.parametrize("length", [1, 64, 65, 4096, 131072])
def test_deepseek_v4_pages_count_blocks_with_the_shared_rules(length):
    """A packed page's blocks are its spec's at the page's own block; only the page bytes are DSV4's
    (rounded up to the 576 B fp8_ds_mla alignment)."""
    swa = dsv4.PackedPage(SlidingWindowMLASpec(token_bytes=Fraction(dsv4.FP8_DS_MLA_STATE), window=128),
                          dsv4.SWA_BLOCK)
    compressed = dsv4.PackedPage(MLAAttentionSpec(token_bytes=Fraction(dsv4.FP8_DS_MLA_STATE, 4)),
                                 dsv4.COMPRESSED_BLOCK)
    assert swa.page == 576 * -(-(64 * 584) // 576) == 37440
    assert compressed.page == 576 * -(-(64 * 584) // 576)  # 256 tokens / ratio 4 = 64 states
    assert swa.blocks(length, PLAN) == SlidingWindowSpec(token_bytes=Fraction(1), window=128).blocks_per_request(
        length, 64, PLAN)
    assert compressed.blocks(length, PLAN) == -(-length // 256)
