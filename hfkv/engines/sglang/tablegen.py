"""Write and check SGLang's architecture table (``facts.TABLE``) from an SGLang source tree.

    python -m hfkv.engines.sglang.tablegen --sglang-src DIR [--write]

DIR holds the unpacked ``sglang/`` package of the version (``pip download sglang==X --no-deps`` and
unzip the wheel; the oracle venv's ``site-packages`` will do). Nothing of SGLang is imported: its files
are read with ``ast``. Without ``--write`` it prints, per column, the rows whose cell differs from what
SGLang's lists say (``check``); with ``--write`` it rewrites the table: one row per ``EntryClass`` of
``sglang/srt/models/*.py`` with its module, the cells of a known name carried over as they are, and a
new name's cells taken from SGLang's lists where a list decides them (``source_cells``), else ``?``,
which no parser of ``facts.py`` accepts: ``tp_asserts`` comes from ``tests/oracles/sglang-tp-asserts.py
--write``, ``tp_experts`` from ``tests/oracles/tp-experts.py --write``, ``supports_pp`` from SGLang's own
test in its venv (docs/sglang.md).

The lists read (``hybrid_swa_lists``, ``multimodal_lists``, ``LISTS``) are those each column's docstring
in ``facts.py`` names; ``architecture_rules`` reads the rules SGLang keys by one name inside a function
(Whisper's layer count, backend and radix cache; GLM-5.3 Flash's prefill graph). The values their
members get (0.1, 128, ``trtllm_mla``, a message) were read from the same functions by hand; a new
version that changes one of them changes ``LISTS`` too.

``--releases DIR`` (a folder of unpacked wheels, ``DIR/sglang-<release>/``, every release hfkv models)
writes and checks the ``first_release`` column: the oldest of them whose ``EntryClass`` names register
the architecture.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

from packaging.version import Version

from hfkv.engines import tables
from hfkv.engines.sglang import facts

UNREAD = "?"
SOURCE_ENCODING = "utf-8-sig"  # some model files of 0.5.12 open with a byte-order mark, which ast refuses


def _tree(source: Path, *parts: str) -> ast.Module:
    return ast.parse(source.joinpath("srt", *parts).read_text(encoding=SOURCE_ENCODING))


def _strings(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def entry_classes(source: Path) -> dict[str, str]:
    """EntryClass name -> module, from every ``srt/models/*.py`` (``EntryClass = X`` or a list of them)."""
    names = {}
    for path in sorted(source.joinpath("srt", "models").glob("*.py")):
        for node in ast.parse(path.read_text(encoding=SOURCE_ENCODING)).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "EntryClass" for t in node.targets):
                items = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
                names.update({item.id: path.stem for item in items if isinstance(item, ast.Name)})
    return names


def unpacked_releases(wheels: Path) -> dict[str, Path]:
    """release -> its ``sglang`` package folder, for every ``<wheels>/sglang-<release>/`` holding one
    (``sglang/`` or ``src/sglang/``: an unpacked wheel); oldest first."""
    found = {}
    for folder in wheels.glob("sglang-*"):
        package = next((p for p in (folder / "sglang", folder / "src" / "sglang") if (p / "srt" / "models").is_dir()),
                       None)
        if package is not None:
            found[folder.name.removeprefix("sglang-")] = package
    return dict(sorted(found.items(), key=lambda item: Version(item[0])))


def first_releases(wheels: Path) -> dict[str, str]:
    """EntryClass name -> the oldest release among ``wheels`` (``unpacked_releases``) whose
    ``srt/models/*.py`` register it (the ``first_release`` column)."""
    first: dict[str, str] = {}
    for release, package in unpacked_releases(wheels).items():
        for name in entry_classes(package):
            first.setdefault(name, release)
    return first


def module_set(source: Path, name: str, *parts: str) -> set[str]:
    """The names of a module-level ``NAME = frozenset({...})`` (or tuple, set) in ``srt/<parts>``."""
    for node in _tree(source, *parts).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name]:
            return _strings(node.value)
    raise KeyError(f"{name} not found in {'/'.join(parts)}")


def hybrid_swa_lists(source: Path) -> tuple[set[str], set[str]]:
    """``configs/model_config.py:is_hybrid_swa_model``: (the names of its ``hybrid_swa_archs``, the
    ``*SPREAD`` sets included; the names it then admits only on a config condition,
    ``"X" in model_architectures``)."""
    function = next(n for n in _tree(source, "configs", "model_config.py").body
                    if isinstance(n, ast.FunctionDef) and n.name == "is_hybrid_swa_model")
    literal = next(n.value for n in ast.walk(function)
                   if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "hybrid_swa_archs")
    spread = {n.value.id for n in ast.walk(literal) if isinstance(n, ast.Starred)}
    names = _strings(literal).union(*(module_set(source, s, "configs", "model_config.py") for s in spread))
    conditional = {n.left.value for n in ast.walk(function) if isinstance(n, ast.Compare)
                   and isinstance(n.left, ast.Constant) and isinstance(n.ops[0], ast.In)
                   and getattr(n.comparators[0], "id", None) == "model_architectures"}
    return names, conditional


def _resolved(source: Path, node: ast.AST, *parts: str) -> set[str]:
    """The names of a literal, each ``*NAME`` spread resolved to the module-level set of ``srt/<parts>``."""
    spread = {n.value.id for n in ast.walk(node) if isinstance(n, ast.Starred) and isinstance(n.value, ast.Name)}
    return _strings(node).union(*(module_set(source, s, *parts) for s in spread))


def multimodal_lists(source: Path) -> tuple[set[str], set[str], set[str]]:
    """``configs/model_config.py``: (``multimodal_model_archs``, read by ``is_multimodal_model``; the names
    ``ModelConfig.__init__`` serves text-only as ``hf_config.architectures[0]`` when ``enable_multimodal``
    is not given (``mm_disabled_models``); those it serves text-only there unless the config has
    ``vision_config`` and ``audio_config`` (``MIMO_V2_MULTIMODAL_ARCHS``)). The two branches are told
    apart by whether their test names ``audio_config``; anything else there is an error to read."""
    parts = ("configs", "model_config.py")
    tree = _tree(source, *parts)
    listed = next(_resolved(source, n.value, *parts) for n in tree.body if isinstance(n, ast.Assign)
                  and [getattr(t, "id", None) for t in n.targets] == ["multimodal_model_archs"])
    config = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelConfig")
    init = next(n for n in config.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    local = {n.targets[0].id: n.value for n in ast.walk(init)
             if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)}
    text_only: set[str] = set()
    vision_and_audio: set[str] = set()
    branches = [n for n in ast.walk(init) if isinstance(n, ast.If) and any(
        isinstance(c, ast.Compare) and isinstance(c.ops[0], ast.In) and isinstance(c.left, ast.Subscript)
        and ast.unparse(c.left) == "self.hf_config.architectures[0]" for c in ast.walk(n.test))]
    for branch in branches:
        compare = next(c for c in ast.walk(branch.test) if isinstance(c, ast.Compare) and isinstance(c.ops[0], ast.In)
                       and ast.unparse(c.left) == "self.hf_config.architectures[0]")
        name = compare.comparators[0].id
        names = _resolved(source, local[name], *parts) if name in local else module_set(source, name, *parts)
        (vision_and_audio if "audio_config" in _strings(branch.test) else text_only).update(names)
    if not text_only or not vision_and_audio:
        raise KeyError("ModelConfig.__init__: the enable_multimodal branches on architectures[0] not found")
    return listed, text_only, vision_and_audio


def registered_for(source: Path, module: str, function: str | None = None) -> set[str]:
    """The names ``arg_groups/model_overrides/<module>.py`` passes to ``_register_for`` (on ``function``
    only, when given)."""
    names: set[str] = set()
    for node in _tree(source, "arg_groups", "model_overrides", f"{module}.py").body:
        if isinstance(node, ast.FunctionDef) and function in (None, node.name):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "_register_for":
                    names |= _strings(decorator)
    return names


def _function(tree: ast.Module, name: str) -> ast.AST:
    return next(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name)


def _architecture_tests(node: ast.AST) -> list[tuple[str, bool, ast.AST]]:
    """(name, negated, the enclosing If or Lambda) of every ``"X" in ... architectures`` test inside ``node``."""
    out = []
    for holder in ast.walk(node):
        if not isinstance(holder, (ast.If, ast.Lambda)):
            continue
        test = holder.test if isinstance(holder, ast.If) else holder.body
        for compare in ast.walk(test):
            if (isinstance(compare, ast.Compare) and isinstance(compare.left, ast.Constant)
                    and isinstance(compare.left.value, str) and isinstance(compare.ops[0], (ast.In, ast.NotIn))
                    and "architectures" in ast.unparse(compare.comparators[0])):
                out.append((compare.left.value, isinstance(compare.ops[0], ast.NotIn), holder))
    return out


def architecture_rules(source: Path) -> dict[str, dict[str, str]]:
    """column -> {architecture: cell} for the rules SGLang keys by one architecture name in a function's
    code rather than in a list: ``encoder_decoder_layers`` (``ModelConfig``: the branch that sets
    ``num_attention_layers`` from ``encoder_layers``), ``attention_backend`` (``get_default_attn_backend``'s
    early return), ``radix_cache`` (``handle_attention_backend_compatibility``'s ``disable_radix_cache=True``),
    ``kda_prefill_graph`` (the names ``disable_breakable_cudagraph_if_incompatible`` exempts from its KDA
    rule)."""
    out: dict[str, dict[str, str]] = {"encoder_decoder_layers": {}, "attention_backend": {}, "radix_cache": {},
                                      "kda_prefill_graph": {}}
    config = _function(_tree(source, "configs", "model_config.py"), "ModelConfig")
    for name, _, holder in _architecture_tests(config):
        if isinstance(holder, ast.If) and any("num_attention_layers" in ast.unparse(n) and "encoder_layers"
                                              in ast.unparse(n) for n in holder.body):
            out["encoder_decoder_layers"][name] = "yes"
    backend = _function(_tree(source, "arg_groups", "model_override_base.py"), "get_default_attn_backend")
    for name, _, holder in _architecture_tests(backend):
        returned = [n.value.value for n in holder.body if isinstance(n, ast.Return) and isinstance(n.value, ast.Constant)]
        if returned:
            out["attention_backend"][name] = returned[0]
    hook = _function(_tree(source, "arg_groups", "attention_hook.py"), "handle_attention_backend_compatibility")
    for name, _, holder in _architecture_tests(hook):
        if isinstance(holder, ast.If) and "disable_radix_cache=True" in ast.unparse(holder):
            out["radix_cache"][name] = "off"
    graph = _function(_tree(source, "arg_groups", "cuda_graph_hook.py"), "disable_breakable_cudagraph_if_incompatible")
    for name, negated, holder in _architecture_tests(graph):
        if negated and "kda" in ast.unparse(holder).lower():
            out["kda_prefill_graph"][name] = "yes"
    return out


# column -> [(cell, the names SGLang's list gives that cell)], first match wins; other names: the default
LISTS = {
    "mamba_extra_buffer": [("yes", lambda s: module_set(s, "_MAMBA_EXTRA_BUFFER_ARCHS", "arg_groups", "overrides.py"))],
    "swa_full_tokens_ratio": [("0.1", lambda s: registered_for(s, "inkling"))],
    "mamba_full_memory_ratio": [("0.1", lambda s: registered_for(s, "inkling"))],
    "sm100_attention_backend": [
        ("trtllm_mla", lambda s: registered_for(s, "deepseek_v2", "_deepseek_family_overrides")
         | registered_for(s, "kimi_k3", "_kimi_k3_overrides")),
        ("triton", lambda s: registered_for(s, "qwen3_5")),
        ("fa4/trtllm_mha", lambda s: registered_for(s, "minimax_m3")),
    ],
    "page_size": [("128", lambda s: registered_for(s, "minimax_m3"))],
    "pp_refusal": [("IQuest Q1 does not support pipeline parallelism.", lambda s: registered_for(s, "iquest_q1")),
                   # arg_groups/model_hook.py: the branch that runs validate_deepseek_v41_features
                   (facts.PP_REFUSAL_BY_MODEL_TYPE, lambda s: {"DeepseekV4ForCausalLM"})],
}
DEFAULTS = {"mamba_extra_buffer": "no", "swa_full_tokens_ratio": facts.DEFAULT,
            "mamba_full_memory_ratio": facts.DEFAULT, "sm100_attention_backend": facts.DEFAULT,
            "page_size": facts.DEFAULT, "pp_refusal": facts.NONE, "encoder_decoder_layers": "no",
            "attention_backend": facts.DEFAULT, "radix_cache": facts.DEFAULT, "kda_prefill_graph": "no"}


def source_cells(source: Path, names: list[str]) -> dict[str, dict[str, str]]:
    """architecture -> {column: cell} for the columns SGLang's lists decide (``hybrid_swa``,
    ``multimodal``, ``multimodal_prefill_graph`` and ``LISTS``)."""
    hybrid, conditional = hybrid_swa_lists(source)
    listed, text_only, vision_and_audio = multimodal_lists(source)
    prefill_graph = module_set(source, "multimodal_breakable_cuda_graph_supported_model_archs", "configs", "model_config.py")
    lists = {column: [(cell, read(source)) for cell, read in entries] for column, entries in LISTS.items()}
    rules = architecture_rules(source)
    out = {}
    for name in names:
        cells = {"hybrid_swa": facts.HYBRID_SWA_IF_SLIDING if name in conditional
                 else facts.HYBRID_SWA if name in hybrid else facts.NOT_HYBRID_SWA,
                 "multimodal": facts.multimodal_cell(facts.Multimodal(
                     name in listed, name in text_only, name in vision_and_audio)),
                 "multimodal_prefill_graph": "yes" if name in prefill_graph else "no"}
        for column, entries in lists.items():
            cells[column] = next((cell for cell, members in entries if name in members), DEFAULTS[column])
        for column, cells_of in rules.items():
            cells[column] = cells_of.get(name, DEFAULTS[column])
        out[name] = cells
    return out


def check(source: Path, wheels: Path | None = None) -> dict[str, list[str]]:
    """column -> the rows whose cell differs from what SGLang's lists say (``architecture`` for names
    the table and the ``EntryClass`` names do not share, ``sglang_module`` for a moved class;
    ``first_release`` against the releases unpacked in ``wheels``, when given)."""
    header, rows = tables.read_table(facts.TABLE)
    table = {row[0]: dict(zip(header, row)) for row in rows}
    entries = entry_classes(source)
    out = {"architecture": sorted(set(entries) ^ set(table)),
           "sglang_module": sorted(a for a in table if a in entries and table[a]["sglang_module"] != entries[a])}
    if wheels is not None:
        first = first_releases(wheels)
        out["first_release"] = sorted(a for a in table if table[a]["first_release"] != first.get(a, UNREAD))
    for name, cells in source_cells(source, sorted(set(entries) & set(table))).items():
        for column, cell in cells.items():
            if table[name][column] != cell:
                out.setdefault(column, []).append(name)
    return {column: names for column, names in out.items() if names}


def rewritten(source: Path, wheels: Path | None = None) -> list[list[str]]:
    """The table's rows for the ``EntryClass`` names of ``source`` (module docstring), header first; the
    ``first_release`` column from the releases unpacked in ``wheels`` when given."""
    header, rows = tables.read_table(facts.TABLE)
    known = {row[0]: row for row in rows}
    entries = entry_classes(source)
    derived = source_cells(source, sorted(set(entries) - set(known)))
    first = first_releases(wheels) if wheels is not None else {}
    out = [header]
    for name in sorted(entries):
        if name in known:
            row = [name, entries[name], *known[name][2:]]
        else:
            cells = {"architecture": name, "sglang_module": entries[name], **derived[name]}
            row = [cells.get(column, UNREAD) for column in header]
        if name in first:
            row[header.index("first_release")] = first[name]
        out.append(row)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m hfkv.engines.sglang.tablegen", description=__doc__.split("\n")[0])
    parser.add_argument("--sglang-src", type=Path, required=True, help="folder holding the unpacked sglang/ package")
    parser.add_argument("--write", action="store_true", help=f"rewrite {facts.TABLE.name}")
    parser.add_argument("--releases", type=Path, help="folder of unpacked wheels, sglang-<release>/ each: the "
                                                      "first_release column")
    args = parser.parse_args(argv)
    source = args.sglang_src / "sglang" if (args.sglang_src / "sglang" / "srt").is_dir() else args.sglang_src
    if args.write:
        rows = rewritten(source, args.releases)
        facts.TABLE.write_text("\n".join("\t".join(row) for row in rows) + "\n", encoding="utf-8")
        new = [row for row in rows[1:] if UNREAD in row[3:]]  # tp_asserts' own "?" means no claim
        print(f"{facts.TABLE.name}: {len(rows) - 1} rows, {len(new)} new to read ({UNREAD}): "
              f"{', '.join(row[0] for row in new)}")
    for column, names in check(source, args.releases).items():
        print(f"{column}: {len(names)} differ from SGLang's lists: {', '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
