"""Engine releases: which rule set a release's start-up arithmetic follows.

An engine is named ``NAME`` or ``NAME==VERSION`` (``vllm==0.22.1``, ``sglang==0.5.12``), as pip pins a
package; a bare name means the newest release hfkv models. Each engine keeps one table of rule sets,
``<engine>/releases.tsv``: a row per span of releases whose memory sizing is the same (``first``, the
first release of the span, inclusive; ``until``, the first release it does not cover), its ``label``
("0.20.2–0.26"), then one column per rule that differs between spans. The engine's ``rules.py`` names
the columns (a dataclass field per rule, its docstring citing the release's file and function) and their
parsers; this module finds the row. Versions are compared as versions (``packaging``), never as text:
``0.5.8.post1`` is inside 0.5.8–0.5.9, ``0.10.0`` comes after ``0.9.2``.

A release no row covers (older than the first, newer than the last ``until``) is a ``UsageError``
listing the spans; the newest row's ``until`` is the first release nobody has read yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import import_module
from pathlib import Path
from typing import Any, Callable

from packaging.version import InvalidVersion, Version

from hfkv.engines.tables import parse_rows
from hfkv.errors import UsageError

ENGINE_LABELS = {"vllm": "vLLM", "sglang": "SGLang"}
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Engine:
    """An engine mode as the user named it: ``name`` ("theory", "vllm", "sglang") and the release asked
    for (``version``; None: the newest modelled)."""

    name: str
    version: str | None = None

    @property
    def spec(self) -> str:
        """``NAME`` or ``NAME==VERSION``, as typed back on a command line."""
        return f"{self.name}=={self.version}" if self.version else self.name


def parse_engine(text: Any, known: tuple[str, ...] = ("auto", "theory", "sglang", "vllm")) -> Engine:
    """``NAME`` or ``NAME==VERSION`` -> ``Engine``; the version must be one a rule set covers. A
    ``UsageError`` names what is wrong (an unknown engine, a malformed or uncovered version)."""
    raw = str(text if text is not None else "theory").strip()
    name, sep, version = raw.partition("==")
    name = name.strip().lower()
    if name not in known:
        raise UsageError(f"--engine must be one of {', '.join(known)} (optionally NAME==VERSION, e.g. "
                         f"vllm==0.22.1); got {raw!r}")
    if not sep:
        return Engine(name)
    if name in ("auto", "theory"):
        raise UsageError(f"--engine {name} has no version: it is hfkv's own plan (give vllm==X or sglang==X)")
    version = version.strip()
    rule_set(name, version)  # refuses a version no rule set covers, with the list
    return Engine(name, version)


def split(spec: Any) -> tuple[str, str | None]:
    """(name, version or None) of an engine spec (``vllm==0.22.1`` -> ("vllm", "0.22.1"))."""
    engine = parse_engine(spec)
    return engine.name, engine.version


def as_version(text: str, engine: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise UsageError(f"{ENGINE_LABELS.get(engine, engine)} version {text!r} is not a release number "
                         "(e.g. 0.22.1, 0.5.8.post1)") from None


@dataclass(frozen=True)
class Span:
    """One span of an engine's releases that share their rules: a row of ``releases.tsv``, which the
    engine's ``RuleSet`` extends with a field per rule. It covers ``first`` ≤ version < ``until``."""

    first: str
    """First release of the span (inclusive)."""
    until: str
    """First release the span does not cover."""
    label: str
    """The span as said to a user ("0.20.1–0.25")."""
    newest: str
    """The release of the span whose code its rules were read from (what a bare engine name replays)."""

    def covers(self, version: Version) -> bool:
        # By release number alone: a pre-release, dev or post build (0.20.2rc1, 0.5.8.post1) carries the
        # rules of its release.
        return _release_key(Version(self.first)) <= _release_key(version) < _release_key(Version(self.until))


def _release_key(version: Version) -> tuple[int, ...]:
    """The release numbers padded to four places ("0.28" is 0.28.0)."""
    return (version.release + (0, 0, 0, 0))[:4]


def _release(cell: str) -> str:
    Version(cell)  # raises InvalidVersion (a ValueError) for anything else
    return cell


def _text(cell: str) -> str:
    if not cell.strip():
        raise ValueError("empty cell")
    return cell


SPAN_PARSERS: dict[str, Callable[[str], Any]] = {"first": _release, "until": _release, "label": _text,
                                                 "newest": _release}


@lru_cache(maxsize=None)
def rule_sets(engine: str) -> tuple[Any, ...]:
    """Every rule set of ``engine``, oldest first (its ``rules`` module's ``RuleSet`` records)."""
    module = import_module(f"hfkv.engines.{engine}.rules")
    rows = tuple(parse_rows(HERE / engine / "releases.tsv", {**SPAN_PARSERS, **module.PARSERS}, module.RuleSet))
    ordered = tuple(sorted(rows, key=lambda row: Version(row.first)))
    for before, after in zip(ordered, ordered[1:]):
        if Version(before.until) != Version(after.first):
            raise ValueError(f"{engine}/releases.tsv: {before.label} ends at {before.until} but the next set "
                             f"starts at {after.first}")
    return ordered


def newest(engine: str) -> str:
    """The newest release hfkv models for ``engine`` (the newest rule set's ``newest`` column)."""
    return rule_sets(engine)[-1].newest


def rule_set(engine: str, version: str | None = None) -> Any:
    """The rule set of ``engine`` at ``version`` (None: the newest modelled release); a version no set
    covers is a ``UsageError`` listing the spans."""
    sets = rule_sets(engine)
    if version is None:
        return sets[-1]
    wanted = as_version(str(version), engine)
    for row in sets:
        if row.covers(wanted):
            return row
    spans = ", ".join(row.label for row in sets)
    raise UsageError(f"{ENGINE_LABELS.get(engine, engine)} {version} is not covered by hfkv's rule sets "
                     f"({spans}; newest modelled {sets[-1].newest})")


def described(engine: str, version: str | None) -> str:
    """How an output names the rules it applied: "vLLM 0.22.1: rules of 0.20.2–0.25", or for a bare
    engine name "vLLM 0.34.0 (newest modelled)"."""
    rules = rule_set(engine, version)
    label = ENGINE_LABELS.get(engine, engine)
    if version is None:
        return f"{label} {rules.newest} (newest modelled)"
    if version == rules.label:  # a span of one release: its own rules
        return f"{label} {version}"
    return f"{label} {version}: rules of {rules.label}"
