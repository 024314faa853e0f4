"""Subcommands; importing this package registers every module's commands with `mysched.cli`."""

import importlib
import pkgutil

for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _mod != "common":
        importlib.import_module(f"{__name__}.{_mod}")
