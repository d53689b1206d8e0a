"""SGLang 0.5.23 mode: whether it serves the model (``support``, ``fallback``), how it reads the config
(``config``), the attention backend and page size (``backend``), the pools, each owning its cell and
sizing (``default_pool``, ``swa_pool``, ``mamba_pool``, ``dsv4``; what they share in ``pools``, the
budget path in ``budget``), what SGLang knows per architecture and model type (``facts`` over the
version's tables, looked up through ``registry``; ``tablegen`` writes them), and the start-up replay
that ties them together (``startup``)."""

from hfkv.engines.sglang.startup import simulate
from hfkv.engines.sglang.support import check_layout

__all__ = ["check_layout", "simulate"]
