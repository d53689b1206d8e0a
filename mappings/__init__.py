"""Mappers: one module per architecture family, each turning a config dict into layer specs.

Importing this package imports every family module, which registers its mappers.
"""

from __future__ import annotations

import importlib
import pkgutil

from .registry import Mapper, all_mappers, register, resolve

__all__ = ["Mapper", "all_mappers", "register", "resolve"]

for _module in pkgutil.iter_modules(__path__):
    if _module.name not in ("registry", "common"):
        importlib.import_module(f"{__name__}.{_module.name}")
