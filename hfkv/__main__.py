"""``python -m hfkv`` runs the command line."""

from hfkv.commands.cli import entry

entry()
