"""``hfkv serve``: the calculator page (Gradio), the same app a Hugging Face Space runs (space/app.py).

A person types a Hub repo id (or drops a config.json), picks the KV dtype, TP, DP, a GPU preset and a
budget, and sees the report ``hfkv.render.html`` renders (verdict line, layers by kind, α/γ/S*, memory and
B_max per context, both engines' figures or their one-line refusal, warnings, SVG charts), a link
that reproduces the page (its query string) and the equivalent CLI command. The Compare tab puts
several models side by side.

Contract:
* The page reads Hub repos through one ``HubClient`` (endpoint and token from the server's
  environment: ``HF_ENDPOINT``, ``HF_TOKEN``); it never reads a path on the server (a model field
  that is not ``org/name[@rev]`` is refused), never shows the token, and shows every failure as the
  CLI's one line (``hfkv: error: …``), never a traceback. Uploaded files go through the same reader
  and the same 32 MiB limit as local files.
* ``Form`` (what the page asks) ↔ query string ↔ CLI command, with no Gradio involved, so the page
  logic is tested without a browser; ``report_page`` and ``compare_page`` return the HTML shown.
* Gradio is an optional extra (``hfkv[app]``), imported only by ``build_app``; telemetry is off, the
  server binds 127.0.0.1 unless told otherwise, and the page loads nothing from outside it.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlencode

import click

from hfkv.commands.cli import quiet_libraries
from hfkv.commands.options import DTYPES as CLI_DTYPES
from hfkv.commands.options import fail
from hfkv.errors import HfkvError, UsageError, one_line
from hfkv.render.svg import esc
from hfkv.units import parse_size, parse_token_list

MISSING_EXTRA = "install hfkv[app] for the web page (pip install 'hfkv[app]')"
DTYPES = tuple(CLI_DTYPES)  # --kv-cache-dtype's choices
ENGINES = ("sglang", "vllm")
NO_GPU = "(none)"
MAX_MODELS = 8  # models in one comparison: each is one Hub GET
_REPO = re.compile(r"[A-Za-z0-9][\w.\-]*/[\w.\-]+(@[\w.\-/]+)?")
# Query-string key of each Form field (short, stable: links people share).
QUERY_KEYS = {"model": "model", "kv_cache_dtype": "kv", "tp": "tp", "dp": "dp", "gpu": "gpu", "budget": "budget",
              "contexts": "context", "compare": "compare"}


@dataclass(frozen=True)
class Form:
    """What the page asks. Text as typed; ``options()`` and ``gpu_spec()`` validate it."""

    model: str = ""
    kv_cache_dtype: str = "auto"
    tp: int = 1
    dp: int = 1
    gpu: str = ""
    budget: str = ""
    contexts: str = ""
    compare: str = ""

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> "Form":
        """A form from a query string's parameters; unknown keys are ignored, bad numbers become 1."""
        values: dict[str, Any] = {}
        for name, key in QUERY_KEYS.items():
            if key in query and query[key] is not None:
                values[name] = str(query[key])[:2000]
        for name in ("tp", "dp"):
            values[name] = _whole(values.get(name, 1))
        if values.get("kv_cache_dtype") not in DTYPES:
            values.pop("kv_cache_dtype", None)
        return cls(**values)

    def cleaned(self) -> "Form":
        """Whitespace trimmed, ``(none)`` as no GPU, TP and DP whole numbers ≥ 1."""
        gpu = self.gpu.strip()
        return replace(self, model=self.model.strip(), gpu="" if gpu == NO_GPU else gpu, budget=self.budget.strip(),
                       contexts=self.contexts.strip(), compare=self.compare.strip(), tp=_whole(self.tp), dp=_whole(self.dp))

    def query_string(self) -> str:
        """``?model=…&tp=8`` with the fields that differ from the defaults (what reproduces the page)."""
        default = Form()
        pairs = [(QUERY_KEYS[f.name], getattr(self, f.name)) for f in fields(self)
                 if getattr(self, f.name) != getattr(default, f.name)]
        return "?" + urlencode(pairs) if pairs else ""

    def gpu_spec(self) -> str | None:
        """``NAME:COUNT`` for the serving plan: TP × DP GPUs of the preset (DP = replicas), or None."""
        return f"{self.gpu}:{self.tp * self.dp}" if self.gpu else None

    def cli_args(self) -> list[str]:
        """The report options as CLI flags (model not included)."""
        args = []
        if self.kv_cache_dtype != "auto":
            args += ["--kv-cache-dtype", self.kv_cache_dtype]
        if self.tp != 1:
            args += ["--tp", str(self.tp)]
        if self.gpu:
            args += ["--gpu", self.gpu_spec() or ""]
        if self.budget:
            args += ["--budget", self.budget]
        if self.contexts:
            args += ["--context", self.contexts]
        return args

    def cli_command(self, model: str | None = None) -> str:
        """The ``hfkv`` command that prints this report (``model`` replaces the typed one: an upload)."""
        return shlex.join(["hfkv", model or self.model or "MODEL", *self.cli_args()])

    def compare_command(self) -> str:
        return shlex.join(["hfkv", "compare", *self.compare_models(), *self.cli_args()])

    def compare_models(self) -> list[str]:
        """The models of the Compare tab: separated by commas, spaces or lines; duplicates dropped."""
        seen: dict[str, None] = {}
        for item in re.split(r"[\s,]+", self.compare):
            if item:
                seen.setdefault(item, None)
        return list(seen)

    def options(self) -> Any:
        """``hfkv.Options`` for this form; ``UsageError`` naming the field on a bad value."""
        from hfkv.model.options import make_options

        if self.kv_cache_dtype not in DTYPES:
            raise UsageError(f"KV dtype '{self.kv_cache_dtype}' is not one of {', '.join(DTYPES)}")
        return make_options(
            kv_cache_dtype=self.kv_cache_dtype, tensor_parallel_size=self.tp,
            budget_bytes=parse_size(self.budget) if self.budget else None,
            contexts=tuple(parse_token_list(self.contexts)) if self.contexts else None,
        )


def _whole(value: Any) -> int:
    """A whole number ≥ 1 from a form or query value (anything else: 1)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 1
    return max(1, int(number)) if number == number and abs(number) < 1e6 else 1


def hub_client() -> Any:
    """The server's ``HubClient``: endpoint, token and cache from its environment only."""
    from hfkv.sources.hub import HubClient

    return HubClient()


# -- pages ----------------------------------------------------------------------------------------


def error_html(message: str) -> str:
    return f'<div class="hfkv"><p class="error" id="hfkv-error">{esc(message)}</p></div>'


def _fail_line(err: BaseException) -> str:
    """The CLI's one line for a failure; a bug is still one line, with no detail that could leak."""
    if isinstance(err, HfkvError):
        return f"hfkv: error: {err}"
    return f"hfkv: error: internal error ({type(err).__name__}); please report it"


def links_html(form: Form, link: str | None, command: str) -> str:
    """The link that reproduces the page (None: an upload, which no link can carry), the equivalent
    command, and what the form left unused."""
    parts = [f'<p class="meta">Link to this page: <a id="hfkv-link" href="{esc(link or "?")}">{esc(link or "?")}</a></p>'
             if link is not None else '<p class="meta">No link to this page: an uploaded config is not kept.</p>',
             f'<p class="meta">Same figures on the command line: <code id="hfkv-cli">{esc(command)}</code> '
             "(engine figures: add <code>--engine sglang</code> or <code>--engine vllm</code>)</p>"]
    if form.dp > 1 and not form.gpu:
        parts.append(f'<p class="meta warning">DP {form.dp} is not used: replicas are counted on a GPU preset '
                     "(TP × DP GPUs of it)</p>")
    return "".join(parts)


def load_model(form: Form, hub: Any, upload: str | None) -> Any:
    """The config to report on: the uploaded file when given, else the Hub repo ``form.model``."""
    from hfkv.sources import load_local, split_revision

    if upload:
        name = Path(upload).name  # the file as dropped; the server's temporary folder is not shown
        try:
            return replace(load_local(upload), name=name)
        except HfkvError as err:
            err.source = name
            raise
    if not form.model:
        raise UsageError("type a Hub repo id (org/name) or drop a config.json")
    if not _REPO.fullmatch(form.model):
        raise UsageError(f"'{one_line(form.model)}' is not a Hub repo id (org/name or org/name@revision)")
    repo, revision = split_revision(form.model)
    return (hub or hub_client()).load_config(repo, revision=revision)


def engine_figures(report: Any, gpu: str | None) -> dict[str, dict[str, Any] | str]:
    """Each engine's own figures (``hfkv.planning.enrich`` with ``engine=``), or its one-line refusal."""
    from hfkv.planning.enrich import enrich

    serving, figures = report.extra.get("serving"), {}
    for name in ENGINES:
        try:
            enrich(report, gpu=gpu, engine=name)
            figures[name] = report.extra.pop("engine")
        except Exception as err:  # an engine that refuses the model says why, in one line
            figures[name] = _fail_line(err).removeprefix("hfkv: error: ")
        finally:
            report.extra.pop("engine", None)
    if serving is None:
        report.extra.pop("serving", None)  # engine mode plans a budget; the theory page had none
    else:
        report.extra["serving"] = serving
    return figures


def build_report(form: Form, hub: Any, upload: str | None = None) -> tuple[Any, dict[str, Any]]:
    """(report with weights and serving plan, engine figures) for the form, as ``hfkv MODEL`` builds it."""
    from hfkv.planning.enrich import enrich
    from hfkv.inspection import inspect_loaded

    options = form.options()
    hub = hub or (None if upload else hub_client())  # one client for the config and the weights
    loaded = load_model(form, hub, upload)
    report = inspect_loaded(loaded, options, hub=hub)
    enrich(report, gpu=form.gpu_spec())
    return report, engine_figures(report, form.gpu_spec())


def report_page(form: Form, hub: Any = None, upload: str | None = None) -> tuple[str, str]:
    """(HTML shown on the Report tab, JSON report text); an error is one line in the HTML, JSON empty."""
    from hfkv.render.html import report_section
    from hfkv.render.terminal import to_json

    form = form.cleaned()
    try:
        report, engines = build_report(form, hub, upload)
        command = form.cli_command(Path(upload).name if upload else None)
        body = links_html(form, None if upload else form.query_string(), command) + report_section(report, engines=engines)
        return f'<div class="hfkv">{body}</div>', to_json(report)
    except Exception as err:  # never a traceback on the page: the CLI's one line
        return error_html(_fail_line(err)), ""


def compare_page(form: Form, hub: Any = None) -> str:
    """The Compare tab: the comparison table, one sentence per pair, both charts; failures one line each."""
    form = form.cleaned()
    models = form.compare_models()
    if len(models) < 2 or len(models) > MAX_MODELS:
        return error_html(f"hfkv: error: give 2 to {MAX_MODELS} Hub repo ids to compare, got {len(models)}")
    try:
        return _comparison(form, models, hub)
    except Exception as err:  # never a traceback on the page: the CLI's one line
        return error_html(_fail_line(err))


def _comparison(form: Form, models: list[str], hub: Any) -> str:
    from hfkv.planning.compare import all_pairs
    from hfkv.render.compare import footnotes, pair_line, table_rows, unique_labels
    from hfkv.render.html import cell, charts, table

    options = form.options()
    reports, names, errors = _collect(models, form, options, hub)
    parts = [f'<p class="error">{esc(line)}</p>' for line in errors]
    if reports:
        budget = options.budget_bytes
        rows = ([cell(title)] + [cell(c, num=True) for c in cells] for title, cells in table_rows(reports, budget))
        labels = unique_labels(names)
        parts += [table([""] + labels, rows, attrs=' class="compare"'),
                  *(f'<p class="meta">{esc(n)}</p>' for n in footnotes(reports)),
                  '<ul class="pairs">', *(f"<li>{esc(pair_line(v, reports, labels))}</li>" for v in all_pairs(reports, budget)),
                  '</ul><div class="charts">', *charts(reports, labels, budget), "</div>"]
    link = replace(form, model="").query_string()
    return f'<div class="hfkv">{links_html(form, link, form.compare_command())}{"".join(parts)}</div>'


def _collect(models: list[str], form: Form, options: Any, hub: Any) -> tuple[list[Any], list[str], list[str]]:
    """Reports on the union of the models' default contexts (so the columns line up), their names,
    and one error line per model that failed."""
    from hfkv.inspection import inspect_loaded

    loaded, errors = [], []
    for model in models:
        try:
            cfg = load_model(replace(form, model=model), hub, None)
            loaded.append((model, cfg, inspect_loaded(cfg, options)))
        except Exception as err:
            errors.append(_fail_line(err))
    if options.contexts is None and loaded:
        union = tuple(sorted({c.tokens for _, _, r in loaded for c in r.contexts}))
        shared = options.model_copy(update={"contexts": union})
        loaded = [(m, cfg, inspect_loaded(cfg, shared)) for m, cfg, _ in loaded]
    return [r for _, _, r in loaded], [m for m, _, _ in loaded], errors


# -- the Gradio app -------------------------------------------------------------------------------


def import_gradio() -> Any:
    """gradio with its telemetry off (set before the import, which reads it); ImportError without the extra."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    import gradio

    return gradio


def build_app(hub: Any = None) -> Any:
    """The Gradio ``Blocks`` of the page. ``hub``: a ``HubClient`` (default: from the environment)."""
    from hfkv.planning import gpus

    gr = import_gradio()
    hub = hub or hub_client()
    with gr.Blocks(title="hfkv: KV cache calculator", analytics_enabled=False) as app:
        gr.Markdown("## hfkv: exact KV cache and state memory, from a model's config.json\n"
                    "Bytes per token (α), per request (γ), and how many requests fit, for every kind of attention "
                    "and state; plus what SGLang 0.5.23 and vLLM 0.33.0 allocate.")
        with gr.Row():
            model = gr.Textbox(label="Hub repo id", placeholder="org/name or org/name@revision", elem_id="hfkv-model", scale=3)
            upload = gr.File(label="or drop a config.json", file_types=[".json"], type="filepath", elem_id="hfkv-upload",
                             height=150)
        with gr.Row():
            kv = gr.Dropdown(list(DTYPES), value="auto", label="KV dtype", elem_id="hfkv-kv")
            tp = gr.Number(1, precision=0, minimum=1, label="TP (tensor parallel)", elem_id="hfkv-tp")
            dp = gr.Number(1, precision=0, minimum=1, label="DP (replicas)", elem_id="hfkv-dp")
            gpu = gr.Dropdown([NO_GPU, *gpus.names()], value=NO_GPU, label="GPU preset", elem_id="hfkv-gpu")
            budget = gr.Textbox(label="KV budget per GPU", placeholder="e.g. 60GiB", elem_id="hfkv-budget")
            contexts = gr.Textbox(label="contexts", placeholder="4k,32k,128k", elem_id="hfkv-contexts")
        with gr.Tabs() as tabs:
            with gr.Tab("Report", id="report"):
                go = gr.Button("Report", variant="primary", elem_id="hfkv-go")
                shown = gr.HTML(elem_id="hfkv-report")
                with gr.Accordion("JSON report", open=False):
                    as_json = gr.Code(language="json", elem_id="hfkv-json")
            with gr.Tab("Compare", id="compare"):
                many = gr.Textbox(label="Hub repo ids, one per line", lines=4, elem_id="hfkv-compare")
                go_many = gr.Button("Compare", variant="primary", elem_id="hfkv-go-compare")
                compared = gr.HTML(elem_id="hfkv-compared")
        knobs = [kv, tp, dp, gpu, budget, contexts]

        def on_report(m, f, *values):
            return report_page(_form(m, "", *values), hub, f)

        def on_compare(text, *values):
            return compare_page(_form("", text, *values), hub)

        def on_load(request):
            query = dict(request.query_params or {})
            if not any(key in query for key in QUERY_KEYS.values()):
                return tuple(gr.skip() for _ in range(12))  # a plain visit: leave what the person typed alone
            form = Form.from_query(query)
            report, data = report_page(form, hub) if form.model else (gr.skip(), gr.skip())
            comparison = compare_page(form, hub) if form.compare else gr.skip()
            selected = "compare" if form.compare and not form.model else "report"
            return (form.model, form.kv_cache_dtype, form.tp, form.dp, form.gpu or NO_GPU, form.budget, form.contexts,
                    "\n".join(form.compare_models()), report, data, comparison, gr.Tabs(selected=selected))

        # Gradio finds the request argument by its type hint, resolved in this module's globals, where
        # gradio is not imported (it is optional): give the hint as the class itself.
        on_load.__annotations__ = {"request": gr.Request}
        go.click(on_report, [model, upload, *knobs], [shown, as_json], api_name="report")
        model.submit(on_report, [model, upload, *knobs], [shown, as_json], api_name=False)
        go_many.click(on_compare, [many, *knobs], [compared], api_name="compare")
        app.load(on_load, None, [model, *knobs, many, shown, as_json, compared, tabs], api_name=False)
    return app


def _form(model: str, compare: str, kv: str, tp: Any, dp: Any, gpu: str, budget: str, contexts: str) -> Form:
    return Form(model=model or "", compare=compare or "", kv_cache_dtype=kv or "auto", tp=_whole(tp), dp=_whole(dp),
                gpu=gpu or "", budget=budget or "", contexts=contexts or "")


def launch_options() -> dict[str, Any]:
    """What ``launch`` needs besides host and port: the report style sheet, bounded uploads, no share link."""
    from hfkv.render.html import STYLE
    from hfkv.sources import MAX_CONFIG_BYTES

    # Uploads past hfkv's own limit are refused by hfkv's reader (one line); Gradio's bound is a backstop.
    return {"css": STYLE, "max_file_size": 2 * MAX_CONFIG_BYTES, "share": False, "show_error": False}


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (0.0.0.0 exposes the page).")
@click.option("--port", type=click.IntRange(1, 65535), default=7860, show_default=True, help="Port to bind.")
def serve_command(host: str, port: int) -> None:
    """Serve the calculator page (needs hfkv[app]). Hub access uses HF_ENDPOINT and HF_TOKEN."""

    quiet_libraries()
    try:
        import_gradio()
    except ImportError:
        fail(MISSING_EXTRA, 2)
    build_app().launch(server_name=host, server_port=port, **launch_options())


if __name__ == "__main__":  # python -m hfkv.commands.serve [--host H] [--port P]: the same as hfkv serve
    serve_command()
