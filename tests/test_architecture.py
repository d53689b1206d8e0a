"""The tree keeps its data flow (docs/architecture.md): stages import only earlier stages, nothing imports
in a circle, and the accounting core and the planning stages name no model family in their code."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The order of the data flow; a module may import its own stage or an earlier one. ``hfkv.api`` (the
# Python entry point) sits with ``hfkv.commands`` (the CLI's); ``hfkv`` itself re-exports lazily.
STAGES = ["hfkv._version", "hfkv.text", "hfkv.errors", "hfkv.units", "hfkv.runtime", "hfkv.sources", "hfkv.model",
          "hfkv.mappings", "hfkv.inspection", "hfkv.engines", "hfkv.planning", "hfkv.render",
          ("hfkv.commands", "hfkv.api"), ("hfkv", "hfkv.__main__")]
RANK = {name: i for i, stage in enumerate(STAGES) for name in (stage if isinstance(stage, tuple) else (stage,))}
# Families, as a word in code (not in docstrings, comments or help texts, which may cite them as examples).
FAMILIES = re.compile(r"deepseek|qwen|llama|gemma|glm|kimi|minimax|hunyuan|granite|nemotron|falcon|olmo|mistral|"
                      r"jamba|zamba|gpt_oss|phi3", re.I)
FAMILY_FREE = ["hfkv/model/accounting.py", "hfkv/model/specs.py", "hfkv/model/report.py", "hfkv/planning/verdict.py",
               "hfkv/planning/serving.py", "hfkv/planning/search.py", "hfkv/planning/enrich.py",
               "hfkv/engines/contract.py"]


def modules() -> dict[str, Path]:
    found = {}
    for base, package in ((ROOT / "hfkv", "hfkv"), (ROOT / "mappings", "hfkv.mappings")):
        for path in base.rglob("*.py"):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def stage(name: str) -> int:
    best = max((k for k in RANK if name == k or name.startswith(k + ".")), key=len)
    return RANK[best]


def imports(path: Path, known: dict[str, Path]) -> list[tuple[str, bool]]:
    """(first-party module imported, at module level) for every import outside ``if TYPE_CHECKING``."""
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                   for n in ast.walk(node)}
    in_function = {id(n) for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                   for n in ast.walk(node)}
    out = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out += [(n, id(node) not in in_function) for n in names if n in known]
    return out


def test_no_stage_imports_a_later_stage():
    known = modules()
    upward = [f"{m} -> {t}" for m, path in known.items() for t, _ in imports(path, known)
              if stage(t) > stage(m)]
    assert not upward, upward


def test_no_import_circles():
    """None at module level, and none hidden by an import inside a function (lazy imports that keep
    start-up cheap point forward only)."""
    known = modules()
    edges = {m: {t for t, _ in imports(p, known) if t != m} for m, p in known.items()}
    state: dict[str, int] = {}  # 1 visiting, 2 done
    circles = []

    def visit(m: str, trail: list[str]) -> None:
        state[m] = 1
        for t in sorted(edges[m]):
            if state.get(t) == 1:
                circles.append(trail[trail.index(t):] + [t] if t in trail else [m, t])
            elif t not in state:
                visit(t, trail + [t])
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])
    assert not circles, circles


def test_the_core_and_planning_name_no_family_in_code():
    found = []
    for name in FAMILY_FREE:
        source = (ROOT / name).read_text()
        tokens = tokenize.generate_tokens(io.StringIO(source).readline)
        previous = None
        for tok in tokens:
            docstring = tok.type == tokenize.STRING and previous in (None, tokenize.INDENT, tokenize.NEWLINE, tokenize.NL)
            # A name, or a string that is one word (a model type or an architecture compared against);
            # help texts may cite a family as an example.
            word = tok.type == tokenize.NAME or (tok.type == tokenize.STRING and not docstring
                                                 and not re.search(r"\s", tok.string))
            if word and FAMILIES.search(tok.string):
                found.append(f"{name}:{tok.start[0]}: {tok.string[:60]}")
            if tok.type not in (tokenize.COMMENT, tokenize.NL):
                previous = tok.type
    assert not found, found
