"""The weights lookup on the Hub (hfkv/sources/weights.py): it honours the timeout and is prefetched
with the config."""

from __future__ import annotations

import time

from hfkv.sources.hub import HubClient

from fakehub import Fault


# -- item 10: deadlines, capped waits, bounded listings ----------------------------------------------


CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512, "num_attention_heads": 8,
          "num_key_value_heads": 4, "num_hidden_layers": 2, "max_position_embeddings": 2048, "torch_dtype": "bfloat16"}


def client(hub, cache: str, **kwargs) -> HubClient:
    return HubClient(endpoint=hub.url, cache_dir=cache, **kwargs)


def test_the_weights_lookup_honours_the_timeout(fake_hub, hub_cache):
    fake_hub.add_model("org/slow-api", {"config.json": CONFIG}, safetensors={"model.safetensors": {"w": ("BF16", [4, 4])}})
    fake_hub.faults["org/slow-api"] = Fault(kind="slow", delay=3, where="api")
    started = time.monotonic()
    assert client(fake_hub, hub_cache, timeout=0.3).weights("org/slow-api") is None
    assert time.monotonic() - started < 2.5  # two tries of 0.3 s, not 2 × 3 s


def test_weights_are_prefetched_with_the_config(fake_hub, hub_cache):
    fake_hub.add_model("org/w", {"config.json": CONFIG}, safetensors={"model.safetensors": {"w": ("BF16", [64, 32])}})
    fake_hub.latency = 0.5
    hub = client(fake_hub, hub_cache, prefetch_weights=True)
    started = time.monotonic()
    hub.load_config("org/w")
    weights = hub.weights("org/w")
    took = time.monotonic() - started
    fake_hub.latency = 0.0
    # 64 × 32 = 2048 BF16 parameters, 2 bytes each = 4096 bytes.
    assert weights["total_parameters"] == 2048 and weights["weights_bytes"] == 4096
    assert took < 0.95  # the two requests of 0.5 s each went out together (one after the other: ≥ 1.0 s)
    assert sorted(e["path"] for e in fake_hub.requests("org/w")) == ["/api/models/org/w", "/org/w/resolve/main/config.json"]
