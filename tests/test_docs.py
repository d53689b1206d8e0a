"""The examples in docs/ are what the command prints today: every ``<!-- example -->`` console block of a
docs page is run through the CLI (offline, on the bundled fixtures) and compared line by line, as
tests/test_readme.py does for the README. ``python tests/test_docs.py`` writes the blocks anew."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = re.compile(r"(<!-- example -->\s*```console\n)(.*?)(```)", re.S)
PAGES = sorted((ROOT / "docs").glob("*.md"))


def blocks() -> list[tuple[Path, str]]:
    return [(page, m.group(2)) for page in PAGES for m in EXAMPLE.finditer(page.read_text(encoding="utf-8"))]


def command_of(body: str) -> list[str]:
    first = body.splitlines()[0]
    assert first.startswith("$ hfkv "), first
    return shlex.split(first[len("$ hfkv "):])


def printed(args: list[str]) -> list[str]:
    env = dict(os.environ, COLUMNS="100", HF_HUB_OFFLINE="1", NO_COLOR="1")
    env.pop("FORCE_COLOR", None)
    run = subprocess.run([sys.executable, "-m", "hfkv", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode in (0, 3), run.stderr  # 3: a verdict of "no" is an answer too
    return [line.rstrip() for line in run.stdout.rstrip("\n").splitlines()]


@pytest.mark.parametrize("page, body", blocks(), ids=lambda v: v.name if isinstance(v, Path) else v.splitlines()[0][:60])
def test_docs_example_prints_what_the_page_shows(page, body):
    expected = [line.rstrip() for line in body.splitlines()[1:]]
    assert printed(command_of(body)) == expected, f"{page.name}: run python tests/test_docs.py to write it anew"


def test_the_deployments_page_has_its_examples():
    assert sum(page.name == "deployments.md" for page, _ in blocks()) >= 2


if __name__ == "__main__":
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        new = EXAMPLE.sub(lambda m: m.group(1) + m.group(2).splitlines()[0] + "\n"
                          + "\n".join(printed(command_of(m.group(2)))) + "\n" + m.group(3), text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"wrote {page.relative_to(ROOT)}")
