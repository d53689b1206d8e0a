"""``hfkv serve``: the calculator page (Gradio), the same app a Hugging Face Space runs (space/app.py).

A person types a Hub repo id (or drops a config.json), pastes a token for a gated or private repo if
they need one, picks a layout (GPU preset, KV dtype, TP, DP, PP, DP attention, EP, max model length,
vLLM's gpu_memory_utilization, SGLang's mem_fraction_static) and sees, side by side, each engine's own
verdict (or its refusal in its own words), hfkv's exact report, a link that reproduces the page and
the ``hfkv`` commands that print the same figures. The Compare tab puts 2 to 8 models side by side; the
Plan tab answers the inverse question (``hfkv plan``).

The page is split in five modules, each testable on its own:

* ``serve_form``: what the page asks (``Form``), its query string, the commands; pure.
* ``serve_access``: Hub access for a visitor (the server's token for public repos only unless the
  operator opts in, a visitor's token for their request only, a cache per request, one deadline per
  request, error lines that name neither the server's endpoint nor its paths).
* ``serve_pages``: the three tabs as HTML, from hfkv's own report, planning and rendering code.
* ``serve_work``: each request's work in a worker process, killed at the deadline, its memory bounded.
* ``serve_app``: the Gradio app, its hardening (no URL fetched but the Hub's, uploads deleted once
  read, no session keeps a token), and ``serve``.

This module is the command only: ``hfkv serve --help`` imports neither Gradio nor the report stack.
"""

from __future__ import annotations

import click


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (0.0.0.0 exposes the page).")
@click.option("--port", type=click.IntRange(1, 65535), default=7860, show_default=True, help="Port to bind.")
@click.option("--allow-private-repos", is_flag=True, default=None,
              help="Let the server's HF_TOKEN read private repos for every visitor (off: public and gated repos "
                   "only; also HFKV_ALLOW_PRIVATE_REPOS=1).")
@click.option("--concurrency", type=click.IntRange(1, 64), default=None,
              help="Requests served at once (default 4, or HFKV_CONCURRENCY).")
@click.option("--deadline", type=click.FloatRange(min=1), default=None, metavar="SECONDS",
              help="Seconds a request may take, Hub included (default 30, or HFKV_DEADLINE).")
def serve_command(host: str, port: int, allow_private_repos: bool | None, concurrency: int | None,
                  deadline: float | None) -> None:
    """Serve the calculator page (needs hfkv[app]). Hub access: HF_ENDPOINT, and HF_TOKEN for gated repos."""
    from hfkv.commands.cli import quiet_libraries
    from hfkv.commands.serve_access import Settings
    from hfkv.commands.serve_app import serve

    quiet_libraries()
    serve(host, port, Settings.from_env(allow_private=allow_private_repos, concurrency=concurrency, deadline=deadline))


if __name__ == "__main__":  # python -m hfkv.commands.serve [--host H] [--port P]: the same as hfkv serve
    serve_command()
