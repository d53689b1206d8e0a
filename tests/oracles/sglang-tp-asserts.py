"""Fill the ``tp_asserts`` column of hfkv/engines/sglang/0.5.23.tsv from SGLang's own source.

Run it with the SGLang oracle venv's python (it only reads the installed ``sglang`` package's files,
nothing is imported or run):  ~/.cache/hfkv-sglang-oracle/bin/python tests/oracles/sglang-tp-asserts.py [--write]

For each architecture it walks, with ``ast``, every class the ``EntryClass`` reaches inside
``sglang.srt.models`` (names used in its body, its bases, following each module's imports), and keeps
the classes whose ``__init__`` asserts ``<heads> % <tp> == 0`` (or ``<tp> % <kv heads> == 0``). The TP
is classified by the assignment of that name in the same ``__init__``: ``attn_tp`` when it reads the
attention TP (``get_parallel().attn_tp_size``), ``tp`` for the full TP group, ``?`` otherwise.
Vision / audio towers are skipped by class name (their heads are not the text config's). The column
is ``<kind>@<tp>:<Class>`` joined by ``,`` (kind ``heads``, ``kv`` or ``heads+kv``), ``none`` when no
reached class asserts, ``?`` when the entry class cannot be found. Without ``--write`` it prints the
table and each assertion it parsed, for review.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from functools import lru_cache
from pathlib import Path

TSV = Path(__file__).resolve().parents[2] / "hfkv" / "engines" / "sglang" / "0.5.23.tsv"
MODELS = "sglang.srt.models"
PACKAGE = "sglang"  # imports followed: this package's (tests/oracles/tp-experts.py points a copy at vllm)
TP_NAME = re.compile(r"tp|world_size|shard")
TOWER = re.compile(r"vision|visual|vit|audio|siglip|clip|whisper|encoder|image|pixtral|navit|projector|resampler",
                   re.I)


def sglang_root() -> Path:
    spec = importlib.util.find_spec("sglang")
    return Path(spec.origin).parent.parent


@lru_cache(maxsize=None)
def module_ast(module: str) -> ast.Module | None:
    base = sglang_root().joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.exists():
            return ast.parse(path.read_text(encoding="utf-8"))
    return None


def absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = sglang_root().joinpath(*module.split("."), "__init__.py").exists()  # a package's own level
    parts = module.split(".")[: len(module.split(".")) - node.level + package]
    return ".".join(parts + ([node.module] if node.module else []))


@lru_cache(maxsize=None)
def names_of(module: str) -> tuple[dict, dict, dict]:
    """``module``'s classes, ``X = Y`` aliases and imported names (function-local imports too)."""
    tree = module_ast(module)
    if tree is None:
        return {}, {}, {}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    # Module-level X = <expression>: an alias of a class, or a table of classes (decoder-layer maps).
    aliases = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign)
               for t in n.targets if isinstance(t, ast.Name) and ast.unparse(n.value) != t.id}
    imports = {(a.asname or a.name): (absolute(module, n), a.name) for n in ast.walk(tree)
               if isinstance(n, ast.ImportFrom) for a in n.names}
    return classes, aliases, imports


@lru_cache(maxsize=None)
def resolve(module: str, name: str, depth: int = 0) -> tuple[str, ast.AST] | None:
    """The class ``name`` means in ``module`` (defined there, aliased, or imported), if in sglang; a
    module-level expression naming classes (a table) stands for them."""
    classes, aliases, imports = names_of(module)
    if depth > 8:
        return None
    if name in classes:
        return module, classes[name]
    if name in aliases:
        value = aliases[name]
        if isinstance(value, ast.Name):
            return resolve(module, value.id, depth + 1)
        return module, ast.ClassDef(name=f"<{name}>", bases=[], keywords=[], body=[ast.Expr(value)],
                                    decorator_list=[], type_params=[])
    if name in imports and imports[name][0].startswith(PACKAGE + "."):
        return resolve(*imports[name], depth + 1)
    return None


def references(module: str, node: ast.AST) -> set[tuple[str, str]]:
    """(module, name) of every name ``node`` uses: ``X`` in ``module``, ``mod.X`` in an imported module."""
    imports = names_of(module)[2]
    refs = {(module, n.id) for n in ast.walk(node) if isinstance(n, ast.Name)}
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in imports:
            source, name = imports[n.value.id]
            refs.add((f"{source}.{name}", n.attr))  # from sglang.srt.models import qwen3_5; qwen3_5.X
    return refs


def reached(module: str, cls: ast.ClassDef) -> list[tuple[str, ast.ClassDef]]:
    """Every class inside sglang.srt.models that ``cls`` names (body and bases), transitively."""
    seen: dict[tuple[str, str], ast.ClassDef] = {}
    todo = [(module, cls)]
    while todo:
        mod, node = todo.pop()
        if (mod, node.name) in seen:
            continue
        seen[(mod, node.name)] = node
        for hit in map(lambda ref: resolve(*ref), references(mod, node)):
            if hit and hit[0].startswith(MODELS) and (hit[0], hit[1].name) not in seen:
                todo.append(hit)
    return [(mod, node) for (mod, name), node in seen.items() if not name.startswith("<")]


def init_of(cls: ast.ClassDef) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)


def tp_source(init: ast.FunctionDef, tp: str) -> str:
    """Which TP the name ``tp`` holds in ``init``: ``attn_tp``, ``tp`` or ``?``."""
    for node in ast.walk(init):
        targets = [e for t in getattr(node, "targets", []) for e in getattr(t, "elts", [t])]
        if isinstance(node, ast.Assign) and any(ast.unparse(t) == tp for t in targets):
            value = ast.unparse(node.value)
            if "attn_tp" in value or "attention_tp" in value:
                return "attn_tp"
            if re.search(r"\.tp_size\b|tensor_model_parallel_world_size\(\)", value):
                return "tp"
            return "?"
    return "?"


def head_asserts(init: ast.FunctionDef) -> list[tuple[str, str, str]]:
    """(kind, tp source, assertion text) for each ``X % Y == 0`` assertion on heads in ``init``."""
    out, replicated = [], set()
    for node in ast.walk(init):
        test = getattr(node, "test", None) if isinstance(node, ast.Assert) else None
        if not (isinstance(test, ast.Compare) and isinstance(test.left, ast.BinOp)
                and isinstance(test.left.op, ast.Mod) and isinstance(test.ops[0], ast.Eq)):
            continue
        left, right = ast.unparse(test.left.left), ast.unparse(test.left.right)
        if "head" in left:
            heads, tp = left, right
        elif "head" in right:
            heads, tp = right, left
        else:
            continue
        if not TP_NAME.search(tp):  # hidden_size % heads, q heads % k heads: not about TP
            continue
        kind = "kv" if "kv" in heads or "key_value" in heads else "heads"
        if kind == "heads" and heads == right:
            replicated.add(heads)  # tp % heads: these heads may be fewer than TP (MiniMax's index heads)
        out.append((kind, tp_source(init, tp), ast.unparse(test), heads))
    # Only the strict heads % tp rule is claimed for query heads; a conditional one is left out.
    return [item[:3] for item in out if item[0] == "kv" or item[3] not in replicated]


def asserting(classes: list[tuple[str, ast.ClassDef]]) -> list[tuple[str, str, list]]:
    """(module, class, its head assertions) for each text-side class whose ``__init__`` asserts on TP."""
    out = []
    for mod, cls in sorted(classes, key=lambda item: item[1].name):
        init = init_of(cls)
        asserts = head_asserts(init) if init is not None and not TOWER.search(cls.name) else []
        if asserts:
            out.append((mod, cls.name, asserts))
    return out


def entry(name: str, asserts: list[tuple[str, str, str]]) -> str:
    """``<kinds>@<tp>:<name>``: the kinds asserted at the TP the query-head assertion uses (a KV
    assertion at another TP, e.g. Qwen3.5's ``kv_tp_size``, is left out: no claim on it)."""
    by_kind = {kind: {source for k, source, _ in asserts if k == kind} for kind, _, _ in asserts}
    main = by_kind.get("heads") or by_kind["kv"]
    source = next(iter(main)) if len(main) == 1 else "?"
    kinds = [kind for kind in ("heads", "kv") if by_kind.get(kind) == {source}] or ["heads"]
    return f"{'+'.join(kinds)}@{source}:{name}"


def column(module: str, arch: str) -> tuple[str, list[str]]:
    """The column value for ``arch`` and the assertions behind it. Classes of the entry class's own
    module win over classes it only reaches (a subclass of Qwen2Model names Qwen2DecoderLayer as a
    default it replaces); ``?`` when nothing reached builds a RadixAttention (the text model is
    chosen at run time, e.g. from the config's text architecture)."""
    hit = resolve(f"{MODELS}.{module}", arch)
    if hit is None:
        return "?", []
    classes = reached(*hit)
    found = asserting(classes)
    own = [item for item in found if item[0] == hit[0]]
    found, lines = own or found, []
    values = []
    for mod, name, asserts in found:
        values.append(entry(name, asserts))
        lines += [f"    {mod}.{name}: {text}  [{source}]" for _, source, text in asserts]
    if not values:
        builds = any(isinstance(n, ast.Name) and n.id == "RadixAttention" for _, c in classes for n in ast.walk(c))
        return ("none" if builds else "?"), lines
    return ",".join(values), lines


def main(argv: list[str]) -> None:
    lines = TSV.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    rows = [line.split("\t") for line in lines[1:] if line.strip()]
    if "tp_asserts" not in header:
        header.insert(2, "tp_asserts")
        rows = [row[:2] + [""] + row[2:] for row in rows]
    for row in rows:
        row[2], notes = column(row[1], row[0])
        print(f"{row[0]}\t{row[2]}", *notes, sep="\n")
    if "--write" in argv:
        TSV.write_text("\n".join("\t".join(r) for r in [header, *rows]) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
