"""SGLang 0.5.23 mode: whether it serves the model (``support``, ``fallback``), how it reads the config
(``config``), the attention backend and page size (``backend``), the pools sized from a budget
(``pools``, ``dsv4``), and the start-up replay that ties them together (``startup``)."""

from hfkv.engines.sglang.startup import simulate
from hfkv.engines.sglang.support import check_layout

__all__ = ["check_layout", "simulate"]
