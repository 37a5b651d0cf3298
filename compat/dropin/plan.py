"""What the drop-in installs, read from the registry: each old name and its stand-in.

Every old name a rule lists under torch, Lightning or FairScale is a candidate. Its
stand-in is the attribute of the same name in the ``compat`` module that mirrors the
old name's home (:data:`MIRRORS`: ``torch.distributed.fsdp.wrap`` is mirrored by
``compat.fsdp.wrap``, ``pytorch_lightning`` by ``compat.strategies.pytorch_lightning``,
...), or, for a plain rename, the new name itself. A candidate is installed only where
the installed package lacks it, so a rule added to the registry is installed as soon as
its old name has a stand-in, with no code here.

Example:
    >>> entry = plan()["torch.distributed.fsdp.wrap.default_auto_wrap_policy"]
    >>> entry.code, entry.mirror
    ('FSDP101', 'compat.fsdp.wrap')
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import codemods.registry
from codemods.registry import ChangeKind, Registry
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


@dataclass(frozen=True)
class Entry:
    """One old name the drop-in can put back.

    Attributes:
        code: The rule that lists it.
        old: The old fully qualified name.
        mirror: The compat module that may hold its stand-in under the same last name.
        new: For a plain rename, the current name that stands in where the mirror has
            none (it warns with ``code`` when used).
    """

    code: str
    old: str
    mirror: str | None
    new: str | None

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
        registry: The rules (default: the registry as it is now).

    Returns:
        Entries by old name; a name listed by several rules belongs to the first.
    """
    registry = codemods.registry.REGISTRY if registry is None else registry
    return dict(_plan(registry))


@functools.lru_cache(maxsize=4)
def _plan(registry: Registry) -> tuple[tuple[str, Entry], ...]:
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
