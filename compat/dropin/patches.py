"""The patches the drop-in applies to modules that exist, each returning its undo.

- :func:`add_missing_names`: a module-level ``__getattr__`` (PEP 562) that answers only
  for names the module lacks, after the module's own ``__getattr__`` if it has one;
- :func:`translate_fsdp_init`: torch's ``FullyShardedDataParallel.__init__`` translates
  legacy arguments (:func:`compat.fsdp.legacy_fsdp_call`) and passes current calls on
  untouched, whoever makes them;
- :func:`translate_checkpoint_wrapper`: torch's ``checkpoint_wrapper`` takes the
  ``offload_to_cpu`` keyword torch 2.0 removed;
- :func:`translate_precision_values`: Lightning's AMP plugin takes 1.x's ``16`` and
  ``"bf16"`` again;
- :func:`register_strategy_names`: the removed strategy strings in a Lightning flavour's
  strategy registry.

Every undo puts back exactly what was there: the same objects, or nothing.
"""

from __future__ import annotations

import functools
import importlib
import sys
import types

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any, Callable

    Undo = Callable[[], None]


def add_missing_names(
    module: types.ModuleType, names: set[str], resolve: Callable[[str, str], Any]
) -> Undo:
    """Make ``module.<name>`` resolve through ``resolve(module name, name)`` for ``names``.

    Names the module has, or its own ``__getattr__`` answers, are never touched.
    """
    own = module.__dict__.get("__getattr__")
    missing = frozenset(names)

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module hook's required name
        if own is not None:
            try:
                return own(name)
            except AttributeError:
                pass
        if name in missing:
            return resolve(module.__name__, name)
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

    __getattr__.__compat_dropin__ = True  # type: ignore[attr-defined]
    module.__getattr__ = __getattr__  # type: ignore[method-assign]

    def undo() -> None:
        if own is None:
            module.__dict__.pop("__getattr__", None)
        else:
            module.__getattr__ = own  # type: ignore[method-assign]

    return undo


def translate_fsdp_init(cls: type) -> Undo:
    """Let ``cls`` (torch's ``FullyShardedDataParallel``) take legacy arguments too."""
    original = cls.__dict__["__init__"]

    @functools.wraps(original)
    def __init__(self: Any, module: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        from compat.fsdp import ArgumentBindingError, legacy_fsdp_call

        try:
            legacy = legacy_fsdp_call(module, args, kwargs)
        except ArgumentBindingError:  # not FSDP's arguments at all: torch's own error
            legacy = None
        if legacy is None:
            original(self, module, *args, **kwargs)
            return
        arguments, classes = legacy
        original(self, **arguments)
        if classes is not None:
            from compat.checkpointing import checkpoint_modules

            checkpoint_modules(self, classes)

    __init__.__compat_dropin__ = True  # type: ignore[attr-defined]
    cls.__init__ = __init__  # type: ignore[misc]

    def undo() -> None:
        cls.__init__ = original  # type: ignore[misc]

    return undo


def translate_checkpoint_wrapper(module: types.ModuleType) -> Undo:
    """Let ``module.checkpoint_wrapper`` (torch's) take ``offload_to_cpu`` again (FSDP133)."""
    original = module.__dict__["checkpoint_wrapper"]

    @functools.wraps(original)
    def checkpoint_wrapper(wrapped: Any, *args: Any, **kwargs: Any) -> Any:
        from compat.checkpointing import legacy_checkpoint_wrapper

        return legacy_checkpoint_wrapper(original, wrapped, args, kwargs)

    checkpoint_wrapper.__compat_dropin__ = True  # type: ignore[attr-defined]
    checkpoint_wrapper.__compat_original__ = original  # type: ignore[attr-defined]
    module.checkpoint_wrapper = checkpoint_wrapper  # type: ignore[attr-defined]

    def undo() -> None:
        module.checkpoint_wrapper = original  # type: ignore[attr-defined]

    return undo


def translate_precision_values(cls: type, code: str, values: dict[Any, str]) -> Undo:
    """Let ``cls`` (Lightning's AMP plugin) take Lightning 1.x's precision values again.

    ``precision`` (by keyword, else the first argument) found in ``values`` is replaced by
    its new spelling, with the rule ``code``'s warning; Lightning's Trainer maps the same
    values the same way.
    """
    original = cls.__dict__["__init__"]

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        given = kwargs.get("precision", args[0] if args else None)
        new = next((n for o, n in values.items() if given == o and type(given) is type(o)), None)
        if new is not None:
            from compat.deprecation import warn_deprecated

            warn_deprecated(code, detail=f"`{given!r}` runs as `{new!r}`, the same AMP.")
            if "precision" in kwargs:
                kwargs["precision"] = new
            else:
                args = (new, *args[1:])
        original(self, *args, **kwargs)

    __init__.__compat_dropin__ = True  # type: ignore[attr-defined]
    cls.__init__ = __init__  # type: ignore[misc]

    def undo() -> None:
        cls.__init__ = original  # type: ignore[misc]

    return undo


def strategy_registry(module: types.ModuleType) -> Any:
    """A Lightning ``strategies`` module's registry (the Trainer's or Fabric's spelling)."""
    return getattr(module, "StrategyRegistry", None) or module.STRATEGY_REGISTRY


def register_strategy_names(module: types.ModuleType, flavour: str) -> tuple[list[str], Undo]:
    """Register the removed strategy strings with ``module``'s registry via compat ``flavour``.

    Importing a flavour module registers the strings for good (what importing
    ``compat.strategies`` has always done). Where this call is that first import, its
    undo also forgets the flavour module, so that a later import registers them again.

    Returns:
        The strings added, and the undo that removes them again.
    """
    registry = strategy_registry(module)
    before = set(registry)
    first_import = flavour not in sys.modules
    flavour_module = importlib.import_module(flavour)
    flavour_module.register_names()
    added = sorted(set(registry) - before)

    def undo() -> None:
        for name in added:
            registry.pop(name, None)
        if first_import and sys.modules.get(flavour) is flavour_module:
            del sys.modules[flavour]
            parent, _, child = flavour.rpartition(".")
            if vars(sys.modules[parent]).get(child) is flavour_module:
                delattr(sys.modules[parent], child)

    return added, undo
