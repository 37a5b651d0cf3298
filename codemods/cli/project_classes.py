"""The project's own ``LightningModule`` subclasses, across the files of one run.

A hook rule (FSDP207, ``configure_sharded_model``) finds the hook in classes deriving
from ``LightningModule``; one file sees its own classes only. Real projects keep a
base class in one module (``class BaseModule(LightningModule)``) and the models in
others (``from .base import BaseModule``). Before a run, :class:`ProjectClasses` reads
the run's files that can matter (a cheap text test first, then ``ast``), follows each
class's bases through the imports to the files of the run, and gives each file the
spellings of its bases that are the project's ``LightningModule`` subclasses
(:attr:`codemods.settings.Settings.lightning_bases`).

A base resolves through ``from module import Name`` (absolute, matched to a run file
by its path's tail, or relative to the importing file) and ``import module as m`` /
``m.Name``; anything else (star imports, names built at run time) resolves to nothing,
so a class is never taken for a ``LightningModule`` on a guess.
"""

from __future__ import annotations

import ast
import functools
import gc
import os
import re
from collections import deque
from collections.abc import Iterable
from pathlib import Path

from codemods.cli.resolved_paths import ResolvedDirectories
from codemods.registry import REGISTRY, ChangeKind
from codemods.syntax.class_bases import names_and_bases

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.settings import Settings
    from codemods.syntax.class_bases import Bases, Bound

#: What a class must derive from: Lightning's class, and Lightning's test models that
#: are LightningModules (the hook rule's own list).
LIGHTNING_PACKAGES = ("lightning.", "pytorch_lightning.")
LIGHTNING_CLASS = "LightningModule"
KNOWN_SUBCLASSES = ("BoringModel", "DemoModel", "BoringFabricModule")


class _File:
    """A file's imported names and its classes' bases (:func:`names_and_bases`), not its tree."""

    __slots__ = ("bound", "classes", "path")

    def __init__(self, path: Path, bound: Bound, classes: Bases) -> None:
        self.path, self.bound, self.classes = path, bound, classes


def _module_names(path: Path) -> list[str]:
    """The dotted names a file may be imported by (every tail of its path)."""
    parts = list(path.with_suffix("").parts)
    parts = parts[:-1] if parts and parts[-1] == "__init__" else parts
    return [".".join(parts[i:]) for i in range(len(parts)) if parts[i:]]


def _last_name(path: Path) -> str:
    """The last name of the module path ``path`` is imported by (see below)."""
    return path.parent.name if path.stem == "__init__" else path.stem


def _decoded(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _bytes(path: str) -> bytes | None:
    """The file's bytes, or None: by its name (a ``Path`` cost as much as the read)."""
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError:
        return None


def _text(path: Path) -> str | None:
    """The file's text, or None (unreadable, or not UTF-8)."""
    try:
        return _decoded(path.read_bytes())
    except OSError:
        return None


def _resolved(path: str | Path, directories: ResolvedDirectories | None = None) -> Path | None:
    """``path`` made absolute, or None (not Python source, or a link that loops).

    ``directories``: the run's directories, each resolved once (a file that is not a
    link resolves to its directory's resolution and its name).
    """
    text = str(path)
    if not text.endswith(".py"):
        return None
    try:
        if directories is None or os.path.islink(text):
            return Path(text).resolve()
        directory, name = os.path.split(text)
        found = directories(directory)
        return None if found is None else found / name
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop on Python < 3.13
        return None


def hook_names(settings: Settings) -> set[str]:
    """The hooks the rules ``settings`` enables look for (``configure_sharded_model``)."""
    return {
        old.rpartition(".")[2]
        for rule in REGISTRY
        if rule.kind is ChangeKind.METHOD_RENAME and settings.enabled(rule)
        for old in rule.old
    }


class ProjectClasses:
    """The project's LightningModule subclasses among ``paths``, and each file's bases."""

    def __init__(
        self,
        paths: Iterable[Path],
        hooks: Iterable[str] | None = None,
        holding: Iterable[Path] | None = None,
        known: dict[str, tuple[Bound, Bases]] | None = None,
    ) -> None:
        """Read the classes of ``paths``.

        Args:
            paths: The files of the run.
            hooks: The hook names the rules look for; where given, only the classes of
                the files that hold one of them are followed, through their bases to
                the files those are defined in (a file without the text of a hook has
                nothing a hook rule reports; of 489 real files this parses 7 instead
                of 95). None: every file's classes.
            holding: With ``hooks``, the files seen to hold one of them (by the
                workers that screened the run): no other is read. None: every file.
            known: Of those, the files whose names and bases the screening read from
                its tree (:func:`names_and_bases`), by path as given: not read again.
        """
        self._hooks = None if hooks is None else tuple(hooks)
        self._given_paths = list(paths)
        self._holding = None if holding is None else list(holding)
        self._known = known or {}
        # Each path as the run gives it, resolved once, and only where needed: on a
        # tree no hook leads into (torch's 2,328 files), resolving every path cost more
        # than reading the few files a hook names.
        self._given: dict[str, Path | None] = {}
        self._directories = ResolvedDirectories()
        self._files: dict[Path, _File] = {}
        self._bases: dict[Path, set[str]] = {}
        self._read()

    @functools.cached_property
    def _resolved_paths(self) -> list[Path]:
        """Every Python file of the run, resolved, in the run's order."""
        return list(filter(None, map(self._resolved_given, self._given_paths)))

    @functools.cached_property
    def _paths(self) -> dict[Path, None]:
        """The same, once each (a dict: ordered, and quick to ask)."""
        return dict.fromkeys(self._resolved_paths)

    @functools.cached_property
    def _by_stem(self) -> dict[str, list[str]]:
        """The run's Python files as given, by the last name of their module's path.

        That is the stem of the file each resolves to, or its directory's name for an
        ``__init__.py``. A file that is not a link resolves to its own name in its
        directory: only links and packages are resolved here (a lookup resolves the
        few files of the names it asks about).
        """
        by_stem: dict[str, list[str]] = {}
        for given in map(str, self._given_paths):
            if not given.endswith(".py"):
                continue
            name = os.path.basename(given)
            if name == "__init__.py" or os.path.islink(given):
                resolved = self._resolved_given(given)
                if resolved is None:
                    continue
                stem = _last_name(resolved)
            else:
                stem = name[:-3] if len(name) > 3 else Path(name).stem
            by_stem.setdefault(stem, []).append(given)
        return by_stem

    def _in_run(self, path: Path) -> bool:
        """Whether a file of the run resolves to ``path``."""
        given = self._by_stem.get(_last_name(path), ())
        return any(self._resolved_given(g) == path for g in given)

    def _named(self, dotted: str) -> list[Path]:
        """The run's files ``dotted`` names (see :func:`_module_names`), one per file given."""
        parts = dotted.split(".")
        found = []
        for stem in {".".join(parts[i:]) for i in range(len(parts))}:
            for given in self._by_stem.get(stem, ()):
                path = self._resolved_given(given)
                if path is not None and dotted in _module_names(path):
                    found.append(path)
        return found

    def _resolved_given(self, path: str | Path) -> Path | None:
        key = str(path)
        if key not in self._given:
            self._given[key] = _resolved(path, self._directories)
        return self._given[key]

    def lightning_bases(self, path: str | Path) -> frozenset[str]:
        """The base-class spellings in ``path`` that are the project's LightningModules."""
        if not any(self._bases.values()):
            return frozenset()  # no file has such a base (and no path need be resolved)
        resolved = self._resolved_given(path)
        return frozenset(self._bases.get(resolved, ())) if resolved is not None else frozenset()

    # Reading ------------------------------------------------------------------------

    def _read(self) -> None:
        # The cycle collector off while the trees are built: ``ast``'s allocations set
        # off collections that go over the tree being built.
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._read_bases()
        finally:
            if collecting:
                gc.enable()

    def _read_bases(self) -> None:
        if self._hooks is None:
            texts = {path: _text(path) for path in self._paths}
            derived = self._read_all({p: t for p, t in texts.items() if t is not None})
        else:
            derived = self._read_from_hooks()
        for file in self._files.values():
            spellings = self._bases.setdefault(file.path, set())
            for bases in file.classes.values():
                for base in bases:
                    target = self._resolve(file, base)
                    if target is not None and target[0] != "lightning" and target in derived:
                        spellings.add(base or "")

    def _read_all(self, texts: dict[Path, str]) -> set[tuple[Path, str]]:
        wanted = {LIGHTNING_CLASS, *KNOWN_SUBCLASSES}
        derived: set[tuple[Path, str]] = set()
        while True:  # files naming a class found so far, until nothing new
            names = "|".join(map(re.escape, sorted(wanted)))
            pattern = re.compile(rf"\b(?:{names})\b")
            for path, text in texts.items():
                if path not in self._files and "class" in text and pattern.search(text):
                    self._parse(path, text)
            found = self._derived()
            if found == derived:
                return derived
            derived = found
            wanted |= {name for _, name in derived}

    def _read_from_hooks(self) -> set[tuple[Path, str]]:
        # A class derives from a LightningModule only through the files its bases lead
        # to: those are the files to read, from the files that hold a hook (a byte
        # search: most files of a run hold none, and need no decoding).
        hooks = [hook.encode() for hook in self._hooks or ()]
        texts: dict[Path, str | None] = {}
        queue: deque[Path] = deque()
        searched = self._given_paths if self._holding is None else self._holding
        for given in dict.fromkeys(map(str, searched)):
            if not given.endswith(".py"):
                continue
            named = self._known.get(given)
            data = None if named is not None else _bytes(given)
            if named is not None or (data is not None and any(h in data for h in hooks)):
                path = self._resolved_given(given)
                if path is not None and path not in texts:
                    texts[path] = None if data is None else _decoded(data)
                    queue.append(path)
                    if named is not None and path not in self._files:
                        self._files[path] = _File(path, *named)
        followed: set[Path] = set()
        while queue:
            path = queue.popleft()
            if path in followed:
                continue
            followed.add(path)
            if path not in self._files:
                if path not in texts:
                    texts[path] = _text(path)
                text = texts[path]
                if text is None or "class" not in text:
                    continue
                self._parse(path, text)
            file = self._files.get(path)
            for bases in file.classes.values() if file is not None else ():
                for base in bases:
                    target = self._resolve(file, base)  # type: ignore[arg-type]
                    if target is not None and target[0] != "lightning":
                        queue.append(target[0])  # type: ignore[arg-type]
        return self._derived()

    def _parse(self, path: Path, text: str) -> None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return
        # Names only: the tree is freed now, not gone over by the collector when it is on
        self._files[path] = _File(path, *names_and_bases(tree))

    def _module_file(self, importer: Path, module: str) -> Path | None:
        """The run file ``module`` names, seen from ``importer`` (None: not one of them)."""
        level = len(module) - len(module.lstrip("."))
        dotted = module[level:]
        if level:
            base = importer.parent
            for _ in range(level - 1):
                base = base.parent
            target = base.joinpath(*dotted.split(".")) if dotted else base
            for candidate in (target.with_suffix(".py"), target / "__init__.py"):
                if candidate in self._files or self._in_run(candidate):
                    return candidate
            return None
        found = self._named(dotted)  # a file given twice makes its names ambiguous
        return found[0] if len(found) == 1 else None

    def _resolve(self, file: _File, spelled: str | None) -> tuple[str, ...] | None:
        """What a base names: ``("lightning", name)``, ``(path, class)``, or None."""
        if spelled is None:
            return None
        head, _, rest = spelled.partition(".")
        if not rest and head in file.classes:
            return (file.path, head)  # type: ignore[return-value]
        bound = file.bound.get(head)
        if bound is None:
            return None
        if bound[0] == "from":
            module = bound[1]
            joined = f"{module}{'' if module.endswith('.') else '.'}{bound[2]}"
            qualified = f"{joined}.{rest}" if rest else joined
        else:
            qualified = f"{bound[1]}.{rest}" if rest else bound[1]
        module, _, name = qualified.rpartition(".")
        if qualified.startswith(LIGHTNING_PACKAGES) and qualified.endswith(LIGHTNING_CLASS):
            return ("lightning", qualified)
        if name in KNOWN_SUBCLASSES:
            return ("lightning", name)
        target = self._module_file(file.path, module)
        return None if target is None else (target, name)  # type: ignore[return-value]

    def _derived(self) -> set[tuple[Path, str]]:
        """Every (file, class) of the parsed files that derives from a LightningModule."""
        derived: set[tuple[Path, str]] = set()
        changed = True
        while changed:
            changed = False
            for file in self._files.values():
                for name, bases in file.classes.items():
                    if (file.path, name) in derived:
                        continue
                    for base in bases:
                        target = self._resolve(file, base)
                        if target is not None and (target[0] == "lightning" or target in derived):
                            derived.add((file.path, name))
                            changed = True
                            break
        return derived
