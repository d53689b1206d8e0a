"""A start-up log explained, as text: what was read, the figures the log prints, and the comparisons
(``hfkv.planning.explain.Explanation``), or its JSON. Renders only: every figure is computed before."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from hfkv.planning.explain import ENGINE_NAMES
from hfkv.render.terminal import console_for, print_table, terminal_text

if TYPE_CHECKING:  # for annotations only: no import at run time
    from hfkv.planning.explain import Explanation

_ARGS_SHOWN = 12  # arguments printed on the "args" line; --format json lists every one


def to_json(explanation: Explanation) -> str:
    """The explanation as JSON (docs/json.md, "hfkv log"): every key always present."""
    return json.dumps(explanation.to_dict(), indent=2, ensure_ascii=False, default=repr)


def read_lines(explanation: Explanation) -> list[str]:
    """What was read, one fact a line: engine and version (and how told), model, GPU, layout, args."""
    log = explanation.log
    version = log.version or (explanation.assumed or "unknown")
    out = [f"engine: {ENGINE_NAMES[log.engine]} {version} ({log.version_evidence})"]
    if explanation.model:
        out.append(f"model: {explanation.model}" + (f" (the log names {log.model})" if log.model and log.model !=
                                                   explanation.model else ""))
    else:
        out.append(f"model: {log.model or 'not named'}: {explanation.model_error}")
    if log.gpu:
        out.append(f"GPU: {log.gpu}" + (f" × {log.gpu_count}" if log.gpu_count else ""))
    layout = [f"{name} {value}" for name, value in (("TP", log.tensor_parallel_size), ("PP", log.pipeline_parallel_size),
                                                    ("DP", log.data_parallel_size), ("max_model_len", log.max_model_len))
              if value is not None]
    if layout:
        out.append("layout: " + ", ".join(layout))
    if log.args:
        shown = [f"{k}={v!r}" for k, v in list(log.args.items())[:_ARGS_SHOWN]]
        more = len(log.args) - len(shown)
        out.append("args: " + ", ".join(shown) + (f", … and {more} more (--format json lists them)" if more else ""))
    if explanation.options or explanation.knobs:
        used = {**explanation.options, **explanation.knobs}
        out.append("checked with: " + ", ".join(f"{k}={v}" for k, v in used.items()))
    return out


def figure_rows(explanation: Explanation) -> list[list[str]]:
    """One row per figure read (arguments left out: the "args" line has them)."""
    return [[str(f.line), f.rank or "", f.field, f.printed if f.printed is not None else str(f.value)]
            for f in explanation.log.figures if f.field != "args"]


def comparison_rows(explanation: Explanation, check: str = "exact") -> list[list[str]]:
    """One row per comparison of ``check`` ("exact": the two exact checks; "prediction": the budget)."""
    return [[c.term, c.printed or "—", c.computed or "—", c.difference or "—", c.status, c.reason]
            for c in explanation.comparisons if c.check == check]


def answer_rows(explanation: Explanation) -> list[list[str]]:
    return [[a.question, a.answer, a.source, a.how] for a in explanation.answers]


_COMPARED = [("term", False), ("printed", True), ("hfkv", True), ("difference", True), ("status", False),
             ("reason", False)]


def render(explanation: Explanation, console: Any = None) -> None:
    """The explanation on the terminal: what was read, the figures, the comparisons, the notes."""
    console = console_for(console)
    for line in read_lines(explanation):
        console.print(terminal_text(line), soft_wrap=True)
    print_table(console, "figures the log prints", [("line", True), ("rank", False), ("field", False),
                                                    ("printed", True)], figure_rows(explanation))
    exact, predicted = comparison_rows(explanation), comparison_rows(explanation, "prediction")
    if exact:
        print_table(console, "printed against computed", _COMPARED, exact)
    if predicted:
        title = f"the whole budget: {(explanation.budget or {}).get('release', '')}, {explanation.gpu or ''}"
        print_table(console, title, _COMPARED, predicted)
    if explanation.answers:
        print_table(console, "answers", [("question", False), ("answer", True), ("source", False), ("how", False)],
                    answer_rows(explanation))
    if not (exact or predicted) and explanation.model_error is None:
        console.print(terminal_text("nothing to compare: the log prints no KV memory and no weights"))
    for note in (*explanation.log.notes, *explanation.notes):
        console.print(terminal_text(f"note: {note}"), soft_wrap=True)
