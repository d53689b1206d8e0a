"""Fill the ``tp_experts`` columns of both engines' tables from the engines' own model sources.

    ~/.cache/hfkv-sglang-oracle/bin/python tests/oracles/tp-experts.py --vllm-src DIR [--write]

DIR holds the unpacked ``vllm/`` package of vLLM 0.33.0 (the wheel unzipped); SGLang 0.5.23 is the one
installed beside the python running this. Nothing is imported or run: the sources are read with ``ast``,
with the class walk of ``sglang-tp-asserts.py`` (every class an architecture's entry class reaches
inside the engine's ``models`` package, following imports; a copy of it is pointed at vLLM's package).

Both engines' MoE blocks refuse a tensor-parallel size above the expert count while the model is built:

    if self.tp_size > config.num_experts:
        raise ValueError(f"Tensor parallel size {self.tp_size} is greater than the number of experts {...}.")

For each architecture this keeps every reached class whose ``__init__`` holds such a check (an ``if
<tp> > <experts>:`` whose body raises with "greater than the number of experts"), and writes
``<key>@<tp>:<Class>`` joined by ``,``: ``key`` the config key the experts expression reads
(``config.num_experts``, or a ``self.X`` / local name assigned from ``config.<key>`` in the same
``__init__``; ``max:<key>`` when it takes the max of a list, Ernie 4.5 VL), ``tp`` what ``self.tp_size``
holds (``tp``: the TP group's world size; ``moe_tp``: SGLang's ``get_parallel().moe_tp_size``, TP over
EP; ``?``: anything else), ``none`` when no reached class checks, ``?`` when the entry class is not
found. Classes of the entry class's own module win over classes it only reaches (Qwen3-MoE's module imports
Qwen2-MoE's block but builds its own). Without ``--write`` it prints every check it parsed.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TABLES = HERE.parents[1] / "hfkv" / "engines"
SGLANG_TSV = TABLES / "sglang" / "0.5.23.tsv"
VLLM_TSV = TABLES / "vllm" / "0.33.0.tsv"
COLUMN = "tp_experts"


def walker(package: str, models: str, root: Path | None):
    """A fresh copy of sglang-tp-asserts.py's module, walking ``package`` (``models``: its models package)."""
    spec = importlib.util.spec_from_file_location(f"walk_{package}", HERE / "sglang-tp-asserts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.PACKAGE, module.MODELS = package, models
    if root is not None:
        module.sglang_root = lambda: root
    return module


def assignment(init: ast.FunctionDef, target: str) -> ast.expr | None:
    """The value last assigned to ``target`` (``self.x`` or ``x``) in ``init``."""
    found = None
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and any(ast.unparse(t) == target for t in node.targets):
            found = node.value
        elif isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == target and node.value is not None:
            found = node.value
    return found


def config_key(init: ast.FunctionDef, expr: ast.expr, depth: int = 0) -> str | None:
    """The config key ``expr`` reads (``config.X``, ``getattr(config, "X", ...)``, or a name assigned from
    one), ``max:X`` through ``max(...)``; None when it reads something else."""
    if depth > 4:
        return None
    text = ast.unparse(expr)
    match = re.fullmatch(r"(?:self\.)?(?:config|hf_config|text_config)\.(\w+)", text)
    if match:
        return match.group(1)
    if isinstance(expr, ast.Call) and ast.unparse(expr.func) == "getattr" and len(expr.args) >= 2 \
            and isinstance(expr.args[1], ast.Constant) and re.fullmatch(r"(?:self\.)?\w*config", ast.unparse(expr.args[0])):
        return str(expr.args[1].value)
    if isinstance(expr, ast.Call) and ast.unparse(expr.func) == "max" and len(expr.args) == 1:
        inner = config_key(init, expr.args[0], depth + 1)
        return f"max:{inner}" if inner and not inner.startswith("max:") else None
    if isinstance(expr, (ast.Name, ast.Attribute)):
        value = assignment(init, text)
        return config_key(init, value, depth + 1) if value is not None else None
    return None


def tp_kind(init: ast.FunctionDef, tp: ast.expr) -> str:
    value = assignment(init, ast.unparse(tp))
    text = ast.unparse(value) if value is not None else ""
    if "moe_tp_size" in text:
        return "moe_tp"
    if re.search(r"get_tensor_model_parallel_world_size\(\)|get_parallel\(\)\.tp_size$", text):
        return "tp"
    return "?"


def checks(init: ast.FunctionDef) -> list[tuple[str, str, str]]:
    """(config key, tp kind, the test's text) for each experts check in ``init``."""
    out = []
    for node in ast.walk(init):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and isinstance(node.test.ops[0], ast.Gt)):
            continue
        raises = [n for n in node.body if isinstance(n, ast.Raise)]
        words = " ".join(str(c.value) for r in raises for c in ast.walk(r) if isinstance(c, ast.Constant))
        if "greater than" not in words or "experts" not in words:
            continue
        key = config_key(init, node.test.comparators[0]) or "?"
        out.append((key, tp_kind(init, node.test.left), ast.unparse(node.test)))
    return out


def column(walk, module: str, cls_name: str) -> tuple[str, list[str]]:
    """The cell for the entry class ``cls_name`` of ``module`` (dotted) and the checks behind it."""
    hit = walk.resolve(module, cls_name)
    if hit is None:
        return "?", []
    found = []
    for mod, cls in sorted(walk.reached(*hit), key=lambda item: item[1].name):
        init = walk.init_of(cls)
        found += [(mod, cls.name, key, tp, text) for key, tp, text in (checks(init) if init is not None else [])]
    own = [item for item in found if item[0] == hit[0]]  # the entry module's own block wins (as for tp_asserts)
    values, lines = [], []
    for mod, name, key, tp, text in own or found:
        entry = f"{key}@{tp}:{name}"
        if entry not in values:
            values.append(entry)
        lines.append(f"    {mod}.{name}: {text}  [{key}@{tp}]")
    return (",".join(values) or "none"), lines


def vllm_classes(root: Path) -> dict[str, tuple[str, str]]:
    """architecture -> (module, class) of vLLM's generation registries (registry.py's dict literals)."""
    tree = ast.parse((root / "vllm" / "model_executor" / "models" / "registry.py").read_text(encoding="utf-8"))
    out: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") in (
                "_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS", "_SPECULATIVE_DECODING_MODELS"):
            for key, value in zip(node.value.keys, node.value.values):
                if isinstance(key, ast.Constant) and isinstance(value, ast.Tuple):
                    module, cls = (e.value for e in value.elts)
                    dotted = module if module.startswith("vllm.") else f"vllm.model_executor.models.{module}"
                    out[key.value] = (dotted, cls)
    return out


def fill(tsv: Path, classes: dict[str, tuple[str, str]], walk, write: bool) -> None:
    lines = tsv.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    rows = [line.split("\t") for line in lines[1:] if line.strip()]
    if COLUMN not in header:
        at = header.index("supports_pp")
        header.insert(at, COLUMN)
        rows = [row[:at] + [""] + row[at:] for row in rows]
    at = header.index(COLUMN)
    for row in rows:
        module, cls = classes.get(row[header.index("architecture")], (None, None))
        row[at], notes = column(walk, module, cls) if module else ("?", [])
        if row[at] != "none":
            print(f"{row[header.index('architecture')]}\t{row[at]}", *notes, sep="\n")
    if write:
        tsv.write_text("\n".join("\t".join(r) for r in [header, *rows]) + "\n", encoding="utf-8")


def main(argv: list[str]) -> None:
    vllm_src = Path(argv[argv.index("--vllm-src") + 1])
    write = "--write" in argv
    sglang = walker("sglang", "sglang.srt.models", None)
    header, *rows = SGLANG_TSV.read_text(encoding="utf-8").splitlines()
    cols = header.split("\t")
    sglang_classes = {r.split("\t")[0]: (f"sglang.srt.models.{r.split(chr(9))[cols.index('sglang_module')]}",
                                          r.split("\t")[0]) for r in rows}
    fill(SGLANG_TSV, sglang_classes, sglang, write)
    # vLLM's model packages: model_executor/models and the newer vllm/models/<family>/ (DeepSeek V3.2/V4, Kimi-K3, ...)
    fill(VLLM_TSV, vllm_classes(vllm_src), walker("vllm", "vllm.model", vllm_src), write)


if __name__ == "__main__":
    main(sys.argv[1:])
