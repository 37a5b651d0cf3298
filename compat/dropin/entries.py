"""What the drop-in installs, read from the registry: each old name and its stand-in.

Every old name a rule lists under torch, Lightning or FairScale is a candidate. Its
stand-in is the attribute of the same name in the ``compat`` module that mirrors the
old name's home (:data:`MIRRORS`: ``torch.distributed.fsdp.wrap`` is mirrored by
``compat.fsdp.wrap``, ``pytorch_lightning`` by ``compat.strategies.pytorch_lightning``,
...), or, for a plain rename, the new name itself. A candidate is installed only where
the installed package lacks it, so a rule added to the registry is installed as soon as
its old name has a stand-in, with no code here.

What the shipped registry gives is kept as data in ``plan_table.txt`` beside this module
(written by ``python -m compat.dropin.plan``, :mod:`compat.dropin.plan`; a test
regenerates it and compares): a program that imports nothing legacy starts without
building the registry's rules.

Example:
    >>> entry = plan()["torch.distributed.fsdp.wrap.default_auto_wrap_policy"]
    >>> entry.code, entry.mirror
    ('FSDP101', 'compat.fsdp.wrap')
"""

from __future__ import annotations

import functools
import os
from collections import namedtuple

import codemods.registry
from codemods.registry.names import (
    COMPAT_FAIRSCALE,
    COMPAT_WRAP,
    FABRIC_ROOTS,
    FAIRSCALE_WRAP,
    LIGHTNING_PACKAGES,
    TORCH_FSDP,
    TORCH_WRAP,
    TRAINER_ROOTS,
)

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.registry import Registry

#: The shipped registry's plan (:func:`table`), read while nothing has loaded the registry
#: (a path as text: ``pathlib`` is not loaded at a program's start).
TABLE_PATH = os.path.join(os.path.dirname(__file__), "plan_table.txt")
#: The root of FairScale's names: stood in for as a whole, and only while not installed.
FAIRSCALE = "fairscale"
#: Packages whose missing names are added to them where they are installed.
PATCHED_ROOTS = ("torch", *LIGHTNING_PACKAGES)

#: Each legacy home (and everything under it) and the compat module that mirrors it.
MIRRORS = (
    (TORCH_WRAP, COMPAT_WRAP),
    (TORCH_FSDP, "compat.fsdp"),
    # save_state_dict / load_state_dict (FSDP120/121) outlive torch's own there.
    ("torch.distributed.checkpoint", "compat.checkpoint"),
    (FAIRSCALE, COMPAT_FAIRSCALE),
    (TRAINER_ROOTS[0], "compat.strategies.lightning_pytorch"),
    (TRAINER_ROOTS[1], "compat.strategies.pytorch_lightning"),
    (FABRIC_ROOTS[0], "compat.strategies.fabric"),
    (FABRIC_ROOTS[1], "compat.strategies.lightning_fabric"),
)
#: The Lightning modules whose strategy registries get the removed strategy strings.
STRATEGY_MODULES = {
    f"{root}.strategies": mirror
    for root, mirror in MIRRORS
    if root in (*TRAINER_ROOTS, *FABRIC_ROOTS)
}


class Entry(namedtuple("Entry", ("code", "old", "mirror", "new"))):
    """One old name the drop-in can put back.

    Attributes:
        code: The rule that lists it.
        old: The old fully qualified name.
        mirror: The compat module that may hold its stand-in under the same last name.
        new: For a plain rename, the current name that stands in where the mirror has
            none (it warns with ``code`` when used).
    """

    __slots__ = ()

    @property
    def parent(self) -> str:
        """The module the old name lived in (or the package, for an old module)."""
        return self.old.rpartition(".")[0]

    @property
    def leaf(self) -> str:
        """The old name's last part."""
        return self.old.rpartition(".")[2]


def mirror_of(name: str) -> str | None:
    """The compat module that mirrors ``name``'s home, by the longest matching prefix.

    Example:
        >>> mirror_of("pytorch_lightning.strategies.fully_sharded.DDPFullyShardedStrategy")
        'compat.strategies.pytorch_lightning'
        >>> mirror_of("torch.nn.Linear") is None
        True
    """
    matches = [(home, mirror) for home, mirror in MIRRORS if name.startswith(f"{home}.")]
    return max(matches, key=lambda match: len(match[0]))[1] if matches else None


def plan(registry: Registry | None = None) -> dict[str, Entry]:
    """Every old name the registry lists under torch, Lightning or FairScale, with its stand-in.

    Args:
        registry: The rules (default: the registry as it is now; while nothing has
            loaded it, the shipped registry's plan kept in :data:`TABLE_PATH`).

    Returns:
        Entries by old name; a name listed by several rules belongs to the first.
    """
    if registry is None and "REGISTRY" not in vars(codemods.registry):
        shipped = from_table()
        if shipped is not None:
            return shipped
    registry = codemods.registry.REGISTRY if registry is None else registry
    return dict(_plan(registry))


def from_table() -> dict[str, Entry] | None:
    """The shipped registry's plan as :data:`TABLE_PATH` keeps it; None where it cannot be read."""
    try:
        with open(TABLE_PATH, encoding="utf-8") as file:
            text = file.read()
    except OSError:  # an install without its data: the registry says the same
        return None
    rows = (line.split("\t") for line in text.splitlines())
    return {f[1]: Entry(*(None if v == "-" else v for v in f)) for f in rows}


@functools.lru_cache(maxsize=4)
def _plan(registry: Registry) -> tuple[tuple[str, Entry], ...]:
    from codemods.registry import ChangeKind

    entries: dict[str, Entry] = {}
    for rule in registry:
        for old in rule.old:
            if old.split(".")[0] not in (*PATCHED_ROOTS, FAIRSCALE) or old in entries:
                continue
            if old == FAIRSCALE_WRAP:
                # FairScale's `wrap` function shares its name with the module its wrap
                # helpers are imported from; the stand-in must stay that module
                # (`from fairscale.nn.wrap import enable_wrap`), so `from fairscale.nn
                # import wrap` gets no stand-in.
                continue
            new = rule.new_for(old) if rule.kind is ChangeKind.SYMBOL_RENAME else None
            mirror = mirror_of(old)
            if mirror is not None or new is not None:
                entries[old] = Entry(rule.code, old, mirror, new)
    return tuple(entries.items())


def table(registry: Registry) -> str:
    """The text of ``plan_table.txt`` for ``registry``: an entry a line, tab-separated.

    Example:
        >>> table(codemods.registry.REGISTRY).splitlines()[0].split()[:3]
        ['FSDP101', 'torch.distributed.fsdp.wrap.default_auto_wrap_policy', 'compat.fsdp.wrap']
    """
    fields = ((e.code, e.old, e.mirror or "-", e.new or "-") for _, e in _plan(registry))
    return "".join("\t".join(entry) + "\n" for entry in fields)


def module_prefixes(entries: dict[str, Entry]) -> set[str]:
    """Every module an old name lives under (``a``, ``a.b`` for ``a.b.C``).

    Example:
        >>> sorted(module_prefixes({"a.b.C": Entry("X", "a.b.C", None, "a.D")}))
        ['a', 'a.b']
    """
    prefixes = set()
    for old in entries:
        parts = old.split(".")
        prefixes.update(".".join(parts[:end]) for end in range(1, len(parts)))
    return prefixes
