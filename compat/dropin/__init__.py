"""Run legacy code unchanged: the old names at their old homes, for as long as it is installed.

:func:`install` puts back, on the installed torch and Lightning, every old name the
registry knows and compat stands in for (:mod:`compat.dropin.entries`); makes torch's
``FullyShardedDataParallel`` take legacy arguments, whoever builds it (and its
``checkpoint_wrapper`` the removed ``offload_to_cpu``, Lightning's AMP plugin its 1.x
precision values); registers the strategy strings Lightning removed; and, where
FairScale is not installed, lets ``import fairscale.nn`` find :mod:`compat.fairscale`.
Nothing is imported for it: each module is patched when the program imports it (or at
once, if it has already). Current
spellings are never touched, and :func:`uninstall` puts back exactly what was there.
``python -m compat script.py`` installs it before running the script.

Example:
    >>> import warnings
    >>> import compat
    >>> compat.install()
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     from torch.distributed.fsdp.wrap import default_auto_wrap_policy
    >>> str(caught[0].message).endswith("[FSDP101]")
    True
    >>> compat.uninstall()
    >>> from torch.distributed.fsdp.wrap import default_auto_wrap_policy  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ImportError: cannot import name 'default_auto_wrap_policy' from ...
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from collections import namedtuple

import codemods.registry
from codemods.registry.names import (
    CHECKPOINT_WRAPPER,
    FABRIC_ROOTS,
    TORCH_FSDP_CLASSES,
    TRAINER_ROOTS,
)
from compat.deprecation import warn_deprecated
from compat.dropin import patches
from compat.dropin.entries import (
    FAIRSCALE,
    PATCHED_ROOTS,
    STRATEGY_MODULES,
    Entry,
    module_prefixes,
)
from compat.dropin.entries import plan as _plan  # `compat.dropin.plan` is the command module
from compat.dropin.finder import DropInFinder, StandIn, exists

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any, Callable

#: Set in the environment of the processes a program starts, so that they install too.
ENV_FLAG = "FSDP_COMPAT_INSTALL"
#: The folder put first on PYTHONPATH for them: its sitecustomize.py reads ENV_FLAG.
BOOT_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "_boot")
_FSDP_HOME, _, _FSDP_CLASS = TORCH_FSDP_CLASSES[1].rpartition(".")
#: Where each Lightning flavour defines its AMP plugin, ``MixedPrecision`` (FSDP220).
_AMP_HOMES = frozenset(f"{root}.plugins.precision.amp" for root in (*TRAINER_ROOTS, *FABRIC_ROOTS))
_AMP_RULE = "FSDP220"


# Named tuples and plain classes, not dataclasses (`dataclasses` loads `inspect`) nor
# typing's NamedTuple (`typing` loads `re` and `enum`): each was a third or more of
# what `python -m compat` added to the start of a program that imports nothing legacy.
class Installed(namedtuple("Installed", ("codes", "where", "what"))):
    """One thing :func:`install` put in place.

    Attributes:
        codes: The rules whose legacy spellings it serves.
        where: What it added to or changed (an old name, a strategy string, a method).
        what: What answers there now.
    """

    __slots__ = ()


class _State:
    def __init__(self, entries: dict[str, Entry], prefixes: set[str]) -> None:
        self.entries = entries
        self.prefixes = prefixes
        self.finder: DropInFinder | None = None
        self.undo: list[Callable[[], None]] = []
        self.handled: set[str] = set()
        # Described only when asked (that imports compat's stand-ins): an import hook must
        # not import compat modules that need the torch module it runs inside of.
        self.records: list[Installed | Entry | Callable[[], Installed]] = []


_state: _State | None = None


def install(*, subprocesses: bool = False) -> None:
    """Put the legacy names and arguments in place (again calling it changes nothing).

    Args:
        subprocesses: Also install in the Python processes this program starts (Lightning's
            launcher re-running the script, ``multiprocessing`` spawn): sets
            ``FSDP_COMPAT_INSTALL=1`` and puts compat's ``sitecustomize`` first on
            ``PYTHONPATH`` in ``os.environ``, which :func:`uninstall` restores.
    """
    global _state
    if _state is None:
        entries = _plan()
        state = _State(entries, module_prefixes(entries))
        fairscale_absent = not exists(FAIRSCALE)
        candidates = {
            name
            for name in (*state.prefixes, *entries)
            if name.split(".")[0] in PATCHED_ROOTS
            or (fairscale_absent and name.split(".")[0] == FAIRSCALE)
        }
        watched = {p for p in state.prefixes if p.split(".")[0] in PATCHED_ROOTS}
        watched |= {_FSDP_HOME, CHECKPOINT_WRAPPER, *_AMP_HOMES, *STRATEGY_MODULES}
        state.finder = DropInFinder(watched, candidates, _stand_in, _after_import)
        if fairscale_absent:  # stood in for from the start
            state.records += [e for old, e in entries.items() if old.startswith(f"{FAIRSCALE}.")]
        _state = state
        sys.meta_path.insert(0, state.finder)
        state.undo.append(
            lambda: state.finder in sys.meta_path and sys.meta_path.remove(state.finder)
        )
        for name in sorted(watched):  # parents before their children
            module = sys.modules.get(name)
            if module is not None:
                _after_import(module)
    if subprocesses and not any(
        isinstance(r, Installed) and r.where == ENV_FLAG for r in _state.records
    ):
        _export_to_subprocesses(_state)


def uninstall() -> None:
    """Put back exactly what :func:`install` changed; nothing if it is not installed.

    Objects the program already took from a stand-in (an imported class) stay its own.
    """
    global _state
    state, _state = _state, None
    if state is None:
        return
    for undo in reversed(state.undo):
        undo()


def apply_all() -> None:
    """Import every installed module the drop-in patches, so that all of it is in place.

    What ``python -m compat --list`` shows; a program never needs it.
    """
    if _state is None or _state.finder is None:
        return
    for name in sorted(_state.finder.watched):
        if exists(name, skip=_state.finder):
            importlib.import_module(name)


def is_installed() -> bool:
    """Whether :func:`install` is in effect."""
    return _state is not None


def installed() -> list[Installed]:
    """What :func:`install` has put in place so far, in the order it did.

    Old names count once their module has been imported (FairScale's stand-ins at
    once); ``python -m compat --list`` imports them all first.
    """
    if _state is None:
        return []
    found = []
    for record in _state.records:
        if isinstance(record, Entry):
            what = _describe(record)
            record = None if what is None else Installed((record.code,), record.old, what)
        elif callable(record):
            record = record()
        if record is not None and record not in found:
            found.append(record)
    return found


def _export_to_subprocesses(state: _State) -> None:
    saved = {name: os.environ.get(name) for name in (ENV_FLAG, "PYTHONPATH")}
    os.environ[ENV_FLAG] = "1"
    path = [entry for entry in (saved["PYTHONPATH"] or "").split(os.pathsep) if entry]
    if path[:1] != [BOOT_DIR]:  # a child installing for its own children: there already
        os.environ["PYTHONPATH"] = os.pathsep.join([BOOT_DIR, *path])

    def undo() -> None:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    state.undo.append(undo)
    state.records.append(Installed((), ENV_FLAG, f"{BOOT_DIR}/sitecustomize.py, on PYTHONPATH"))


# Resolving old names ---------------------------------------------------------------------


def _resolve(parent: str, attribute: str) -> Any:
    """The object an old name ``parent.attribute`` stands for now."""
    if _state is None:  # a stand-in module kept by the program after uninstall()
        raise AttributeError(f"{parent}.{attribute}: compat's drop-in is not installed")
    name = f"{parent}.{attribute}"
    entry = _state.entries.get(name)
    if entry is not None:
        found, value = _stand_in_value(entry, warn=True)
        if found:
            return value
    elif name in _state.prefixes and not exists(name, skip=_state.finder):
        return importlib.import_module(name)  # a module that is gone: its stand-in
    raise AttributeError(f"module {parent!r} has no attribute {attribute!r}")


def _stand_in_value(entry: Entry, warn: bool) -> tuple[bool, Any]:
    """``(True, value)`` for what stands in for ``entry`` now, ``(False, None)`` if nothing."""
    if entry.mirror is not None:
        try:
            mirror = importlib.import_module(entry.mirror)
        except ImportError:  # that Lightning flavour is not installed
            mirror = None
        # The mirror's own __getattr__ answers for its lazy names, and warns when read.
        if mirror is not None and entry.leaf in dir(mirror):
            return True, getattr(mirror, entry.leaf)
    if entry.new is not None:
        try:
            value = _import_name(entry.new)
        except (ImportError, AttributeError):
            return False, None
        if warn:
            warn_deprecated(entry.code)
        return True, value
    return False, None


def _import_name(dotted: str) -> Any:
    try:
        return importlib.import_module(dotted)
    except ImportError:
        module, _, attribute = dotted.rpartition(".")
        return getattr(importlib.import_module(module), attribute)


def _describe(entry: Entry) -> str | None:
    """Where ``entry``'s stand-in lives, or None where it has none here."""
    if entry.mirror is not None:
        try:
            if entry.leaf in dir(importlib.import_module(entry.mirror)):
                return f"{entry.mirror}.{entry.leaf}"
        except ImportError:
            pass
    if entry.new is not None and _stand_in_value(entry, warn=False)[0]:
        return entry.new
    return None


# Stand-in modules and patched modules ------------------------------------------------------


def _stand_in(name: str) -> types.ModuleType | None:
    """The stand-in for module ``name``, which the import system cannot find."""
    if _state is None:
        return None
    root = name.split(".")[0]
    if root in PATCHED_ROOTS and not exists(root, skip=_state.finder):
        return None  # a package that is not installed gets no stand-ins under it
    entry = _state.entries.get(name)
    if entry is not None:  # an old module: the module that replaced it, under the old name
        found, target = _stand_in_value(entry, warn=False)
        if not found or not isinstance(target, types.ModuleType):
            return None
        return StandIn(name, lambda _parent, attribute: getattr(target, attribute))
    return StandIn(name, _resolve) if name in _state.prefixes else None


def _after_import(module: types.ModuleType) -> None:
    name = module.__name__
    if _state is None or name in _state.handled:  # uninstalled while it was imported
        return
    _state.handled.add(name)
    if isinstance(module, StandIn):
        _track_stand_in(module)
        return
    _add_missing_names(module)
    if name == _FSDP_HOME:
        cls = getattr(module, _FSDP_CLASS)
        _state.undo.append(patches.translate_fsdp_init(cls))
        _state.records.append(_fsdp_record)
    if name == CHECKPOINT_WRAPPER and "checkpoint_wrapper" in vars(module):
        _state.undo.append(patches.translate_checkpoint_wrapper(module))
        _state.records.append(
            Installed(
                ("FSDP133", "FSDP139"),
                f"{CHECKPOINT_WRAPPER}.checkpoint_wrapper",
                "compat.checkpointing.legacy_checkpoint_wrapper",
            )
        )
    if name in _AMP_HOMES and "__init__" in vars(getattr(module, "MixedPrecision", object)):
        rule = codemods.registry.REGISTRY[_AMP_RULE]
        cls = module.MixedPrecision
        _state.undo.append(patches.translate_precision_values(cls, rule.code, dict(rule.values)))
        _state.records.append(
            Installed((rule.code,), f"{name}.MixedPrecision.__init__", "1.x's 16 and 'bf16'")
        )
    if name in STRATEGY_MODULES:
        added, undo = patches.register_strategy_names(module, STRATEGY_MODULES[name])
        _state.undo.append(undo)
        codes = {old: code for old, _, code in _removed_strategy_names(name)}
        for string in added:
            _state.records.append(
                Installed(
                    (codes[string],),
                    f'{name} strategy "{string}"',
                    f"{STRATEGY_MODULES[name]}.RemovedStrategyName",
                )
            )


def _removed_strategy_names(strategies_module: str) -> list[tuple[str, str, str]]:
    from compat.strategies.registration import removed_strategy_names

    return removed_strategy_names(strategies_module.rpartition(".")[0])


def _fsdp_record() -> Installed:
    from compat.fsdp import LEGACY_ARGUMENT_CODES, keyword_renames

    codes = (*LEGACY_ARGUMENT_CODES, *(rule.code for rule in keyword_renames()))
    return Installed(codes, f"{TORCH_FSDP_CLASSES[0]}.__init__", "compat.fsdp.legacy_fsdp_call")


def _children(name: str) -> set[str]:
    assert _state is not None
    depth = name.count(".") + 1
    return {
        other.split(".")[depth]
        for other in (*_state.entries, *_state.prefixes)
        if other.startswith(f"{name}.")
    }


def _add_missing_names(module: types.ModuleType) -> None:
    """Give a real module a ``__getattr__`` for the old names it lacks, and list them."""
    assert _state is not None
    name = module.__name__
    missing = {
        child
        for child in _children(name)
        if child not in vars(module) and not exists(f"{name}.{child}", skip=_state.finder)
    }
    if not missing:
        return
    _state.undo.append(patches.add_missing_names(module, missing, _resolve))
    for child in sorted(missing):
        under = f"{name}.{child}"
        for old, entry in _state.entries.items():
            if old == under or old.startswith(f"{under}."):
                _state.records.append(entry)


def _track_stand_in(module: StandIn) -> None:
    """Remember a stand-in module, so that uninstall takes it out of sys.modules again."""
    assert _state is not None
    name = module.__name__
    parent_name, _, child = name.rpartition(".")
    entry = _state.entries.get(name)
    if entry is not None and entry.new is not None:  # an old module: warn at the import
        warn_deprecated(entry.code)

    def undo() -> None:
        if sys.modules.get(name) is module:
            del sys.modules[name]
        parent = sys.modules.get(parent_name)
        if parent is not None and vars(parent).get(child) is module:
            delattr(parent, child)

    _state.undo.append(undo)


__all__ = [
    "ENV_FLAG",
    "Installed",
    "apply_all",
    "install",
    "installed",
    "is_installed",
    "uninstall",
]
