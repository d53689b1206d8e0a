"""Helpers for the page's server and browser tests: calling the page's API as its buttons do, uploading a
file as the browser does, free ports, and running a page server in a subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Iterator

FIELDS = ("model", "kv_cache_dtype", "tp", "dp", "pp", "dp_attention", "ep", "gpu", "budget", "contexts",
          "max_model_len", "gpu_memory_utilization", "mem_fraction_static", "compare", "requests", "plan_context",
          "plan_gpu", "plan_engine", "max_gpus", "plan_kv")
DEFAULTS = dict(model="", kv_cache_dtype="auto", tp=1, dp=1, pp=1, dp_attention=False, ep=False, gpu="(none)",
                budget="", contexts="", max_model_len="", gpu_memory_utilization="", mem_fraction_static="",
                compare="", requests=64, plan_context="32k", plan_gpu="H200-141GB", plan_engine="both", max_gpus=8,
                plan_kv="both")


def values(**given: Any) -> list[Any]:
    """The page's fields in the order its handlers take them (serve_app.FIELDS)."""
    return [{**DEFAULTS, **given}[name] for name in FIELDS]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def post(url: str, body: bytes, content_type: str = "application/json", timeout: float = 60) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def get(url: str, timeout: float = 60) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def call_api(server: str, name: str, data: list) -> str:
    """One call of the page's API (what its buttons call): the event stream's text, or ``HTTP nnn body``
    when the call itself is refused."""
    base = f"{server.rstrip('/')}/gradio_api/call/{name}"
    status, body = post(base, json.dumps({"data": data}).encode())
    if status != 200:
        return f"HTTP {status} {body.decode(errors='replace')}"
    event = json.loads(body)["event_id"]
    return get(f"{base}/{event}")[1].decode()


def result(stream: str) -> list[Any]:
    """The outputs of a completed call (``event: complete``)."""
    assert stream.startswith("event: complete"), stream[:500]
    return json.loads(stream.split("data: ", 1)[1])


def upload(server: str, name: str, content: bytes) -> tuple[int, Any]:
    """Upload a file as the page's file box does (multipart, field ``files``): (status, paths or text)."""
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{name}\"\r\n"
            "Content-Type: application/json\r\n\r\n").encode() + content + f"\r\n--{boundary}--\r\n".encode()
    status, answer = post(f"{server.rstrip('/')}/gradio_api/upload", body, f"multipart/form-data; boundary={boundary}")
    try:
        return status, json.loads(answer)
    except ValueError:
        return status, answer.decode(errors="replace")


def file_data(path: str) -> dict[str, Any]:
    return {"path": path, "meta": {"_type": "gradio.FileData"}, "orig_name": Path(path).name}


@contextlib.contextmanager
def running(command: list[str], env: dict[str, str], port: int, log_path: Path, wait: float = 90) -> Iterator[str]:
    """Run a page server until the block ends; yields its URL once it answers."""
    with started(command, env, port, log_path, wait) as (url, _):
        yield url


@contextlib.contextmanager
def started(command: list[str], env: dict[str, str], port: int, log_path: Path,
            wait: float = 90) -> Iterator[tuple[str, subprocess.Popen]]:
    """``running``, yielding the server's process too (its memory is measured by benchmarks/web_memory.py)."""
    url = f"http://127.0.0.1:{port}/"
    with open(log_path, "w+") as log:
        proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + wait
            while True:
                try:
                    urllib.request.urlopen(url, timeout=2).close()
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        log.seek(0)
                        raise RuntimeError(f"{command[1:]} did not start: {log.read()[-2000:]}")
                    time.sleep(0.05)
            yield url, proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def server_env(hub_url: str, home: Path, **extra: str) -> dict[str, str]:
    """A page server's environment: the fake Hub as HF_ENDPOINT, a cache in ``home``, nothing of the host's
    HF_*/GRADIO_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING", "GRADIO_", "HFKV_"))}
    env.update(HF_ENDPOINT=hub_url, HF_HOME=str(home), HF_HUB_CACHE=str(home / "hub"), HF_HUB_DISABLE_TELEMETRY="1",
               GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1", **extra)
    return env


def chart_points(svg_text: str) -> dict[str, list[tuple[float, float]]]:
    """{legend label: [(context, value), …]} of a chart with a dot per point (``hfkv.render.svg.line_chart``
    with markers, log axes), read back as a reader would: each dot's position mapped to a value through
    the axes' own tick labels. A legend entry without dots maps to an empty list."""
    import math
    import xml.etree.ElementTree as ET

    from hfkv.units import parse_tokens

    ns = "{http://www.w3.org/2000/svg}"
    root = ET.fromstring(svg_text)
    texts = list(root.iter(ns + "text"))
    xticks = [(float(t.get("x")), parse_tokens(t.text)) for t in texts
              if t.get("text-anchor") == "middle" and t.text and t.text[0].isdigit()]
    yticks = [(float(t.get("y")) - 4, float(t.text.replace(",", ""))) for t in texts
              if t.get("text-anchor") == "end" and t.text and t.text.replace(",", "").isdigit()]

    def value(ticks: list[tuple[float, float]], pixel: float) -> float:
        (p1, v1), (p2, v2) = ticks[0], ticks[-1]
        return math.exp(math.log(v1) + (pixel - p1) / (p2 - p1) * (math.log(v2) - math.log(v1)))

    labels: dict[str, str] = {}  # a legend swatch's colour → the label written after it
    elements = list(root)
    for k, element in enumerate(elements):
        if element.tag == ns + "rect" and element.get("width") == "10":
            labels[element.get("fill")] = next(e.text for e in elements[k + 1:] if e.tag == ns + "text")
    points: dict[str, list[tuple[float, float]]] = {label: [] for label in labels.values()}
    for dot in root.iter(ns + "circle"):
        points[labels[dot.get("fill")]].append((value(xticks, float(dot.get("cx"))),
                                                 value(yticks, float(dot.get("cy")))))
    return points
