"""hfkv/text.py: the one sanitiser of text hfkv did not write, in every output. Expected strings are
written out by hand from the rule: an unprintable character becomes its Python escape, a secret
``<token>``, then each output's own syntax is escaped."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hfkv import text

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = "evil/x\nInjected: 1\u202e\x00"  # a forged line, a right-to-left override, a NUL


def test_one_line_escapes_every_unprintable_character():
    assert text.one_line(HOSTILE) == "evil/x\\nInjected: 1\\u202e\\x00"
    assert text.one_line("org/Model-1.5_b") == "org/Model-1.5_b"  # a valid repo id is unchanged
    assert text.one_line("tab\there") == "tab\\there"  # a tab can misalign a terminal table


def test_lines_keeps_line_breaks_and_nothing_else():
    assert text.lines("# a\n\u202eb\r") == "# a\n\\u202eb\\r"


def test_markup_escapes_html_after_the_characters():
    assert text.markup('a<b>"&\'\u202e\n') == "a&lt;b&gt;&quot;&amp;&#x27;\\u202e\\n"


def test_markdown_cell():
    # backslash doubled first, then HTML, pipe and brackets escaped; spaces collapsed; one line
    assert text.markdown_cell("[x](http://e.example) | <b>") == "\\[x\\](http://e.example) \\| &lt;b&gt;"
    assert text.markdown_cell("a\\]b") == "a\\\\\\]b"  # a\]b: the user's backslash cannot undo ours
    assert text.markdown_cell("a  \u202e\nb") == "a \\\\u202e\\\\nb"  # the escapes shown, not interpreted


@pytest.mark.parametrize("cell, shown", [
    ("=1+1", "'=1+1"), ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\\tx"), ("\rx", "'\\rx"), ("-2", "'-2"),
    ("llama", "llama"), ("a=b", "a=b"),
])
def test_spreadsheet_cell(cell, shown):
    assert text.spreadsheet_cell(cell) == shown


def test_secrets_are_redacted_in_every_output_then_forgotten():
    secret = "hf_" + "s3cr3t" * 5
    text.add_secret(secret)
    try:
        for show in (text.one_line, text.lines, text.markup, text.markdown_cell, text.spreadsheet_cell):
            assert secret not in show(f"Bearer {secret}") and "&lt;token&gt;" in text.markup(secret)
        assert text.one_line(f"a {secret} b") == "a <token> b"
    finally:
        text.forget_secret(secret)
    assert text.one_line(secret) == secret
    text.add_secret("abc")  # shorter than 4: would mangle every message, never registered
    assert text.one_line("abcd") == "abcd"


def test_no_other_module_escapes_text_itself():
    """The rule lives here once: no other module of hfkv calls html.escape, str.isprintable or unicodedata."""
    found = []
    for path in [*(ROOT / "hfkv").rglob("*.py"), *(ROOT / "mappings").rglob("*.py")]:
        if path.name == "text.py" and path.parent.name == "hfkv":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            name = ast.unparse(node) if isinstance(node, (ast.Attribute, ast.Name)) else ""
            if name in ("html.escape", "unicodedata") or name.endswith(".isprintable"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    assert not found
