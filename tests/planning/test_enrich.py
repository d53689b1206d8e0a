"""The sections every command adds to a report (hfkv/planning/enrich.py): a GPU preset's engine defaults."""

from __future__ import annotations


def test_gpu_preset_sets_compute_capability_unless_the_knob_is_given():
    from hfkv.planning.enrich import gpu_defaults
    from hfkv.planning.gpus import get_gpu

    # CUDA's table: A100 8.0, H200 9.0, B200 10.0; AMD has none.
    assert (get_gpu("a100").compute_capability, get_gpu("h200").compute_capability) == ("8.0", "9.0")
    assert gpu_defaults({}, "B200:8")["compute_capability"] == "10.0"
    assert gpu_defaults({"compute_capability": "9.0"}, "B200")["compute_capability"] == "9.0"
    assert gpu_defaults({}, "MI300X") == {}  # no CUDA capability, and vLLM's batch tiers are NVIDIA's
    assert gpu_defaults({}, None) == {}


def test_gpu_preset_sets_vllms_scheduler_default():
    from hfkv.planning.enrich import gpu_defaults

    # get_batch_defaults (API server): B200 reports 183,359 MiB >= 160 GiB -> 16384; H200 143,771 MiB
    # (>= 70 GiB, not an A100) -> 8192; A100 81,920 MiB is an A100 -> 2048; L4 (23,034 MiB) -> 2048
    tokens = {g: gpu_defaults({}, g)["max_num_batched_tokens"] for g in ("B200", "H200", "A100", "L4")}
    assert tokens == {"B200": 16384, "H200": 8192, "A100": 2048, "L4": 2048}
    # and max_num_seqs 1024 on the two larger tiers, 256 below (the same function's table)
    seqs = {g: gpu_defaults({}, g)["max_num_seqs"] for g in ("B200", "H200", "A100", "L4")}
    assert seqs == {"B200": 1024, "H200": 1024, "A100": 256, "L4": 256}
    assert gpu_defaults({"max_num_batched_tokens": 4096}, "B200")["max_num_batched_tokens"] == 4096
