"""The page's three tabs as HTML: Report, Compare and Plan (no Gradio here).

Each tab builds what the matching command builds, from the same pieces, so the command it prints gives
the same figures (tests/web/test_page.py runs every printed command and compares the JSON):

* Report: ``hfkv MODEL …`` (``inspect_loaded`` then ``enrich``: hfkv's exact count, each engine named
  where it differs) and, side by side, ``hfkv MODEL … --engine vllm`` and ``… --engine sglang``: each
  engine's own verdict line, or its refusal in its own words. Verdict lines are
  ``hfkv.planning.verdict``'s, printed as they are.
* Compare: ``hfkv compare A B …`` (the Hub repos fetched in parallel under the request's one deadline,
  then the dropped config files, read as the CLI reads a file), and on a GPU each engine's verdict per
  model (``hfkv compare … --engine vllm|sglang``); the chart of requests served draws each model in its
  own budget, and only a model whose verdict is "fits".
* Plan: ``hfkv plan MODEL …`` (``hfkv.api.plan``): the best layout, the alternatives, why the others
  were dropped, each with its verdict line and the command that prints it.

Every page function returns (HTML, JSON text) and never raises: a failure is one line,
``hfkv: error: …`` (``serve_access.failure_line``), and every text goes through the request's
``Scrubber`` (no endpoint, host, server path or token).

Each request's work is a module-level function of its tab (``_report_work``, ``_compare_work``,
``_plan_work``) run in a worker process by ``serve_work`` (killed at the deadline, its memory bounded).
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from concurrent.futures import wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from hfkv.commands.serve_access import (NOT_VISIBLE, Deadline, DeadlineExceeded, PageError, Scrubber, Session,
                                        Settings, failure_line)
from hfkv.commands.serve_form import ENGINES, MAX_MODELS, Form, check_repo
from hfkv.commands.serve_work import error_html, page_work, run_page
from hfkv.errors import HfkvError, UnsupportedModelError, shorten
from hfkv.text import one_line
from hfkv.text import markup

if TYPE_CHECKING:  # for annotations only: no import at run time
    from hfkv.model.report import Report

ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "both": "vLLM and SGLang"}
NO_VERDICT = "no verdict: pick a GPU preset (or give a KV budget) to see how many requests this engine serves"
SHOWN_LAYOUTS = 10  # alternatives listed after the best layout, as hfkv plan prints them
SHOWN_DROPPED = 40
# warm's model: a small Llama (Meta-Llama-3.1-8B's shape), read as an upload is
WARM_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
               "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
               "num_key_value_heads": 8, "max_position_embeddings": 131072, "vocab_size": 128256,
               "torch_dtype": "bfloat16"}
def _answer(settings: Settings, token: str | None, what: str, work: Callable[..., tuple[str, str]],
            args: tuple, paths: tuple[str, ...] = ()) -> tuple[str, str]:
    """(HTML, JSON) of ``work(session, deadline, *args)`` under the request's deadline with its own Hub
    session, in a worker (``serve_work.run_page``); a failure is one line; everything scrubbed here, in
    the server's process."""
    deadline = Deadline(settings.deadline)
    scrub = Scrubber(settings, token=token, paths=paths)
    try:
        html, data = run_page(settings, token, what, deadline, work, args)
    except Exception as err:  # never a traceback on the page: one line
        html, data = error_html(failure_line(err, deadline=settings.deadline, what=what)), ""
    return scrub(html), scrub(data)


def warm() -> None:
    """In the workers' parent, once (``serve_work.PRELOAD``): a page of each tab on an uploaded config, so
    that every worker starts with what a first request fills (lazy imports, hfkv's caches): a missing
    repo's line took 264 ms in a cold worker, 3 ms in a warm process (measured). Uploads only: no Hub
    fetch, no thread started (a fork copies a held lock)."""
    with tempfile.TemporaryDirectory(prefix="hfkv-warm-") as folder:
        path = Path(folder) / "config.json"
        path.write_text(json.dumps(WARM_CONFIG))
        form = Form(gpu="H200-141GB", requests=8, plan_context="8k", max_gpus=1, plan_kv="fp8").cleaned()
        for work, args in ((_report_work, (form, str(path), path.name)), (_plan_work, (form, str(path), path.name)),
                           (_compare_work, (form, [], [str(path), str(path)], ["a.json", "b.json"]))):
            page_work(work, args, Settings(work_folder=folder), None, "", Deadline(60))


def load_upload(path: str, name: str | None = None) -> Any:
    """An uploaded ``config.json`` through the CLI's local reader (same limits), named as it was dropped
    (or ``name``; the server's temporary folder is not shown) and without its folder (nothing else is
    read there)."""
    from hfkv.sources import load_local

    name = name or Path(path).name
    if not Path(path).is_file():
        raise PageError(f"hfkv: error: {shorten(one_line(name))}: an upload is read once, then deleted: drop the file "
                        "again")
    try:
        loaded = load_local(path)
    except HfkvError as err:
        err.source = name
        raise
    return dataclasses.replace(loaded, name=name, folder=None)


def _load(session: Session, form: Form, upload: str | None) -> tuple[Any, dict[str, Any] | None]:
    if upload:
        return load_upload(upload), None
    return session.load(form.model)


def _inspect(loaded: Any, options: Any, checkpoint: dict[str, Any] | None) -> Any:
    """``inspect_loaded`` with the checkpoint's weights already fetched (what ``inspect_loaded(…, hub=)``
    attaches), so one fetch serves every report of the request."""
    from hfkv.inspection import inspect_loaded
    from hfkv.model.weights import attach as attach_weights

    report = inspect_loaded(loaded, options)
    return attach_weights(report, checkpoint) if checkpoint else report


def _plan(report: Report, form: Form, engine: str) -> Any:
    """``report`` planned as the CLI's deployment options plan it (``commands.deploy.Deployment.apply``)."""
    from hfkv.planning.enrich import enrich

    return enrich(report, gpu=form.gpu_spec(), engine=engine, max_model_len=form.max_length(),
                  engine_knobs=form.knobs())


def _planned(form: Form, engine: str) -> bool:
    """Whether ``engine`` plans the form's reports, as the CLI's deployment options decide it."""
    from hfkv.commands.deploy import Deployment

    return Deployment(gpu=form.gpu_spec(), engine=engine).planned


def own_engine() -> str:
    """The engine mode ``hfkv MODEL …`` and ``hfkv compare …`` use without ``--engine`` (the CLI's default),
    so that the page's own column is what its printed command prints."""
    from hfkv.commands.deploy import Deployment

    return Deployment().engine


# -- links and commands ---------------------------------------------------------------------------


def links_html(link: str | None, command: str, *, note: str = "") -> str:
    """The link that reproduces the tab (None: an upload, which no link can carry) and its command."""
    parts = [f'<p class="meta">Link to this page: <a id="hfkv-link" href="{markup(link or "?")}">{markup(link or "?")}</a></p>'
             if link is not None else '<p class="meta">No link to this page: an uploaded config is not kept.</p>',
             f'<p class="meta">Same figures on the command line: <code id="hfkv-cli">{markup(command)}</code>{note}</p>']
    return "".join(parts)


def _token_note(session: Session) -> str:
    return (" (with <code>HF_TOKEN</code> set to a token that can read the repo)" if session.visitor_token else "")


def _engine_title(name: str) -> str:
    from hfkv.engines.versions import newest

    return f"{ENGINE_NAMES[name]} {newest(name)}"


def _verdict_cell(name: str, outcome: Any, cell_id: str) -> str:
    """One engine's verdict: its line (``serving.verdict``), or its refusal in its own words."""
    if isinstance(outcome, BaseException):
        words = outcome.message if isinstance(outcome, HfkvError) else type(outcome).__name__
        kind = "refused" if isinstance(outcome, UnsupportedModelError) else "error"
        return (f'<td class="verdict failed" id="{markup(cell_id)}" data-status="{kind}">'
                f"{markup(ENGINE_NAMES[name])} {kind}: {markup(one_line(words))}</td>")
    serving = (outcome.extra.get("serving") or {}) if outcome is not None else {}
    line = serving.get("verdict") or NO_VERDICT
    status = (serving.get("verdict_detail") or {}).get("status") or "none"
    failed = " failed" if status in ("does-not-fit", "refused") else ""
    return f'<td class="verdict{failed}" id="{markup(cell_id)}" data-status="{markup(status)}">{markup(line)}</td>'


# -- Report -----------------------------------------------------------------------------------------


def build_reports(form: Form, loaded: Any, checkpoint: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
    """(hfkv's report, {engine: its report, or the error it refused with}), as ``hfkv MODEL …`` and
    ``hfkv MODEL … --engine NAME`` build them."""
    options = form.options()
    theory = _plan(_inspect(loaded, options, checkpoint), form, own_engine())
    engines: dict[str, Any] = {}
    for name in ENGINES:
        try:
            engines[name] = _plan(_inspect(loaded, options, checkpoint), form, name)
        except HfkvError as err:  # the engine refuses the model or the layout: its words, in its column
            engines[name] = err
    return theory, engines


def engine_figures(engines: dict[str, Any]) -> dict[str, dict[str, Any] | str]:
    """``render.html.engines_section``'s input: each engine's figures, or its one-line reason."""
    return {name: (f"{type(r).__name__ if not isinstance(r, HfkvError) else r.message}" if isinstance(r, BaseException)
                   else r.extra.get("engine") or "no figures")
            for name, r in engines.items()}


def verdicts_html(form: Form, model: str, engines: dict[str, Any]) -> str:
    """vLLM and SGLang side by side: each engine's verdict line (or refusal) and the command that prints it."""
    head = "<tr><th></th>" + "".join(f"<th>{markup(_engine_title(n))}</th>" for n in engines) + "</tr>"
    verdicts = "<tr><td>verdict</td>" + "".join(_verdict_cell(n, r, f"hfkv-verdict-{n}") for n, r in engines.items()) + "</tr>"
    commands = ("<tr><td>same on the command line</td>" + "".join(
        f'<td><code id="hfkv-cli-{n}">{markup(form.report_command(model, n))}</code></td>' for n in engines) + "</tr>")
    return (f'<h2>Each engine\'s own verdict</h2><table class="verdicts"><thead>{head}</thead>'
            f"<tbody>{verdicts}{commands}</tbody></table>")


def report_page(form: Form, settings: Settings, *, upload: str | None = None, token: str | None = None) -> tuple[str, str]:
    """(HTML of the Report tab, the JSON ``hfkv MODEL … --format json`` prints); an error is one line."""
    form = form.cleaned()
    name = Path(upload).name if upload else None
    return _answer(settings, token, name or form.model, _report_work, (form, upload, name),
                   paths=(str(Path(upload).parent),) if upload else ())


def _report_work(session: Session, deadline: Deadline, form: Form, upload: str | None,
                 name: str | None) -> tuple[str, str]:
    """The Report tab's work (``report_page``), in its worker."""
    from hfkv.render.html import report_section

    form.check()
    loaded, checkpoint = _load(session, form, upload)
    theory, engines = build_reports(form, loaded, checkpoint)
    body = (verdicts_html(form, name or form.model, engines)
            + links_html(None if upload else form.query_string("report"), form.report_command(name),
                         note=_token_note(session))
            + report_section(theory, engines=engine_figures(engines)))
    return f'<div class="hfkv">{body}</div>', json.dumps(theory.to_dict(), indent=2)


# -- Compare ----------------------------------------------------------------------------------------


def _fetch_all(session: Session, models: list[str], deadline: Deadline) -> dict[str, Any]:
    """{model: (loaded, checkpoint) or the exception}: every model fetched at once, under one deadline
    (a model still unanswered at the deadline is a ``DeadlineExceeded``)."""
    futures = {m: session.submit(session.load, m) for m in models}
    wait(list(futures.values()), timeout=deadline.fetch_left())
    out: dict[str, Any] = {}
    for model, future in futures.items():
        if not future.done():
            future.cancel()
            out[model] = DeadlineExceeded()
        elif future.exception() is not None:
            out[model] = future.exception()
        else:
            out[model] = future.result()
    return out


def collect(form: Form, fetched: dict[str, Any], engine: str, settings: Settings) -> tuple[Any, dict[str, Any]]:
    """(``planning.compare.Collected``, {model: its report, or its one error line}) as
    ``hfkv compare A B … [--engine NAME]`` collects them: the union of the default contexts, each model
    planned on the deployment (a model the engine refuses is an error, the others stay)."""
    from hfkv.planning.compare import Collected
    from hfkv.render.compare import unique_labels

    options = form.options()
    planned = _planned(form, engine)
    out, per_model, done = Collected(), {}, []

    def inspect(model: str, loaded: Any, checkpoint: Any, opts: Any, plan: bool) -> Any:
        try:
            report = _inspect(loaded, opts, checkpoint if plan else None)
            return _plan(report, form, engine) if plan else report
        except HfkvError as err:
            out.errors.append({"model": model, "error": err.row_text()})
            per_model[model] = err
            return None

    for model, got in fetched.items():
        if isinstance(got, BaseException):
            per_model[model] = got
            # A config hfkv cannot read (an upload, or the Hub's file): the CLI's words; a Hub failure or
            # the deadline: the page's own line only, which names nothing of the server.
            said = got.row_text() if isinstance(got, HfkvError) else "could not be read"
            out.errors.append({"model": model, "error": said})
            continue
        now = options.contexts is not None
        report = inspect(model, *got, options, planned and now)
        if report is not None:
            done.append((model, got, report))
    if options.contexts is None and done:
        union = tuple(sorted({c.tokens for _, _, r in done for c in r.contexts}))
        shared = options.model_copy(update={"contexts": union})
        done = [(m, got, inspect(m, *got, shared, planned)) for m, got, _ in done]
    done = [(m, got, r) for m, got, r in done if r is not None]
    per_model.update((m, r) for m, _, r in done)
    out.reports = [r for _, _, r in done]
    out.labels = unique_labels([m for m, _, _ in done])
    return out, {m: per_model[m] for m in fetched}


def upload_names(paths: Sequence[str]) -> list[str]:
    """The names of dropped files as the page and its command call them: as dropped, a repeated name
    numbered (``config.json``, ``config-2.json``: most dropped configs share that name)."""
    names: list[str] = []
    for path in paths:
        name = Path(path).name
        stem, suffix = Path(name).stem, Path(name).suffix
        k = 2
        while name in names:
            name, k = f"{stem}-{k}{suffix}", k + 1
        names.append(name)
    return names


def _read_uploads(paths: Sequence[str], names: list[str]) -> dict[str, Any]:
    """{name: (loaded, None) or the exception}: each dropped file read as ``hfkv compare`` reads a file."""
    out: dict[str, Any] = {}
    for path, name in zip(paths, names):
        try:
            out[name] = (load_upload(path, name), None)
        except Exception as err:  # one line for that file, the others compared
            out[name] = err
    return out


def compare_page(form: Form, settings: Settings, *, uploads: Sequence[str] = (),
                 token: str | None = None) -> tuple[str, str]:
    """(HTML of the Compare tab, the JSON ``hfkv compare … --format json`` prints): the typed Hub repo ids,
    then the dropped config files (``uploads``: their paths on the server)."""
    form = form.cleaned()
    models = form.compare_models()
    names = upload_names(uploads)
    count = len(models) + len(names)
    if count < 2 or count > MAX_MODELS:
        return error_html(f"hfkv: error: give 2 to {MAX_MODELS} Hub repo ids or config.json files to compare, "
                          f"got {count}"), ""

    return _answer(settings, token, "", _compare_work, (form, models, list(uploads), names),
                   paths=tuple(str(Path(u).parent) for u in uploads))


def _compare_work(session: Session, deadline: Deadline, form: Form, models: list[str], uploads: list[str],
                  names: list[str]) -> tuple[str, str]:
    """The Compare tab's work (``compare_page``), in its worker."""
    form.check()
    for model in models:
        check_repo(model)
    fetched = _fetch_all(session, models, deadline)
    fetched.update(_read_uploads(uploads, names))
    return _comparison(form, fetched, session.settings, session, names)


def _comparison(form: Form, fetched: dict[str, Any], settings: Settings, session: Session,
                uploads: list[str]) -> tuple[str, str]:
    from hfkv.planning.compare import all_pairs
    from hfkv.render.compare import footnotes, pair_line, ranking_lines, table_rows, to_json, verdict_lines

    out, per_model = collect(form, fetched, own_engine(), settings)
    budget = form.options().budget_bytes
    pairs = all_pairs(out.reports, budget)
    parts = [links_html(None if uploads else form.query_string("compare"), form.compare_command(uploads=uploads),
                        note=_token_note(session) + _uploads_note(uploads))]
    parts += [f'<p class="error">{markup(failure_line(got, deadline=settings.deadline, what=model))}</p>'
              for model, got in per_model.items() if isinstance(got, BaseException)]
    if out.reports:
        from hfkv.render.html import cell, table

        rows = ([cell(title)] + [cell(c, num=True) for c in cells] for title, cells in table_rows(out.reports, budget))
        parts += [table([""] + out.labels, rows, attrs=' class="compare"'),
                  *(f'<p class="meta">{markup(n)}</p>' for n in footnotes(out.reports)),
                  *(f'<p class="meta verdict-line">{markup(n)}</p>' for n in verdict_lines(out) + ranking_lines(out)),
                  '<ul class="pairs">', *(f"<li>{markup(pair_line(v, out.reports, out.labels))}</li>" for v in pairs),
                  "</ul>"]
        if form.gpu:
            parts.append(_engines_per_model(form, fetched, settings, uploads))
        parts += ['<div class="charts">', *_compare_charts(out, budget, planned=bool(form.gpu)), "</div>"]
    return f'<div class="hfkv">{"".join(parts)}</div>', to_json(out, pairs)


def _uploads_note(uploads: list[str]) -> str:
    return (" (the dropped files saved under these names in the current folder)" if uploads else "")


def _compare_charts(out: Any, budget: int | None, *, planned: bool) -> list[str]:
    """Memory per request, then the requests that fit: on a deployment the requests each model serves in
    its own budget after its own weights (``render.compare.served_chart``: the figures of the table and
    the JSON), else B_max in the given budget (the same for every model)."""
    from hfkv.render.compare import served_chart
    from hfkv.render.html import charts

    drawn = charts(out.reports, out.labels, budget)
    if planned and drawn:  # [memory, B_max in one budget, note]: the B_max chart would use the first model's
        return [drawn[0], served_chart(out), *drawn[2:]]
    return drawn


def _engines_per_model(form: Form, fetched: dict[str, Any], settings: Settings, uploads: list[str]) -> str:
    """On the deployment: each engine's verdict for each model (``hfkv compare … --engine NAME``)."""
    per_engine = {name: collect(form, fetched, name, settings)[1] for name in ENGINES}
    head = "<tr><th>model</th>" + "".join(f"<th>{markup(_engine_title(n))}</th>" for n in ENGINES) + "</tr>"
    rows = []
    for k, model in enumerate(m for m, got in fetched.items() if not isinstance(got, BaseException)):
        cells = "".join(_verdict_cell(name, per_engine[name][model], f"hfkv-compare-{name}-{k}") for name in ENGINES)
        rows.append(f"<tr><td>{markup(model)}</td>{cells}</tr>")
    commands = ("<tr><td>same on the command line</td>" + "".join(
        f'<td><code id="hfkv-cli-compare-{n}">{markup(form.compare_command(n, uploads))}</code></td>'
        for n in ENGINES) + "</tr>")
    return (f"<h2>Each engine's own verdict on {markup(form.gpu_spec() or '')}</h2>"
            f'<table class="verdicts"><thead>{head}</thead><tbody>{"".join(rows)}{commands}</tbody></table>')


# -- Plan -------------------------------------------------------------------------------------------


def plan_page(form: Form, settings: Settings, *, upload: str | None = None, token: str | None = None) -> tuple[str, str]:
    """(HTML of the Plan tab, the JSON ``hfkv plan … --format json`` prints)."""
    form = form.cleaned()
    name = Path(upload).name if upload else None
    return _answer(settings, token, name or form.model, _plan_work, (form, upload, name),
                   paths=(str(Path(upload).parent),) if upload else ())


def _plan_work(session: Session, deadline: Deadline, form: Form, upload: str | None,
               name: str | None) -> tuple[str, str]:
    """The Plan tab's work (``plan_page``), in its worker."""
    asked = form.plan_request()
    found = _search(session, form, upload, name, asked)
    body = plan_html(found) + links_html(None if upload else form.query_string("plan"), form.plan_command(name),
                                         note=_token_note(session))
    return f'<div class="hfkv">{body}</div>', json.dumps(found.to_dict(), indent=2)


def _search(session: Session, form: Form, upload: str | None, name: str | None, asked: dict[str, Any]) -> Any:
    """``hfkv.api.plan`` on the uploaded file or the Hub repo (through the request's session)."""
    from hfkv.api import plan

    if upload:
        found = plan(upload, **asked)
        return _renamed(found, upload, name or "config.json")
    repo, revision = session.check(form.model)
    # api.plan reads a path when one exists under that name: a repo id never names the server's files.
    text = form.model if revision else f"{form.model}@main"
    if Path(text).exists():
        raise PageError(f"hfkv: error: {shorten(one_line(form.model))}: {NOT_VISIBLE}")
    try:
        return plan(text, hub=session.client(), **asked)
    except PageError:
        raise
    except HfkvError as err:
        from hfkv.errors import SourceError

        if isinstance(err, SourceError) and err.source in (repo, text):
            raise PageError(session.line(err, repo)) from None
        raise


def _renamed(found: Any, path: str, name: str) -> Any:
    """The search of an uploaded file, naming the file as dropped (its commands too), not its server path."""
    fix = lambda o: dataclasses.replace(o, command=o.command.replace(path, name))  # noqa: E731
    found.model = name
    found.kept = [fix(o) for o in found.kept]
    found.dropped = [fix(o) for o in found.dropped]
    return found


def plan_html(found: Any) -> str:
    """The best layout (fewest GPUs), the alternatives by requests per GPU, the layouts that hold them only
    within the reserve's band, and why every other layout was dropped; each with its verdict and command."""
    from hfkv.units import format_tokens

    asked = f"{found.requests:,} requests of {format_tokens(found.context)} tokens on {found.gpu}"
    parts = []
    best = found.best
    if best is None:
        closest = max(found.dropped, key=lambda o: o.requests or 0, default=None)
        parts.append(f'<p class="headline failed" id="hfkv-plan-best">does NOT fit: no layout of up to '
                     f"{found.max_gpus} GPUs tried holds {markup(asked)}</p>")
        if closest is not None and closest.requests:
            parts.append(f'<p class="meta">closest: {closest.layout.gpus} GPUs, {markup(closest.layout.describe())} '
                         f"({markup(ENGINE_NAMES[closest.layout.engine])}): {markup(closest.reason)}</p>"
                         f'<p><code id="hfkv-plan-closest-cli">{markup(closest.command)}</code></p>')
    else:
        parts.append(f'<p class="headline" id="hfkv-plan-best">{best.layout.gpus} × {markup(found.gpu)} hold '
                     f"{found.requests:,} requests of {format_tokens(found.context)} tokens: "
                     f"{markup(best.layout.describe())} ({markup(ENGINE_NAMES[best.layout.engine])})</p>"
                     f'<p class="verdict-line" id="hfkv-plan-verdict">{markup(best.verdict or "")}</p>'
                     f'<p><code id="hfkv-plan-best-cli">{markup(best.command)}</code></p>')
        rows = [_outcome_row(o) for o in found.kept[:SHOWN_LAYOUTS + 1]]
        parts.append(f"<h2>Layouts that hold them ({len(found.kept)} of {len(found.kept) + len(found.dropped)} tried)"
                     f'</h2><table class="plan"><thead><tr><th>GPUs</th><th>engine</th><th>layout</th><th>requests</th>'
                     f"<th>per GPU</th><th>verdict</th><th>command</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")
        if len(found.kept) > SHOWN_LAYOUTS + 1:
            parts.append(f'<p class="meta">{len(found.kept) - SHOWN_LAYOUTS - 1} more in the JSON</p>')
    marginal = [o for o in found.dropped if o.status == "marginal"]
    if marginal:
        parts.append(f'<p class="meta">{len(marginal)} more hold them only within the reserve\'s estimate band</p>')
    if found.dropped:
        counts: dict[str, int] = {}
        for o in found.dropped:
            counts[o.status] = counts.get(o.status, 0) + 1
        summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        rows = [_outcome_row(o, reason=True) for o in found.dropped[:SHOWN_DROPPED]]
        parts.append(f"<details><summary>{len(found.dropped)} layouts dropped ({markup(summary)}): why</summary>"
                     f'<table class="dropped"><thead><tr><th>GPUs</th><th>engine</th><th>layout</th><th>requests</th>'
                     f"<th>per GPU</th><th>why</th><th>command</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
                     + (f'<p class="meta">{len(found.dropped) - SHOWN_DROPPED} more in the JSON</p>'
                        if len(found.dropped) > SHOWN_DROPPED else "") + "</details>")
    return "".join(parts)


def _outcome_row(o: Any, *, reason: bool = False) -> str:
    requests = "-" if o.requests is None else f"{o.requests:,}"
    said = o.reason if reason else (o.verdict or "")
    return (f"<tr><td class=\"num\">{o.layout.gpus}</td><td>{markup(ENGINE_NAMES[o.layout.engine])}</td>"
            f"<td>{markup(o.layout.describe())}</td><td class=\"num\">{requests}</td>"
            f"<td class=\"num\">{o.requests_per_gpu:,.1f}</td><td>{markup(said)}</td><td><code>{markup(o.command)}</code></td></tr>")
