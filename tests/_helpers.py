"""Helpers shared by several test files: load a fixture, build a report, read its layers; for the engine-mode
tests, a cached report of a fixture by name (``fixture_report``, imported there as ``report``) and the
fixtures they share."""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

from click.testing import CliRunner

import hfkv
from hfkv.commands.cli import main
from hfkv.errors import HfkvError
from hfkv.inspection import inspect_config
from hfkv.model.options import Options

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
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


# -- documented configs several family tests share ------------------------------------------------------

MIMO_DOCUMENTED = {
    # documented values of XiaomiMiMo/MiMo-V2-Flash (hub form)
    "model_type": "mimo_v2_flash",
    "torch_dtype": "bfloat16",
    "num_hidden_layers": 48,
    "num_attention_heads": 64,
    "num_key_value_heads": 4,
    "head_dim": 192,
    "v_head_dim": 128,
    "swa_num_attention_heads": 64,
    "swa_num_key_value_heads": 8,
    "swa_head_dim": 192,
    "swa_v_head_dim": 128,
    "sliding_window": 128,
    "sliding_window_size": 128,
    "hybrid_layer_pattern": [0 if i == 0 or (i + 1) % 6 == 0 else 1 for i in range(48)],
}



def step_config(other: dict) -> dict:
    # Step-3.5-Flash's documented geometry: 45 layers + 3 MTP entries in layer_types, 64 heads,
    # num_attention_groups 8, head_dim 128, sliding_window 512. The pattern (full iff i % 4 == 0) is made up.
    types = ["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(45)]
    return {
        "model_type": "step3p7",
        "text_config": {
            "model_type": "step3p5",
            "torch_dtype": "bfloat16",
            "num_hidden_layers": 45,
            "num_nextn_predict_layers": 3,
            "num_attention_heads": 64,
            "num_attention_groups": 8,
            "head_dim": 128,
            "sliding_window": 512,
            "layer_types": types + ["sliding_attention"] * 3,
            "attention_other_setting": other,
        },
    }


def hfkv_process(*args: str, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(kwargs.pop("env", {}))
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    return subprocess.run([sys.executable, "-m", "hfkv", *args], text=True, timeout=120, cwd=ROOT, env=env,
                          **kwargs)


def write_list(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / "models.txt"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def one_error_line(result, code: int) -> str:
    assert result.exit_code == code, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hfkv: error: "), result.stderr
    assert "internal error" not in lines[0]
    return lines[0]


def qwen_linear(**extra) -> dict:
    """Qwen3-Next's linear_* geometry (N_qk 16, N_v 32, 128 × 128, w 4) plus ``extra``."""
    return {"linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
            "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, **extra}


def check_outcome(config, name, **options):
    try:
        report = inspect_config(config, model=name, options=Options(**options))
    except HfkvError as err:
        text = str(err)
        assert "\n" not in text and text.startswith(name), text
        return None
    data = report.to_dict()
    numbers = [data["alpha_bytes_per_token"], data["gamma_bytes_per_request"], data["recurrent_state_bytes"]]
    for ctx in data["contexts"]:
        numbers += [ctx["kv_bytes_per_request"], ctx["read_bytes_per_step"]]
    for layer in data["layers"]:
        numbers += [layer["entry_bytes"], layer["state_bytes"], layer["bytes_per_token"]]
    for value in numbers:
        assert isinstance(value, (int, float)) and math.isfinite(value) and value >= 0, (name, value)
    json.dumps(data, allow_nan=False)  # the JSON contract holds no NaN or Infinity
    return report


def run_cli(*args: str):
    """``hfkv ...`` in-process (stdout alone in ``stdout``)."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


LLAMA_FOLDER = str(FIXTURES / "meta-llama__Meta-Llama-3.1-8B")


# A small Llama: 2 layers × 2 (K, V) × 4 kv heads × 64 head_dim (512 / 8) × 2 bytes (bf16) = 2048 B per token.
SMALL_LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 512, "num_attention_heads": 8,
         "num_key_value_heads": 4, "num_hidden_layers": 2, "max_position_embeddings": 2048, "torch_dtype": "bfloat16",
         "intermediate_size": 1024, "vocab_size": 1000}


def write_named_config(folder: Path, name: str, data: dict | str | bytes) -> str:
    path = folder / name
    path.mkdir(parents=True, exist_ok=True)
    raw = data if isinstance(data, bytes) else (data if isinstance(data, str) else json.dumps(data)).encode()
    (path / "config.json").write_bytes(raw)
    return str(path)


def write_config_in(folder: Path, data: dict) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(data))
    return str(folder)


LLAMA_DICT = json.loads((FIXTURES / "meta-llama__Meta-Llama-3.1-8B" / "config.json").read_text())


LLAMA_CONFIG = load("meta-llama__Meta-Llama-3.1-8B")


HOSTILE_CONFIG = {
    "model_type": "<img src=x onerror=alert(1)>", "architectures": ["<script>alert(2)</script>"],
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 256,
    "torch_dtype": "bfloat16", "max_position_embeddings": 4096, "<svg onload=alert(3)>": 1,
}
