"""What hfkv knows by name, generated from the mapper registry.

    python -m hfkv.coverage                  # print the coverage table (markdown)
    python -m hfkv.coverage --write          # rewrite docs/coverage.md's section between the markers
    python -m hfkv.coverage --architectures  # one line per known architecture: NAME<TAB>MAPPER
                                             # (or NAME<TAB>refused: reason)

A test fails when docs/coverage.md and the registry disagree, and another when an architecture the
pinned engines serve is not known by name.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

START, END = "<!-- coverage:start -->", "<!-- coverage:end -->"
DOC = Path(__file__).resolve().parents[1] / "docs" / "coverage.md"
HEADER = """# Coverage

Generated from the mapper registry (`python -m hfkv.coverage --write`); a test fails when this
table and the registry disagree. `python -m hfkv.coverage --architectures` lists every architecture
name hfkv knows, with its mapper or the reason it is refused.

"""


def coverage_rows() -> list[tuple[str, str, str, str, str]]:
    """(family, mapper, model types, architectures, fixtures) per registered mapper, sorted by family then name."""
    from hfkv.mappings import all_mappers

    rows = []
    for mapper in all_mappers():
        types = ", ".join(f"`{t}`" for t in sorted(mapper.model_types, key=str.lower)) or "-"
        archs = ", ".join(f"`{a}`" for a in sorted(mapper.architectures)) or "-"
        fixtures = ", ".join(f"`fixtures/{f}`" for f in sorted(set(mapper.fixtures.values()))) or "-"
        rows.append((mapper.family, mapper.name, types, archs, fixtures))
    return sorted(rows, key=lambda r: (r[0], r[1]))


def coverage_markdown() -> str:
    lines = ["| family | mapper | model_type | architectures | fixtures |", "|---|---|---|---|---|"]
    for family, mapper, types, archs, fixtures in coverage_rows():
        lines.append(f"| {family} | `{mapper}` | {types} | {archs} | {fixtures} |")
    lines.append("")
    lines.append("Any other model type goes to the generic mapper (`generic.generic`), which reports from the "
                 "standard keys and lists in `warnings` the attention/cache keys it did not understand.")
    return "\n".join(lines)


def architecture_lines() -> list[str]:
    """``ARCHITECTURE<TAB>MAPPER`` (or ``ARCHITECTURE<TAB>refused: reason``) per known architecture, sorted."""
    from hfkv.mappings.registry import known_architectures

    lines = []
    for arch, mapper in sorted(known_architectures().items(), key=lambda item: item[0].lower()):
        reason = mapper.refusal(arch)
        lines.append(f"{arch}\t{'refused: ' + reason if reason else mapper.name}")
    return lines


def replace_section(text: str, table: str) -> str:
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit("docs/coverage.md has no coverage markers")
    return pattern.sub(lambda _: f"{START}\n{table}\n{END}", text)


def write_doc(path: Path = DOC) -> None:
    """Rewrite the table between the markers of ``path`` (created with a header when missing)."""
    text = path.read_text() if path.is_file() else f"{HEADER}{START}\n{END}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(replace_section(text, coverage_markdown()))


def main() -> None:
    parser = argparse.ArgumentParser(description="Print or write what hfkv covers (docs/coverage.md).")
    parser.add_argument("--write", action="store_true", help="rewrite docs/coverage.md's coverage section")
    parser.add_argument("--architectures", action="store_true",
                        help="one line per known architecture: NAME<TAB>MAPPER or NAME<TAB>refused: reason")
    args = parser.parse_args()
    if args.architectures:
        print("\n".join(architecture_lines()))
    elif args.write:
        write_doc()
    else:
        print(coverage_markdown())


if __name__ == "__main__":
    main()
