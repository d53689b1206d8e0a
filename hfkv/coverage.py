"""The coverage table (docs/coverage.md), generated from the mapper registry.

    python -m hfkv.coverage            # print the table
    python -m hfkv.coverage --write    # rewrite docs/coverage.md's section between the coverage markers

A test fails when docs/coverage.md and the registry disagree.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

START, END = "<!-- coverage:start -->", "<!-- coverage:end -->"


def coverage_rows() -> list[tuple[str, str, str, str]]:
    """(model_type, family, mapper, fixture) for every registered model type, sorted by family then type."""
    from hfkv.mappings import all_mappers

    rows = []
    for mapper in all_mappers():
        for model_type in mapper.model_types:
            rows.append((model_type, mapper.family, mapper.name, mapper.fixtures.get(model_type, "")))
    return sorted(rows, key=lambda r: (r[1], r[0].lower()))


def coverage_markdown() -> str:
    lines = ["| model_type | family | mapper | fixture |", "|---|---|---|---|"]
    for model_type, family, mapper, fixture in coverage_rows():
        cell = f"`fixtures/{fixture}`" if fixture else "-"
        lines.append(f"| `{model_type}` | {family} | `{mapper}` | {cell} |")
    lines.append("")
    lines.append("Any other model type goes to the generic mapper (`generic.generic`), which reports from the "
                 "standard keys and lists in `warnings` the attention/cache keys it did not understand.")
    return "\n".join(lines)


def replace_section(text: str, table: str) -> str:
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit("docs/coverage.md has no coverage markers")
    return pattern.sub(lambda _: f"{START}\n{table}\n{END}", text)


DOC = Path(__file__).resolve().parents[1] / "docs" / "coverage.md"
HEADER = """# Coverage

Generated from the mapper registry (`python -m hfkv.coverage --write`); a test fails when this
table and the registry disagree.

"""


def write_doc(path: Path = DOC) -> None:
    """Rewrite the table between the markers of ``path`` (created with a header when missing)."""
    table = coverage_markdown()
    text = path.read_text() if path.is_file() else f"{HEADER}{START}\n{END}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(replace_section(text, table))


def main() -> None:
    parser = argparse.ArgumentParser(description="Print or write the coverage table (docs/coverage.md).")
    parser.add_argument("--write", action="store_true", help="rewrite docs/coverage.md's coverage section")
    args = parser.parse_args()
    if args.write:
        write_doc()
    else:
        print(coverage_markdown())


if __name__ == "__main__":
    main()
