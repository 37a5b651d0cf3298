"""The import hook of the drop-in: stand-in modules, and a call after watched imports.

:class:`DropInFinder` sits first on ``sys.meta_path`` and answers for few names. A module
that exists is found by the finders after it, as always; when it is one the drop-in
watches, its loader is wrapped for that one import so that the drop-in can patch the
module once it has run, and then put back, so that nothing of the wrapper remains. A
module that does not exist but held old names (``pytorch_lightning.strategies.fully_
sharded``, ``fairscale.nn``) is created as a stand-in whose attributes the drop-in
resolves when they are first read.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any, Callable


def real_spec(
    fullname: str, path: Any = None, target: Any = None, skip: object = None
) -> importlib.machinery.ModuleSpec | None:
    """The spec the import system would find for ``fullname`` without ``skip`` on the path."""
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if finder is skip or find_spec is None:
            continue
        spec = find_spec(fullname, path, target)
        if spec is not None:
            return spec
    return None


def exists(fullname: str, skip: object = None) -> bool:
    """Whether ``fullname`` is a real module (imported, or importable), importing nothing new.

    Its parent package must be imported already, else this says False.
    """
    if fullname in sys.modules:
        return getattr(sys.modules[fullname], "__compat_stand_in__", None) is None
    parent, _, _ = fullname.rpartition(".")
    if parent and parent not in sys.modules:
        return False
    path = getattr(sys.modules[parent], "__path__", None) if parent else None
    if parent and path is None:
        return False
    return real_spec(fullname, path, skip=skip) is not None


class _WatchingLoader:
    """The real loader for one import, then a call with the module it made."""

    def __init__(self, loader: Any, after: Callable[[types.ModuleType], None]) -> None:
        self.loader = loader
        self.after = after

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        create = getattr(self.loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: types.ModuleType) -> None:
        self.loader.exec_module(module)
        # The module keeps the loader it would have had without the drop-in.
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.after(module)


class StandIn(types.ModuleType):
    """A module that no longer exists, whose old names resolve to their stand-ins."""

    __compat_stand_in__ = True

    def __init__(self, name: str, resolve: Callable[[str, str], Any]) -> None:
        super().__init__(name)
        self.__path__: list[str] = []  # a package: submodules are stood in for too
        self._resolve = resolve

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return self._resolve(self.__name__, attribute)


class _StandInLoader:
    def __init__(self, module: types.ModuleType, after: Callable[[types.ModuleType], None]):
        self.module = module
        self.after = after

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self.module

    def __repr__(self) -> str:
        return "<fsdp-compat stand-in>"

    def exec_module(self, module: types.ModuleType) -> None:
        # Nothing to run: a stand-in resolves its names when they are read.
        self.after(module)


class DropInFinder:
    """Finds stand-ins for modules that are gone, and watches the imports of others.

    The import system asks its finders and loaders for their methods, not their base
    classes; ``importlib.abc`` would load ``importlib.resources`` at every start.

    Args:
        watched: Real modules to call ``after_import`` with once their import has run.
        candidates: Modules that get a stand-in where the import system finds none.
        stand_in: Makes the stand-in for a candidate, or returns None where it gets
            none; ``after_import`` is called with it once it is imported.
        after_import: What to call with each watched module and each stand-in.
    """

    def __init__(
        self,
        watched: set[str],
        candidates: set[str],
        stand_in: Callable[[str], types.ModuleType | None],
        after_import: Callable[[types.ModuleType], None],
    ) -> None:
        self.watched = watched
        self.candidates = candidates
        self.stand_in = stand_in
        self.after_import = after_import

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        """A watched module's own spec with a watching loader, or a stand-in's spec."""
        if fullname not in self.watched and fullname not in self.candidates:
            return None
        spec = real_spec(fullname, path, target, skip=self)
        if spec is not None:
            if fullname in self.watched and hasattr(spec.loader, "exec_module"):
                spec.loader = _WatchingLoader(spec.loader, self.after_import)
            return spec
        module = self.stand_in(fullname) if fullname in self.candidates else None
        if module is None:
            return None
        loader = _StandInLoader(module, self.after_import)
        return importlib.util.spec_from_loader(fullname, loader, is_package=True)
