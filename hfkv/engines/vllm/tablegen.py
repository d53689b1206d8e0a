"""Regenerate the vLLM tables (``facts.py``) from an unpacked vLLM wheel, without importing vLLM.

    pip download vllm==X.Y.Z --no-deps -d /tmp/vllm && unzip -q /tmp/vllm/vllm-*.whl -d /tmp/vllm/src
    python -m hfkv.engines.vllm.tablegen --vllm-src /tmp/vllm/src [--fallback tables.json] [--check]

What is read from the source (Python's ``ast``; nothing of vLLM runs):

- ``model_executor/models/registry.py``: the generation registries (one row each), the pooling
  tables, ``_TRANSFORMERS_SUPPORTED_MODELS`` and ``_PREVIOUSLY_SUPPORTED_MODELS`` (their dict
  literals are evaluated on their own);
- each registered class and its bases, followed through the imports: ``attention_free`` and
  ``is_hybrid`` are the ``is_attention_free`` / ``is_hybrid`` class attributes (``IsAttentionFree``,
  ``IsHybrid``), ``supports_pp`` is ``SupportsPP`` among the bases and a ``forward`` with an
  ``intermediate_tensors`` parameter (what ``interfaces.supports_pp`` checks);
- ``config/model.py``'s ``_FLOAT16_NOT_SUPPORTED_MODELS`` and the ``MM_PREFIX_LM_MODELS`` of
  ``transformers_utils/model_arch_config_convertor.py``.

``--fallback`` takes the JSON that ``tests/oracles/vllm-transformers-backend-tables.py`` prints in
vLLM's venv (its ``fallback`` list: transformers' classes the backend takes); without it the
current table's fallback rows are kept. Every other column is carried over from the current tables
by name; a name they do not hold gets ``?``, which ``tests/engines/vllm/test_facts.py`` refuses
until the cell is filled by reading that class in vLLM's source. The model types whose config
convertor defines its own ``is_mm_prefix_lm`` are printed for the same reason. ``--check`` writes
nothing and exits 1 when the tables differ from what the source gives.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from hfkv.engines import tables
from hfkv.engines.vllm import facts

UNKNOWN = "?"
GENERATION = {"_TEXT_GENERATION_MODELS": "text_generation", "_MULTIMODAL_MODELS": "multimodal",
              "_SPECULATIVE_DECODING_MODELS": "speculative_decoding"}
POOLING = ("_EMBEDDING_MODELS", "_LATE_INTERACTION_MODELS", "_REWARD_MODELS", "_TOKEN_CLASSIFICATION_MODELS",
           "_SEQUENCE_CLASSIFICATION_MODELS")
REGISTRY = "vllm.model_executor.models.registry"
MODELS = "vllm.model_executor.models"


# -- a static view of the source tree ---------------------------------------------------------------


@dataclass
class Module:
    """One parsed module: its classes, the names it imports (name -> (module, name or None)) and
    its plain ``A = B`` aliases."""

    tree: ast.Module
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)


class SourceTree:
    """The ``vllm`` package under ``root``, read with ``ast`` on demand."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, dotted: str) -> Path | None:
        base = self.root / dotted.replace(".", "/")
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    @lru_cache(maxsize=None)
    def module(self, dotted: str) -> Module | None:
        path = self.path(dotted)
        if path is None:
            return None
        parsed = Module(ast.parse(path.read_text(encoding="utf-8")))
        package = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
        for node in ast.walk(parsed.tree):  # the first definition or import of a name wins
            if isinstance(node, ast.ClassDef):
                parsed.classes.setdefault(node.name, node)
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(package, node.module, node.level)
                for alias in node.names:
                    parsed.imports.setdefault(alias.asname or alias.name, (source, alias.name))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parsed.imports.setdefault(alias.asname or alias.name.split(".")[0], (alias.name, None))
        for node in parsed.tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                parsed.aliases[node.targets[0].id] = node.value.id
        return parsed

    def resolve(self, dotted: str, name: str, depth: int = 0) -> tuple[str, ast.ClassDef] | None:
        """The class ``name`` means inside module ``dotted``, following imports and aliases."""
        parsed = self.module(dotted)
        if parsed is None or depth > 20:
            return None
        if name in parsed.classes:
            return dotted, parsed.classes[name]
        if name in parsed.aliases:
            return self.resolve(dotted, parsed.aliases[name], depth + 1)
        source, imported = parsed.imports.get(name, (None, None))
        return self.resolve(source, imported, depth + 1) if source and imported else None

    def _base(self, dotted: str, node: ast.expr) -> tuple[str, ast.ClassDef] | None:
        if isinstance(node, ast.Name):
            return self.resolve(dotted, node.id)
        if isinstance(node, ast.Subscript):  # Generic[...] and the like
            return self._base(dotted, node.value)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            source, imported = self.module(dotted).imports.get(node.value.id, (None, None))
            if source:
                return self.resolve(source if imported is None else f"{source}.{imported}", node.attr)
        return None

    def lineage(self, dotted: str, cls: ast.ClassDef) -> list[tuple[str, ast.ClassDef]]:
        """The class and every base the source defines, depth first (enough for attribute lookups
        whose answer no two bases contradict)."""
        out, seen = [], set()

        def walk(where: str, node: ast.ClassDef) -> None:
            if (where, node.name) in seen:
                return
            seen.add((where, node.name))
            out.append((where, node))
            for base in node.bases:
                found = self._base(where, base)
                if found:
                    walk(*found)

        walk(dotted, cls)
        return out


def _absolute(package: str, module: str | None, level: int) -> str:
    if not level:
        return module or ""
    parts = package.split(".")
    parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([module] if module else []))


def class_attribute(lineage: list[tuple[str, ast.ClassDef]], name: str) -> object:
    """The literal value the first class of the lineage assigns to ``name`` in its body (or None)."""
    for _, node in lineage:
        for statement in node.body:
            target, value = None, None
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target, value = statement.targets[0], statement.value
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                target, value = statement.target, statement.value
            if isinstance(target, ast.Name) and target.id == name:
                try:
                    return ast.literal_eval(value)
                except ValueError:
                    return None
    return None


def method(lineage: list[tuple[str, ast.ClassDef]], name: str) -> ast.FunctionDef | None:
    for _, node in lineage:
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == name:
                return statement
    return None


def takes(function: ast.FunctionDef | None, parameter: str) -> bool:
    if function is None:
        return False
    args = function.args
    return any(a.arg == parameter for a in args.posonlyargs + args.args + args.kwonlyargs)


# -- what the tables hold ---------------------------------------------------------------------------


def registry_tables(tree: SourceTree) -> dict[str, dict]:
    """registry.py's module-level ``_…_MODELS`` dicts, each evaluated from its own literal (and the
    earlier tables it spreads)."""
    namespace: dict[str, object] = {}
    for node in tree.module(REGISTRY).tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id.startswith("_") and node.targets[0].id.endswith("_MODELS"):
            exec(compile(ast.Module([node], []), "registry.py", "exec"), {"__builtins__": {}}, namespace)  # noqa: S102
    return namespace  # type: ignore[return-value]


def class_flags(tree: SourceTree, module: str, cls: str) -> dict[str, str]:
    """attention_free, is_hybrid and supports_pp of one registered class."""
    dotted = module if module.startswith("vllm.") else f"{MODELS}.{module}"
    found = tree.resolve(dotted, cls)
    if found is None:
        raise LookupError(f"{dotted}.{cls} not found in the source")
    lineage = tree.lineage(*found)
    names = {node.name for _, node in lineage}
    yes_no = {True: "yes", False: "no"}
    return {
        "attention_free": yes_no[class_attribute(lineage, "is_attention_free") is True],
        "is_hybrid": yes_no[class_attribute(lineage, "is_hybrid") is True],
        "supports_pp": yes_no["SupportsPP" in names and takes(method(lineage, "forward"), "intermediate_tensors")],
    }


def architecture_rows(tree: SourceTree, tables: dict[str, dict]) -> dict[str, dict[str, str]]:
    """architecture -> the columns the source gives (registry, module, interface flags)."""
    rows = {}
    for table_name, registry in GENERATION.items():
        for arch, (module, cls) in tables[table_name].items():
            rows[arch] = {"registry": registry, "architecture": arch, "vllm_module": module,
                          **class_flags(tree, module, cls)}
    return rows


def other_rows(tables: dict[str, dict], fallback: set[str] | None) -> dict[str, dict[str, str]]:
    """architecture -> the columns the source gives for names outside the generation registries."""
    generation = {arch for name in GENERATION for arch in tables[name]}
    pooling = {arch for name in POOLING for arch in tables[name]} - generation
    registered = {arch: cls for arch, (_, cls) in tables["_TRANSFORMERS_SUPPORTED_MODELS"].items()}
    dropped = tables["_PREVIOUSLY_SUPPORTED_MODELS"]
    if fallback is None:
        fallback = set(facts.transformers_fallback())
    rows = {}
    for arch in sorted(pooling | set(registered) | set(fallback) | set(dropped)):
        route = f"registered:{registered[arch]}" if arch in registered else "fallback" if arch in fallback else facts.NONE
        rows[arch] = {"architecture": arch, "pooling_only": "yes" if arch in pooling else "no",
                      "transformers_backend": route, "supported_until": dropped.get(arch, facts.NONE)}
    return rows


def _literal_in(tree: SourceTree, dotted: str, name: str) -> object:
    """The literal assigned to ``name`` anywhere in a module (module level or inside a function)."""
    for node in ast.walk(tree.module(dotted).tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{name} not found in {dotted}")


def model_type_rows(tree: SourceTree) -> dict[str, dict[str, str]]:
    """model type -> the columns the source gives: ``float16`` for every type, ``mm_prefix`` for the
    fixed list (types whose convertor has its own rule keep the current cell)."""
    no_float16 = set(_literal_in(tree, "vllm.config.model", "_FLOAT16_NOT_SUPPORTED_MODELS"))
    prefix = set(_literal_in(tree, "vllm.transformers_utils.model_arch_config_convertor", "MM_PREFIX_LM_MODELS"))
    rows = {}
    for model_type in sorted(no_float16 | prefix | set(facts.model_types())):
        rows[model_type] = {"model_type": model_type, "float16": "no" if model_type in no_float16 else "yes"}
        if model_type in prefix:
            rows[model_type]["mm_prefix"] = "yes"
    return rows


def own_mm_prefix_rules(tree: SourceTree) -> list[str]:
    """The model types whose config convertor defines ``is_mm_prefix_lm`` itself (to read by hand)."""
    dotted = "vllm.transformers_utils.model_arch_config_convertor"
    convertors = _literal_dict_names(tree, dotted, "MODEL_ARCH_CONFIG_CONVERTORS")
    classes = tree.module(dotted).classes
    return sorted(t for t, cls in convertors.items()
                  if cls in classes and method([(dotted, classes[cls])], "is_mm_prefix_lm"))


def _literal_dict_names(tree: SourceTree, dotted: str, name: str) -> dict[str, str]:
    """A module-level ``{"key": ClassName, …}`` as key -> class name."""
    for node in tree.module(dotted).tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return {ast.literal_eval(k): ast.unparse(v) for k, v in zip(node.value.keys, node.value.values)}
    raise LookupError(f"{name} not found in {dotted}")


# -- merging with the current tables and writing ------------------------------------------------------


def merged(path: Path, derived: dict[str, dict[str, str]], key: str, sort: tuple[str, ...]) -> str:
    """The table at ``path`` with its rows replaced by ``derived``'s names: derived cells win, the
    other cells are carried over by name, ``?`` where a new name has none."""
    header, rows = tables.read_table(path)
    current = {row[header.index(key)]: dict(zip(header, row)) for row in rows}
    out = []
    for name, cells in derived.items():
        carried = current.get(name, {})
        out.append([cells.get(column, carried.get(column, UNKNOWN)) for column in header])
    out.sort(key=lambda row: tuple(row[header.index(column)] for column in sort))
    return "\n".join("\t".join(row) for row in [header, *out]) + "\n"


def generate(root: Path, fallback: set[str] | None) -> dict[Path, str]:
    """The three tables' text as the source at ``root`` (holding ``vllm/``) gives them."""
    tree = SourceTree(root)
    tables = registry_tables(tree)
    return {
        facts.TABLE: merged(facts.TABLE, architecture_rows(tree, tables), "architecture", ("registry", "architecture")),
        facts.OTHER_TABLE: merged(facts.OTHER_TABLE, other_rows(tables, fallback), "architecture", ("architecture",)),
        facts.MODEL_TYPES_TABLE: merged(facts.MODEL_TYPES_TABLE, model_type_rows(tree), "model_type", ("model_type",)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vllm-src", type=Path, required=True, help="folder holding the unpacked vllm/ package")
    parser.add_argument("--fallback", type=Path, help="JSON of tests/oracles/vllm-transformers-backend-tables.py")
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    args = parser.parse_args(argv)
    fallback = set(json.loads(args.fallback.read_text())["fallback"]) if args.fallback else None
    differ = []
    for path, text in generate(args.vllm_src, fallback).items():
        if path.read_text(encoding="utf-8") != text:
            differ.append(path.name)
            if not args.check:
                path.write_text(text, encoding="utf-8")
        unknown = text.count(f"\t{UNKNOWN}")
        if unknown:
            print(f"{path.name}: {unknown} cell(s) to fill by hand ({UNKNOWN})")
    print("model types whose convertor has its own is_mm_prefix_lm (check their mm_prefix cells): "
          + ", ".join(own_mm_prefix_rules(SourceTree(args.vllm_src))))
    print(("differs: " if args.check else "rewritten: ") + (", ".join(differ) or "none"))
    return 1 if args.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
