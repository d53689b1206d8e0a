"""Hugging Face Space entry point: the hfkv calculator page, the same app as ``hfkv serve``.

The Space runs ``python app.py``; Spaces set ``GRADIO_SERVER_NAME=0.0.0.0`` and the port, which
``launch`` reads. Run locally, the page binds 127.0.0.1:7860. The Hub token, when the Space needs one
for gated repos, is the Space secret ``HF_TOKEN``: read from the environment, never shown.
"""

from hfkv.commands.serve import build_app, launch_options

build_app().launch(**launch_options())
