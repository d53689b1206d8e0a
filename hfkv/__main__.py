"""``python -m hfkv`` runs the command line."""

from .cli import entry

entry()
