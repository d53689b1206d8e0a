"""Shared by the page's server and browser tests: tests/web is on the import path (``import webkit``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
