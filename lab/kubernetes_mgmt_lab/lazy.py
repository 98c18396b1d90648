"""Package exports imported on first use (PEP 562), for packages whose
modules start often and should pay only for what they use."""
from __future__ import annotations

import importlib


def exports(package: str, table: dict[str, str]):
    """A module ``__getattr__`` for ``package``: ``name`` in ``table``
    comes from the submodule ``table[name]``, imported when first asked
    for."""
    def __getattr__(name: str):
        if name in table:
            module = importlib.import_module(f'{package}.{table[name]}')
            return getattr(module, name)
        raise AttributeError(
            f'module {package!r} has no attribute {name!r}')
    return __getattr__
