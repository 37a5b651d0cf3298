"""Run legacy source as if its old imports came from ``compat``.

A user of the shim changes ``from torch.distributed.fsdp.wrap import ...`` (or
``fairscale.nn``, Lightning's strategies) to the ``compat`` module that mirrors it. To
test fixtures without editing them, :func:`load_build` executes a source with an
``__import__`` that does that mapping for that source alone: a mapped module is seen
through an overlay that answers from ``compat`` first and from the original module
(where it is installed) for everything else. Nothing outside the executed source is
affected.
"""

from __future__ import annotations

import builtins
import importlib
import types
from typing import Any, Callable

#: Old homes of legacy names and the compat module that mirrors each.
COMPAT_HOMES = {
    "torch.distributed.fsdp": "compat.fsdp",
    "torch.distributed.fsdp.wrap": "compat.fsdp.wrap",
    "fairscale.nn": "compat.fairscale",
    "fairscale.nn.wrap": "compat.fairscale",
    "fairscale.nn.data_parallel": "compat.fairscale",
    "fairscale.nn.checkpoint": "compat.fairscale",
    "pytorch_lightning.strategies": "compat.strategies.pytorch_lightning",
    "lightning.pytorch.strategies": "compat.strategies",
    "lightning.fabric.strategies": "compat.strategies.fabric",
}


def _leads_to_compat(name: str) -> bool:
    return any(home == name or home.startswith(f"{name}.") for home in COMPAT_HOMES)


class _Overlay(types.ModuleType):
    """A module seen with compat's names first, then the original's."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._layers = [importlib.import_module(COMPAT_HOMES[name])] if name in COMPAT_HOMES else []
        try:
            self._layers.append(importlib.import_module(name))
        except ImportError:  # FairScale and old Lightning packages need not be installed
            pass

    def __getattr__(self, attribute: str) -> Any:
        child = f"{self.__name__}.{attribute}"
        if _leads_to_compat(child):
            return _Overlay(child)
        for layer in self._layers:
            if hasattr(layer, attribute):
                return getattr(layer, attribute)
        raise AttributeError(f"neither compat nor {self.__name__} has {attribute!r}")


def _import_through_compat(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
    if level == 0:
        if fromlist and _leads_to_compat(name):
            return _Overlay(name)
        top = name.partition(".")[0]
        if not fromlist and _leads_to_compat(top):  # `import a.b.c [as x]` gets the top package
            builtins.__import__(name, globals, locals, fromlist, level)
            return _Overlay(top)
    return builtins.__import__(name, globals, locals, fromlist, level)


def load_build(source: str, filename: str, through_compat: bool) -> Callable[..., Any]:
    """Execute ``source`` and return its ``build`` function.

    Args:
        source: A module that defines ``build``.
        filename: Shown in tracebacks and warnings.
        through_compat: Resolve its legacy imports to ``compat`` (see the module doc).
    """
    namespace: dict[str, Any] = {"__name__": "fixture", "__file__": filename}
    if through_compat:
        namespace["__builtins__"] = {**vars(builtins), "__import__": _import_through_compat}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - the test's own fixture
    return namespace["build"]
