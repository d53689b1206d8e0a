"""Helpers shared by several test files: load a fixture, build a report, read its layers; for the engine-mode
tests, a cached report of a fixture by name (``fixture_report``, imported there as ``report``) and the
fixtures they share."""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

import hfkv
from hfkv.inspection import inspect_config
from hfkv.model.options import Options

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HUB_CONFIGS = Path(__file__).resolve().parents[2] / "shared" / "hub-configs"


WINDOW_CONFIGS = Path(__file__).resolve().parent / "oracles" / "window-configs"


def window_config(name: str) -> dict | None:
    """A config of ``tests/oracles/window-configs`` (the oracle rows' inputs, README there): written out
    whole when it is this project's (Domyn-Edge, MiMo), else an edit of a shared hub config, which is
    not copied here: ``{"edit_of": "<hub config>", "set": {"dotted.key": value}}``. None when the
    file is not there or names a hub config that is absent (no ../shared)."""
    path = WINDOW_CONFIGS / name
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    if "edit_of" not in data:
        return data
    base = HUB_CONFIGS / data["edit_of"]
    if not base.is_file():
        return None
    config = json.loads(base.read_text())
    for key, value in data["set"].items():
        *parents, last = key.split(".")
        target = config
        for part in parents:
            target = target[part]
        target[last] = value
    return config


def load(folder: str) -> dict:
    return json.loads((FIXTURES / folder / "config.json").read_text())


def report(data: str | dict, **options) -> hfkv.Report:
    """The report of fixtures/<data>/config.json (model named after the fixture), or of a copy of the
    config dict ``data`` (model "test")."""
    if isinstance(data, str):
        return inspect_config(load(data), model=data, options=Options(**options))
    return hfkv.inspect_config(copy.deepcopy(data), model="test", options=hfkv.Options(**options))


def report_bf16(data: dict, **options) -> hfkv.Report:
    """The report of the config dict ``data`` with a bf16 KV cache unless ``kv_cache_dtype`` is given."""
    options.setdefault("kv_cache_dtype", "bf16")
    return inspect_config(data, model="test", options=Options(**options))


def report_inline(data: dict | str, **options) -> hfkv.Report:
    """The report of a fixture by name, or of the config dict ``data`` as model "inline"."""
    if isinstance(data, str):
        return inspect_config(load(data), model=data, options=Options(**options))
    return inspect_config(data, model="inline", options=Options(**options))


def kinds(rep: hfkv.Report) -> list[str]:
    """The kind of each layer, in order."""
    return [layer["kind"] for layer in rep.to_dict()["layers"]]


def kind_counts(rep: hfkv.Report) -> dict[str, int]:
    """How many layers of each kind."""
    out: dict[str, int] = {}
    for layer in rep.layers:
        out[layer.kind] = out.get(layer.kind, 0) + 1
    return out


def indices(rep: hfkv.Report, kind: str) -> list[int]:
    """The indices of the layers of one kind."""
    return [layer.index for layer in rep.layers if layer.kind == kind]


def state_of(rep: hfkv.Report, index: int) -> int:
    return rep.to_dict()["layers"][index]["state_bytes"]


# -- engine-mode tests (tests/engines/) ----------------------------------------------------------------

GiB = 1 << 30

V32 = "deepseek-ai__DeepSeek-V3.2"
V3 = "deepseek-ai__DeepSeek-V3"
GPT_OSS = "openai__gpt-oss-120b"
GEMMA3 = "google__gemma-3-27b-it-from-engine-log"
QWEN3_NEXT = "Qwen__Qwen3-Next-80B-A3B-Thinking"
NEMOTRON = "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def fixture_report(name: str, **options) -> hfkv.Report:
    """The report of fixtures/<name>/config.json with the given accounting options (cached: read-only)."""
    return _fixture_report(name, tuple(sorted(options.items())))


@lru_cache(maxsize=None)
def _fixture_report(name: str, options: tuple) -> hfkv.Report:
    data = json.loads((FIXTURES / name / "config.json").read_text())
    return inspect_config(data, model=name, options=Options(**dict(options)))


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# -- HTML pages (tests/render/test_html.py, tests/web/) ------------------------------------------------

# Tags a page may hold: text, tables, lists and the SVG charts. No script, link, img, iframe, object.
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "div", "section", "h1", "h2", "p", "table", "thead", "tbody",
    "tr", "th", "td", "ul", "li", "details", "summary", "a", "code", "svg", "rect", "line", "text", "polyline",
    "polygon", "circle",
}

class Elements(HTMLParser):
    """Every start tag with its attributes, and the text, of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Elements:
    parser = Elements()
    parser.feed(page)
    return parser
