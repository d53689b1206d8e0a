"""The Gradio app of the calculator page, its hardening, and ``serve`` (what ``hfkv serve`` and the Space run).

The page is a public service (docs/security.md, "The web page"). Besides what ``serve_access`` does for
Hub access, this module makes Gradio itself keep to it:

* No URL is fetched but the configured Hub's: ``Guard`` (ASGI middleware) answers 403 to
  ``/gradio_api/file=<url>`` and ``/proxy=<url>`` (Gradio would fetch the URL and stream it back), and
  400 to any request whose JSON carries a file (``FileData``) whose path is a URL or lies outside
  Gradio's upload folder (Gradio would download the URL into its cache, or log a traceback), before
  Gradio sees it. The run history (which can upload runs to a Hub bucket, and keeps inputs in the browser), MCP,
  SSR and monitoring are off; telemetry is off before Gradio is imported.
* Uploads are read, then deleted (the file, its folder, Gradio's record of it, and no empty file left
  behind as Gradio's file box leaves one per file); uploads never sent are deleted within
  ``CACHE_SWEEP`` seconds; Gradio's whole temporary folder is the server's own
  (``GRADIO_TEMP_DIR``) and removed when it stops, with the requests' Hub caches (``_server_folder``).
  The upload limit is hfkv's own config limit (``hfkv.sources.MAX_CONFIG_BYTES``, 32 MiB).
* The token box's value lives only in its request: Gradio keeps each session's last inputs in memory
  (``SessionState``), so every handler drops its session when it is done (the page keeps no state).
* Requests are served ``Settings.concurrency`` at a time (one queue for the three tabs), each under
  its deadline, its work in a worker process (``serve_work``) started by ``serve`` and stopped with
  it; the queue is bounded, and its bookkeeping of finished sessions is swept (Gradio keeps
  it for every API call otherwise: memory grew by 3.6 kB a request).
* ``serve``: a busy port is one line, found before Gradio is imported; Gradio is imported without the
  work it does only for its developers (rewriting its ``.pyi`` stubs on every import: ~1 s of CPU
  here) and without IPython (a notebook helper), so the first page answers within about 2-3 s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import importlib.abc
import importlib.machinery
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import unquote

import click

from hfkv.commands.serve_access import Settings
from hfkv.commands.serve_form import (DEFAULT_PLAN_GPU, DTYPES, MAX_MODELS, MAX_PLAN_GPUS, NO_GPU, PLAN_DTYPES,
                                      PLAN_ENGINES, QUERY_KEYS, Form, whole)

# hfkv is not on the package index yet: 'pip install hfkv[app]' fails there; the README's command works
MISSING_EXTRA = ("the web page needs the app extra (Gradio): pip install -e '.[app]' in a checkout of hfkv "
                 "(pip install 'hfkv[app]' once hfkv is released)")
# Gradio's queue keeps each event's timings for its monitoring dashboard (off here) up to
# GRADIO_ANALYTICS_MAX_EVENTS, 10,000 by default: ~0.7 kB a request until then (tracemalloc), the
# slope benchmarks/web_memory.py measured. The page keeps the last few.
ANALYTICS_EVENTS = 256
CACHE_SWEEP = 300  # seconds: Gradio deletes files it holds (uploads never sent) older than this, this often
QUEUE_PER_WORKER = 16  # requests waiting per request served at once; past that the queue is full
SWEEP_SECONDS = 5  # how often the queue's finished sessions are forgotten (_sweep_sessions)
MAX_JSON_BODY = 1 << 20  # a request's JSON (the page's fields) is a few kB; an upload goes through /upload
PAGE_CSS = """
.hfkv table.verdicts td { max-width: 32em; } .hfkv td.verdict { font-weight: 600; }
.hfkv td.verdict.failed { color: #a00000; --body-text-color: #a00000; background: #fff0f0; }
.hfkv table.plan td, .hfkv table.dropped td { font-size: 0.92em; }
"""
HEADER = ("## hfkv: exact KV cache and state memory, from a model's config.json\n"
          "Bytes per token (α), per request (γ), how many requests fit, and what vLLM {vllm} and SGLang {sglang} "
          "would allocate on your GPUs, each with its own verdict. Only `config.json` and the Hub's parameter counts "
          "are read: never weights, never repo code.")


# -- importing Gradio -----------------------------------------------------------------------------


class _NoStubRewrite(importlib.abc.MetaPathFinder):
    """Loads ``gradio.component_meta`` with ``create_or_modify_pyi`` made a no-op.

    Gradio calls it for every component class it defines: it reads and parses the class's source
    file and rewrites the ``.pyi`` stub beside it when they differ, type hints for Gradio's developers
    that change nothing at run time (and that would write into the installed package). It is most of
    the import's CPU time: 3.1 s → 2.1 s of user time here (docs/web.md)."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "gradio.component_meta":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, run = spec.loader, spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            module.create_or_modify_pyi = lambda *args, **kwargs: None

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def import_gradio(*, lean: bool = False) -> Any:
    """gradio with its telemetry off (set before the import, which reads it) and its per-event
    timings bounded (``ANALYTICS_EVENTS``); ``ImportError`` without the extra. ``lean`` (the server's
    own process only): without IPython, which Gradio imports for notebooks only. A value the operator
    set in the environment is kept."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("GRADIO_ANALYTICS_MAX_EVENTS", str(ANALYTICS_EVENTS))
    if "gradio" not in sys.modules and not any(isinstance(f, _NoStubRewrite) for f in sys.meta_path):
        sys.meta_path.insert(0, _NoStubRewrite())
    if lean and "IPython" not in sys.modules:
        sys.modules["IPython"] = None  # type: ignore[assignment]  # ImportError, which Gradio handles
    import gradio

    return gradio


# -- the guard ----------------------------------------------------------------------------------------


def _url_like(text: str) -> bool:
    text = text.strip().lower()
    return "://" in text or text.startswith("//") or text.startswith("\\\\")


class Guard:
    """ASGI middleware: the server fetches no URL on a visitor's behalf (see the module docstring)."""

    def __init__(self, app: Any, upload_folder: str | None = None) -> None:
        self.app = app
        self.upload_folder = upload_folder

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path") or ""
        raw = unquote((scope.get("raw_path") or b"").decode("latin-1"))
        for text in (path, raw, unquote(raw)):
            for marker in ("/file=", "/file/", "/proxy="):
                if marker in text and _url_like(text.split(marker, 1)[1]):
                    await _refuse(send, 403, "this page fetches no URL but the Hub's")
                    return
        headers = dict(scope.get("headers") or [])
        if scope.get("method") == "POST" and b"json" in headers.get(b"content-type", b""):
            body, more = b"", True
            while more:
                message = await receive()
                body += message.get("body", b"")
                more = message.get("more_body", False)
                if len(body) > MAX_JSON_BODY:
                    await _refuse(send, 413, "request too large")
                    return
            problem = self.file_problem(body)
            if problem:
                await _refuse(send, 400, problem)
                return
            await self._forward(scope, _replay(body), send)
            return
        await self._forward(scope, receive, send)

    async def _forward(self, scope: dict, receive: Callable, send: Callable) -> None:
        """The request, on to Gradio; a request Gradio fails on (an event index or API name it does not
        have: KeyError, FnIndexInferError) is one line in the log, not the traceback the server printed,
        and one JSON line for the client. The log names the error's kind only: the path is the visitor's."""
        started = False

        async def sending(message: dict) -> None:
            nonlocal started
            started = started or message.get("type") == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as err:  # noqa: BLE001 - whatever Gradio raised, one line
            click.echo(f"hfkv: refused a request ({scope.get('method')}): Gradio failed on it "
                       f"({type(err).__name__})", err=True)
            if not started:
                await _refuse(send, 500, "the page could not take this request")

    def file_problem(self, body: bytes) -> str | None:
        """Why the JSON ``body`` may not go on (a file whose ``path``, what Gradio reads or downloads, is a
        URL or lies outside the upload folder), or None. A file's ``url`` is what the browser shows it
        under; Gradio reads it only for apps loaded from another Space, which this page never is."""
        try:
            data = json.loads(body)
        except ValueError:
            return None  # not JSON: Gradio answers it
        folder = os.path.realpath(self.upload_folder or _upload_folder())
        stack = [data]
        while stack:
            item = stack.pop()
            if isinstance(item, list):
                stack += item
            elif isinstance(item, dict):
                if "path" in item or "url" in item:
                    value = item.get("path")
                    if isinstance(value, str) and _url_like(value):
                        return "files are accepted as uploads only, never as a URL"
                    if not isinstance(value, str) or not value or not _inside(value, folder):
                        return "files are accepted as uploads only"
                stack += list(item.values())
        return None


def _inside(path: str, folder: str) -> bool:
    real = os.path.realpath(path)
    return real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)


def _upload_folder() -> str:
    return os.environ.get("GRADIO_TEMP_DIR") or str(Path(tempfile.gettempdir()) / "gradio")


async def _refuse(send: Callable, status: int, message: str) -> None:
    body = json.dumps({"error": f"hfkv: {message}"}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _replay(body: bytes) -> Callable:
    sent = False

    async def receive() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


# -- the app ------------------------------------------------------------------------------------------


FIELDS = tuple(QUERY_KEYS)  # Form fields, in the order the handlers receive them


def form_of(values: dict[str, Any]) -> Form:
    """A Form from the components' values (None as the default, numbers as whole numbers)."""
    defaults = Form()
    given = {}
    for name in FIELDS:
        value = values.get(name)
        if value is None:
            continue
        if name in ("tp", "dp", "pp", "max_gpus"):
            value = whole(value)
        elif name == "requests":
            value = whole(value, 0)
        elif name in ("dp_attention", "ep"):
            value = bool(value)
        else:
            value = str(value)
        given[name] = value
    return Form(**{**{f: getattr(defaults, f) for f in FIELDS}, **given})


def build_app(settings: Settings | None = None) -> Any:
    """The Gradio ``Blocks`` of the page. ``settings``: Hub access, deadline and concurrency (default:
    from the environment, ``Settings.from_env``)."""
    from hfkv.engines.versions import newest
    from hfkv.planning import gpus

    gr = import_gradio()
    settings = settings or Settings.from_env()
    presets = gpus.names()
    with gr.Blocks(title="hfkv: KV cache calculator", analytics_enabled=False,
                   delete_cache=(CACHE_SWEEP, CACHE_SWEEP)) as app:
        gr.Markdown(HEADER.format(vllm=newest("vllm"), sglang=newest("sglang")))  # the releases modelled
        with gr.Row():
            model = gr.Textbox(label="Hub repo id", placeholder="org/name or org/name@revision", elem_id="hfkv-model",
                               scale=3)
            upload = gr.File(label="or drop a config.json", file_types=[".json"], type="filepath", elem_id="hfkv-upload",
                             height=150)
            token = gr.Textbox(label="Hub token, for gated or private repos (optional)", type="password",
                               placeholder="hf_…: used for this request only, sent only to the Hub",
                               elem_id="hfkv-token", scale=2)
        with gr.Row():
            gpu = gr.Dropdown([NO_GPU, *presets], value=NO_GPU, label="GPU preset", elem_id="hfkv-gpu")
            kv = gr.Dropdown(list(DTYPES), value="auto", label="KV dtype", elem_id="hfkv-kv")
            tp = gr.Number(1, precision=0, minimum=1, label="TP (tensor parallel)", elem_id="hfkv-tp")
            dp = gr.Number(1, precision=0, minimum=1, label="DP (data parallel)", elem_id="hfkv-dp")
            pp = gr.Number(1, precision=0, minimum=1, label="PP (pipeline stages)", elem_id="hfkv-pp")
            with gr.Column(min_width=160):
                dpa = gr.Checkbox(label="DP attention (SGLang)", elem_id="hfkv-dpa")
                ep = gr.Checkbox(label="EP (expert parallel)", elem_id="hfkv-ep")
        with gr.Row():
            budget = gr.Textbox(label="KV budget per GPU (instead of a GPU)", placeholder="e.g. 60GiB",
                                elem_id="hfkv-budget")
            contexts = gr.Textbox(label="contexts", placeholder="4k,32k,128k", elem_id="hfkv-contexts")
            max_len = gr.Textbox(label="max model len", placeholder="e.g. 32k (engine default)", elem_id="hfkv-max-len")
            gmu = gr.Textbox(label="vLLM gpu_memory_utilization", placeholder="0.92", elem_id="hfkv-gmu")
            mfs = gr.Textbox(label="SGLang mem_fraction_static", placeholder="engine's rule", elem_id="hfkv-mfs")
        with gr.Tabs() as tabs:
            with gr.Tab("Report", id="report"):
                go = gr.Button("Report", variant="primary", elem_id="hfkv-go")
                shown = gr.HTML(elem_id="hfkv-report")
                with gr.Accordion("JSON report", open=False):
                    as_json = gr.Code(language="json", elem_id="hfkv-json")
            with gr.Tab("Compare", id="compare"):
                with gr.Row():
                    many = gr.Textbox(label=f"Hub repo ids, one per line (2 to {MAX_MODELS} models in all)", lines=4,
                                      elem_id="hfkv-compare", scale=3)
                    many_files = gr.File(label="and/or drop config.json files", file_count="multiple",
                                         file_types=[".json"], type="filepath", elem_id="hfkv-compare-upload",
                                         height=150, scale=2)
                go_many = gr.Button("Compare", variant="primary", elem_id="hfkv-go-compare")
                compared = gr.HTML(elem_id="hfkv-compared")
                with gr.Accordion("JSON comparison", open=False):
                    compared_json = gr.Code(language="json", elem_id="hfkv-compare-json")
            with gr.Tab("Plan", id="plan"):
                gr.Markdown("The fewest GPUs, and the layouts, that hold N requests of S tokens of the model above "
                            "(every layout tried in each engine's own budget).")
                with gr.Row():
                    requests = gr.Number(64, precision=0, minimum=1, label="requests", elem_id="hfkv-requests")
                    plan_context = gr.Textbox("32k", label="context per request", elem_id="hfkv-plan-context")
                    plan_gpu = gr.Dropdown(presets, value=DEFAULT_PLAN_GPU, label="GPU", elem_id="hfkv-plan-gpu")
                    plan_engine = gr.Radio(list(PLAN_ENGINES), value="both", label="engines", elem_id="hfkv-plan-engine")
                    max_gpus = gr.Number(8, precision=0, minimum=1, maximum=MAX_PLAN_GPUS, label="max GPUs",
                                         elem_id="hfkv-max-gpus")
                    plan_kv = gr.Radio(list(PLAN_DTYPES), value="both", label="KV dtypes tried", elem_id="hfkv-plan-kv")
                go_plan = gr.Button("Plan", variant="primary", elem_id="hfkv-go-plan")
                planned = gr.HTML(elem_id="hfkv-planned")
                with gr.Accordion("JSON plan", open=False):
                    planned_json = gr.Code(language="json", elem_id="hfkv-plan-json")

        _harden(upload, gr)
        _harden(many_files, gr)
        components = dict(model=model, kv_cache_dtype=kv, tp=tp, dp=dp, pp=pp, dp_attention=dpa, ep=ep, gpu=gpu,
                          budget=budget, contexts=contexts, max_model_len=max_len, gpu_memory_utilization=gmu,
                          mem_fraction_static=mfs, compare=many, requests=requests, plan_context=plan_context,
                          plan_gpu=plan_gpu, plan_engine=plan_engine, max_gpus=max_gpus, plan_kv=plan_kv)
        inputs = [components[name] for name in FIELDS]
        _one_line_checks(app, [upload, many_files, token, *inputs], gr)
        handlers = Handlers(app, (upload, many_files), settings)

        def on_report(request: Any, up: Any, secret: Any, *values: Any) -> tuple:
            shown_ = handlers.run(request, up, lambda path: _report(form_of(dict(zip(FIELDS, values))), settings,
                                                                    path, secret))
            return (*shown_, None if up else gr.skip())  # the upload, read and deleted, leaves the box

        def on_compare(request: Any, ups: Any, secret: Any, *values: Any) -> tuple:
            shown_ = handlers.run(request, ups, lambda paths: _compare(form_of(dict(zip(FIELDS, values))), settings,
                                                                       secret, paths))
            return (*shown_, None if ups else gr.skip())  # the files, read and deleted, leave the box

        def on_plan(request: Any, up: Any, secret: Any, *values: Any) -> tuple:
            shown_ = handlers.run(request, up, lambda path: _plan(form_of(dict(zip(FIELDS, values))), settings, path,
                                                                  secret))
            return (*shown_, None if up else gr.skip())

        def on_load(request: Any) -> tuple:
            query = dict(getattr(request, "query_params", None) or {})
            keep = tuple(gr.skip() for _ in range(len(FIELDS) + 7))
            if not any(key in query for key in QUERY_KEYS.values()):
                return handlers.run(request, None, lambda _: keep)  # a plain visit: leave what the person typed
            form = Form.from_query(query).cleaned()

            def fill(_: Any) -> tuple:
                report = _report(form, settings, None, None) if form.tab == "report" and form.model else (gr.skip(),) * 2
                comparison = _compare(form, settings, None, ()) if form.compare else (gr.skip(),) * 2
                plan = _plan(form, settings, None, None) if form.tab == "plan" else (gr.skip(),) * 2
                values = tuple(_shown(form, name) for name in FIELDS)
                return (*values, *report, *comparison, *plan, gr.Tabs(selected=form.tab))

            return handlers.run(request, None, fill)

        # Gradio finds the request argument by its type hint, resolved in this module's globals, where
        # gradio is not imported (it is optional): give the hint as the class itself.
        for fn in (on_report, on_compare, on_plan, on_load):
            fn.__annotations__ = {"request": gr.Request}
        shared = {"concurrency_id": "page", "concurrency_limit": settings.concurrency}
        go.click(on_report, [upload, token, *inputs], [shown, as_json, upload], api_name="report", **shared)
        model.submit(on_report, [upload, token, *inputs], [shown, as_json, upload], api_name=False, **shared)
        go_many.click(on_compare, [many_files, token, *inputs], [compared, compared_json, many_files],
                      api_name="compare", **shared)
        go_plan.click(on_plan, [upload, token, *inputs], [planned, planned_json, upload], api_name="plan", **shared)
        app.load(on_load, None, [*inputs, shown, as_json, compared, compared_json, planned, planned_json, tabs],
                 api_name=False, **shared)
    app.queue(default_concurrency_limit=settings.concurrency, max_size=settings.concurrency * QUEUE_PER_WORKER)
    return app


def _harden(upload: Any, gr: Any) -> None:
    """The file box, minus two of Gradio's ways: each file it passes on leaves an empty temporary file
    behind in Gradio's folder (``File._process_single_file`` opens one and drops it), and a file it
    refuses prints a traceback. Here it passes the uploaded path on as it is, and refuses in one line."""
    from gradio.utils import NamedString

    def single(data: Any) -> Any:
        path = str(getattr(data, "path", "") or "")
        if not path.lower().endswith(".json"):
            _delete_upload(path)
            raise gr.Error("drop a .json file (a config.json)", print_exception=False)
        return NamedString(path)

    def preprocess(payload: Any, _original: Callable = upload.preprocess) -> Any:
        try:
            return _original(payload)
        except gr.Error as err:
            _delete_payload(payload)  # a box of several files: the others would wait for the sweep
            raise gr.Error(str(err.message), print_exception=False) from None
        except Exception:
            _delete_payload(payload)
            raise gr.Error("files are accepted as uploads only", print_exception=False) from None

    upload._process_single_file = single
    upload.preprocess = preprocess


def _one_line_checks(app: Any, fields: list[Any], gr: Any) -> None:
    """Gradio's own checks of a request's values (a value not among a dropdown's choices, a number that is
    not one, too few values, a file that is not a file's description) fail before any handler runs, and
    Gradio printed each one's traceback (two, chained, for a field) to the server's log. Here each is one
    line in the log and one for the visitor, naming the field but never its value: what a visitor typed
    does not go into the operator's log."""
    for field in fields:
        _name_field_failures(field, gr)
    original = app.preprocess_data

    async def preprocess_data(block_fn: Any, inputs: list[Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return await original(block_fn, inputs, *args, **kwargs)
        except Exception as err:
            said = _refusal(err, gr)
            click.echo(f"hfkv: refused a request ({block_fn.name}): {said}", err=True)
            raise gr.Error(said, print_exception=False) from None

    app.preprocess_data = preprocess_data


def _name_field_failures(field: Any, gr: Any) -> None:
    """A value ``field`` cannot take fails in one line naming the field (its label), never the value."""
    original = field.preprocess
    name = str(getattr(field, "label", None) or type(field).__name__)

    def preprocess(payload: Any) -> Any:
        try:
            return original(payload)
        except gr.Error as err:
            if not err.print_exception:  # the page's own words already (a refused upload)
                raise
        except Exception:  # noqa: BLE001 - Gradio's TypeError, ValueError, pydantic's ValidationError
            pass
        raise gr.Error(f"{name}: not a value this field takes", print_exception=False) from None

    field.preprocess = preprocess


def _refusal(err: Exception, gr: Any) -> str:
    """The one line of a request Gradio's checks refused: the page's own words when they are (they name no
    value), else what kind of request it was."""
    if isinstance(err, gr.Error) and not err.print_exception:
        return str(err.message)
    if isinstance(err, ValueError) and "input values" in str(err):
        return "the request has fewer values than the page has fields"
    return f"the request's values are not the page's fields ({type(err).__name__})"


def _delete_payload(payload: Any) -> None:
    """Delete every uploaded file a refused payload names (one file, or a list of them)."""
    items = getattr(payload, "root", payload)
    for item in items if isinstance(items, list) else [items]:
        path = getattr(item, "path", None)
        if isinstance(path, str) and path:
            _delete_upload(path)


def _shown(form: Form, name: str) -> Any:
    value = getattr(form, name)
    if name == "gpu":
        return value or NO_GPU
    if name == "compare":
        return "\n".join(form.compare_models())
    return value


def _report(form: Form, settings: Settings, upload: str | None, token: Any) -> tuple[str, str]:
    from hfkv.commands.serve_pages import report_page

    return report_page(form, settings, upload=upload, token=str(token or "") or None)


def _compare(form: Form, settings: Settings, token: Any, uploads: Any) -> tuple[str, str]:
    from hfkv.commands.serve_pages import compare_page

    return compare_page(form, settings, uploads=list(uploads or ()), token=str(token or "") or None)


def _plan(form: Form, settings: Settings, upload: str | None, token: Any) -> tuple[str, str]:
    from hfkv.commands.serve_pages import plan_page

    return plan_page(form, settings, upload=upload, token=str(token or "") or None)


class Handlers:
    """What every handler does around its page: the uploads deleted once read, the session forgotten."""

    def __init__(self, app: Any, uploads: tuple[Any, ...], settings: Settings) -> None:
        self.app, self.uploads, self.settings = app, uploads, settings

    def run(self, request: Any, upload: Any, page: Callable[[Any], Any]) -> Any:
        """``page`` given the upload as the box passes it: a path or None (one file), a list of paths
        (a box of several)."""
        paths = [str(u) for u in (upload if isinstance(upload, list) else [upload]) if u]
        try:
            return page(paths if isinstance(upload, list) else (paths[0] if paths else None))
        finally:
            for path in paths:
                self.discard(path)
            self.forget(request)

    def discard(self, path: str) -> None:
        """Delete an upload that was read: the file, its folder when empty, Gradio's record of it."""
        _delete_upload(path)
        records = [getattr(self.app, "upload_file_set", None)] + [getattr(u, "temp_files", None) for u in self.uploads]
        for files in records:
            if files is not None:
                files.discard(path)

    def forget(self, request: Any) -> None:
        """Drop this session's state: Gradio keeps each session's last inputs (the token box too)."""
        holder = getattr(self.app, "state_holder", None)
        session = getattr(request, "session_hash", None)
        if holder is None or session is None:
            return
        with holder.lock:
            holder.session_data.pop(session, None)
            holder.time_last_used.pop(session, None)


def _delete_upload(path: str) -> None:
    """Delete an uploaded file and its folder when empty, inside Gradio's upload folder only."""
    folder = os.path.realpath(_upload_folder())
    if not _inside(path, folder):
        return
    try:
        os.remove(path)
        parent = os.path.dirname(os.path.realpath(path))
        if parent != folder and _inside(parent, folder) and not os.listdir(parent):
            os.rmdir(parent)
    except OSError:
        pass


async def _sweep_sessions(app: Any) -> None:
    """Forget the queue's bookkeeping of sessions that have nothing left to receive.

    Gradio keeps, per session, a message queue (at most 2,000, the oldest dropped) and the set of its
    pending events, an entry it empties but never removes once the session's last result is delivered,
    unless the browser disconnects first; a client of the page's API (``/gradio_api/call/…``) makes a
    new session for each call, so both grew with every request (3.6 kB each, measured). Every
    ``SWEEP_SECONDS`` the sessions with no pending event and no undelivered message are dropped; a
    later request of the same session makes them again. Runs on the server's event loop, between two
    of its awaits, like every other access to them."""
    import asyncio

    while True:
        await asyncio.sleep(SWEEP_SECONDS)
        queue = getattr(app.get_blocks(), "_queue", None)
        if queue is None:
            continue
        pending, messages = queue.pending_event_ids_session, queue.pending_messages_per_session
        for session in [s for s, ids in list(pending.items()) if not ids]:
            waiting = messages.get(session)
            if waiting is None or waiting.empty():
                pending.pop(session, None)
                messages.pop(session, None)


def _lifespan(app: Any) -> Any:
    """The page's own part of the server's life: the session sweep (``_sweep_sessions``)."""
    import asyncio

    @contextlib.asynccontextmanager
    async def run(app: Any) -> Any:
        task = asyncio.create_task(_sweep_sessions(app))
        try:
            yield
        finally:
            task.cancel()

    return run(app)


def launch_options(settings: Settings | None = None) -> dict[str, Any]:
    """What ``launch`` needs besides host and port: the report style sheet, bounded uploads, no share
    link, no run history, MCP, SSR or monitoring, the guard, and the session sweep."""
    from starlette.middleware import Middleware

    from hfkv.render.html import STYLE
    from hfkv.sources import MAX_CONFIG_BYTES

    return {"css": STYLE + PAGE_CSS, "max_file_size": MAX_CONFIG_BYTES, "share": False, "show_error": False,
            "run_history": False, "mcp_server": False, "ssr_mode": False, "pwa": False, "enable_monitoring": False,
            "footer_links": ["api"], "state_session_capacity": 64,
            "app_kwargs": {"middleware": [Middleware(Guard)], "lifespan": _lifespan}}


# -- serving ------------------------------------------------------------------------------------------


class PortBusy(Exception):
    pass


def check_port(host: str, port: int) -> None:
    """``PortBusy`` (one line) when ``host:port`` cannot be bound, before anything slow happens."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            sock.bind((host, port))
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                raise PortBusy(f"port {port} on {host} is already in use; stop what listens there or pick "
                               "another with --port") from None
            raise PortBusy(f"cannot listen on {host}:{port} ({err.strerror or type(err).__name__})") from None


def serve(host: str, port: int, settings: Settings | None = None) -> None:
    """Serve the page on ``host:port`` until interrupted (what ``hfkv serve`` and the Space run). Exits
    with one line: 1 when the port cannot be used, 2 without the ``hfkv[app]`` extra."""
    from hfkv.commands.options import fail
    from hfkv.commands.serve_work import start_workers

    try:
        check_port(host, port)
    except PortBusy as err:
        fail(str(err), 1)
    with _server_folder(settings) as settings:
        try:
            import_gradio(lean=True)
        except ImportError:
            fail(MISSING_EXTRA, 2)
        app = build_app(settings)
        try:
            # quiet: Gradio's own lines speak of launch() and share=True, which a user of hfkv serve has not
            app.launch(server_name=host, server_port=port, quiet=True, prevent_thread_lock=True,
                       **launch_options(settings))
        except OSError as err:
            if "port" in str(err).lower():  # taken between the check and the launch
                fail(f"port {port} on {host} is already in use; stop what listens there or pick another with --port", 1)
            fail(f"cannot serve on {host}:{port} ({type(err).__name__})", 1)
        start_workers()  # the workers' parent, in the background: the first request need not wait for it
        stop = _interrupt(settings.work_folder)
        # before the line: a signal may follow it at once
        previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}
        try:
            click.echo(f"hfkv: serving the calculator page on http://{host}:{port}/ (Ctrl-C stops it)", err=True)
            app.block_thread()  # until Ctrl-C or SIGTERM (Gradio then closes the server), as launch() would have
        except KeyboardInterrupt:  # one that came before Gradio's own wait: the same ending
            app.close()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


@contextlib.contextmanager
def _server_folder(settings: Settings | None) -> Iterator[Settings]:
    """``settings`` with a folder of this server's own (``hfkv-serve-*``) for what it writes: uploads
    (``uploads``: Gradio's temporary folder, unless ``GRADIO_TEMP_DIR`` is set) and each request's Hub
    cache (``pages``: not inside the uploads, which a request may name). Removed when the server stops,
    after its workers are killed: requests cut short by a stop (SIGTERM) left their ``hfkv-page-*``
    folders behind."""
    from hfkv.commands.serve_work import stop_workers

    folder = tempfile.mkdtemp(prefix="hfkv-serve-")
    own_uploads = not os.environ.get("GRADIO_TEMP_DIR")
    if own_uploads:
        os.environ["GRADIO_TEMP_DIR"] = os.path.join(folder, "uploads")
        os.mkdir(os.environ["GRADIO_TEMP_DIR"])
    pages = os.path.join(folder, "pages")
    os.mkdir(pages)
    try:
        yield dataclasses.replace(settings or Settings.from_env(), work_folder=pages)
    finally:
        stop_workers(pages)
        shutil.rmtree(folder, ignore_errors=True)
        if own_uploads:
            os.environ.pop("GRADIO_TEMP_DIR", None)


def _interrupt(work_folder: str | None) -> Callable[[int, Any], None]:
    """The handler of SIGTERM (docker stop, systemd, a Space's restart) and Ctrl-C: the page stops as for
    Ctrl-C (Python's default for SIGTERM ended the process at once, leaving its folder), Gradio closes the
    server and ``serve`` removes its folder. The requests' workers are killed first: the requests in
    flight then answer at once, where Gradio's close waited for them (5 s, measured)."""
    from hfkv.commands.serve_work import stop_workers

    def interrupt(signum: int, frame: Any) -> None:
        stop_workers(work_folder)
        raise KeyboardInterrupt

    return interrupt


def main() -> None:
    """The Space's entry point: host and port as Spaces set them (``GRADIO_SERVER_NAME``,
    ``GRADIO_SERVER_PORT``; locally 127.0.0.1:7860), the rest from the environment."""
    from hfkv.commands.cli import quiet_libraries

    quiet_libraries()
    host = os.environ.get("GRADIO_SERVER_NAME") or "127.0.0.1"
    port = whole(os.environ.get("GRADIO_SERVER_PORT") or 7860, 7860)
    serve(host, port, Settings.from_env())
