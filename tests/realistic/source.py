"""Assemble one generated file: code chunks, the imports they need, the import layout.

A file is built from chunks of code (functions, classes, blocks). The imports are not
written by hand: the names a chunk reads and nothing binds are looked up in an import
table (``tests.realistic.imports``), so a generated file never has an unused import or an
undefined name before migration, whatever chunks it was given.
"""

from __future__ import annotations

import builtins
import random
import symtable
from dataclasses import dataclass, field
from string import Template

BUILTIN_NAMES = frozenset(dir(builtins)) | {"__file__", "__name__"}

STDLIB = frozenset(
    "abc argparse collections contextlib copy dataclasses datetime enum functools gc glob "
    "importlib inspect io itertools json logging math operator os pathlib pickle platform "
    "random re shutil signal socket statistics string subprocess sys tempfile textwrap "
    "threading time traceback types typing unittest uuid warnings".split()
)


def fill(text: str, **values: object) -> str:
    """``text`` with ``$name`` placeholders replaced (``string.Template``), stripped.

    >>> fill("class ${P}Block:\\n    width = $w\\n", P="Text", w=4)
    'class TextBlock:\\n    width = 4'
    """
    return Template(text).substitute({k: str(v) for k, v in values.items()}).strip("\n")


@dataclass(frozen=True)
class Import:
    """One imported name: ``import module [as alias]`` or ``from module import name``."""

    module: str
    name: str | None = None
    alias: str | None = None

    @classmethod
    def parse(cls, line: str) -> Import:
        """Read one import statement of a single name.

        >>> Import.parse("from torch.distributed.fsdp import FullyShardedDataParallel as FSDP")
        Import(module='torch.distributed.fsdp', name='FullyShardedDataParallel', alias='FSDP')
        """
        words = line.split()
        if words[0] == "import":
            return cls(words[1], None, words[3] if len(words) == 4 else None)
        return cls(words[1], words[3], words[5] if len(words) == 6 else None)

    @property
    def bound(self) -> str:
        """The name the statement binds."""
        if self.name is None:
            return self.alias or self.module.split(".")[0]
        return self.alias or self.name

    def clause(self) -> str:
        """How the name appears in a ``from`` import: ``name`` or ``name as alias``."""
        return f"{self.name} as {self.alias}" if self.alias else str(self.name)


def free_names(source: str) -> set[str]:
    """Names ``source`` reads that nothing in it binds, nor the builtins.

    >>> sorted(free_names("def f(x):\\n    return torch.relu(x) + y\\ny = len([])"))
    ['torch']
    """
    top = symtable.symtable(source, "<generated>", "exec")
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    bound |= {s.get_name() for s in top.get_symbols() if s.is_namespace()}
    read: set[str] = set()
    tables = [top]
    while tables:  # symtable works in C: far faster than walking the ast in Python
        table = tables.pop()
        tables.extend(table.get_children())
        for symbol in table.get_symbols():
            if symbol.is_referenced() and (table is top or symbol.is_global()):
                read.add(symbol.get_name())
    return read - bound - BUILTIN_NAMES


@dataclass
class SourceFile:
    """A file under construction.

    Args:
        rng: this file's random source (layout choices).
        table: name -> the import statements that may bind it (one is picked per file).
        preludes: name -> a module-level statement that binds it (``logger = ...``).
        package: the generated package's name (its imports go last).
        comments: imported name -> comments that may follow it in a parenthesized import.
    """

    rng: random.Random
    table: dict[str, list[str]]
    preludes: dict[str, str]
    package: str
    comments: dict[str, list[str]] = field(default_factory=dict)
    chunks: list[str] = field(default_factory=list)
    head: list[str] = field(default_factory=list)
    pinned: dict[str, str] = field(default_factory=dict)

    def add(self, *chunks: str) -> None:
        """Append top-level chunks (separated by two blank lines)."""
        self.chunks.extend(c.strip("\n") for c in chunks if c.strip())

    def add_head(self, *chunks: str) -> None:
        """Append chunks that sit right after the imports (fallbacks, version flags)."""
        self.head.extend(c.strip("\n") for c in chunks if c.strip())

    def pin(self, *lines: str) -> None:
        """Bind these names with these imports in this file, whatever the table says."""
        for line in lines:
            self.pinned[Import.parse(line).bound] = line

    @property
    def line_count(self) -> int:
        """Lines so far, about (imports not counted)."""
        return sum(c.count("\n") + 3 for c in self.chunks + self.head)

    def render(self, docstring: str, future: bool = True) -> str:
        """The file's text: docstring, imports, preludes, head chunks, chunks."""
        body = "\n\n\n".join(self.head + self.chunks) + "\n"
        free = free_names(body)
        preludes: list[str] = []
        while True:
            missing = sorted(n for n in free if n in self.preludes and n not in self.pinned)
            missing = [n for n in missing if self.preludes[n] not in preludes]
            if not missing:
                break
            for name in missing:
                preludes.append(self.preludes[name])
                free = (free - {name}) | free_names(self.preludes[name])
        imports = [self._resolve(name) for name in sorted(free)]
        parts = [f'"""{docstring}"""\n'] if docstring else []
        if future:
            parts.append("from __future__ import annotations\n")
        parts.append(self._import_block(imports))
        if preludes:
            parts.append("\n".join(preludes) + "\n")
        return "\n".join(p for p in parts if p) + "\n\n" + body

    def _resolve(self, name: str) -> Import:
        if name in self.pinned:
            return Import.parse(self.pinned[name])
        if name not in self.table:
            raise KeyError(f"the generated code reads {name!r}, which nothing binds")
        line = self.rng.choice(self.table[name])
        self.pinned[name] = line
        return Import.parse(line)

    def _group(self, module: str) -> int:
        root = module.split(".")[0]
        if module.startswith(".") or root == self.package:
            return 2
        return 0 if root in STDLIB else 1

    def _import_block(self, imports: list[Import]) -> str:
        unsorted = self.rng.random() < 0.2  # legacy files are not always isort-clean
        sections = []
        for group in range(3):
            mine = sorted({i for i in imports if self._group(i.module) == group}, key=repr)
            plain = sorted({i for i in mine if i.name is None}, key=lambda i: (i.module, i.alias))
            lines = [f"import {i.module}" + (f" as {i.alias}" if i.alias else "") for i in plain]
            modules = sorted({i.module for i in mine if i.name is not None})
            if unsorted:
                self.rng.shuffle(modules)
            for module in modules:
                names = sorted({i for i in mine if i.module == module and i.name}, key=repr)
                lines.append(self._from_import(module, names, unsorted))
            if lines:
                sections.append("\n".join(lines) + "\n")
        return "\n".join(sections)

    def _from_import(self, module: str, names: list[Import], unsorted: bool) -> str:
        clauses = sorted((i.clause() for i in names), key=lambda c: (c.lower(), c))
        if unsorted:
            self.rng.shuffle(clauses)
        one_line = f"from {module} import {', '.join(clauses)}"
        style = self.rng.random()
        if len(one_line) <= 99 and (len(clauses) < 3 or style < 0.5):
            return one_line
        if style < 0.75 or len(clauses) < 3:  # one name a line, a comment here and there
            lines = [f"from {module} import ("]
            for clause in clauses:
                notes = self.comments.get(clause.split()[0], [])
                note = f"  {self.rng.choice(notes)}" if notes and self.rng.random() < 0.6 else ""
                lines.append(f"    {clause},{note}")
            return "\n".join(lines + [")"])
        # the grid layout older isort and autopep8 produced
        indent = " " * len(f"from {module} import (")
        rows, row = [], ""
        for clause in clauses:
            if row and len(indent) + len(row) + len(clause) + 2 > 88:
                rows.append(row.rstrip())
                row = ""
            row += f"{clause}, "
        rows.append(row.rstrip(", ") + ")")
        return f"from {module} import (" + f"\n{indent}".join(rows)
