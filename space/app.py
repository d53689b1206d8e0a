"""Hugging Face Space entry point: the hfkv calculator page, the same app as ``hfkv serve``.

The Space runs ``python app.py``; Spaces set ``GRADIO_SERVER_NAME=0.0.0.0`` and the port, which
``main`` reads (run locally, the page binds 127.0.0.1:7860). Hub access, deadline and concurrency come
from the environment: ``HF_TOKEN`` (a Space secret: read from the environment, never shown, used for
public and gated repos only), ``HFKV_ALLOW_PRIVATE_REPOS=1`` (let that token read private repos for
every visitor), ``HFKV_DEADLINE``, ``HFKV_CONCURRENCY``, ``HF_ENDPOINT``.
"""

from hfkv.commands.serve_app import main

main()
