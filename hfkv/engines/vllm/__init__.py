"""vLLM 0.33.0 mode: the model's refusals (``models``), the attention backend and block size for the GPU
generation (``backends``), the KV-cache specs and groups (``groups``, ``dsv4``), the Transformers
modeling backend (``transformers``), and the start-up replay that ties them together (``startup``).
What vLLM does per architecture and per model type is data: the engine's tables, read by ``facts``
(and regenerated from a vLLM wheel by ``tablegen``)."""

from hfkv.engines.vllm.models import VllmRefusal, check_layout
from hfkv.engines.vllm.startup import simulate

__all__ = ["VllmRefusal", "check_layout", "simulate"]
