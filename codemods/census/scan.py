"""The deprecation census: every deprecation warning in the FSDP area of torch and Lightning.

The census reads source files, never imports them: it finds ``warnings.warn(...)`` with a
deprecation category (or a ``UserWarning`` whose text announces a deprecation),
``@deprecated(...)`` decorators (``typing_extensions``/``warnings``) and Lightning's
``rank_zero_deprecation(...)``/``rank_zero_warn(...)`` helpers (and a logger's
``warning(...)`` whose text announces a deprecation: torch logs a few), and renders each message
to one text: implicit concatenation and ``+`` joined, f-string holes kept as ``{name}``,
whitespace collapsed. ``codemods.registry.deprecations`` triages each known message to
the rule that answers it, or says why none does.

    python -m codemods.census                    # the installed torch and Lightning
    python -m codemods.census --root DIR         # an unpacked tree (DIR/torch/...)
    python -m codemods.census --render docs/coverage.md

Example:
    >>> import textwrap
    >>> source = textwrap.dedent('''
    ...     import warnings
    ...     def old(n):
    ...         warnings.warn(f"`old` is deprecated; "
    ...                       f"pass {n} to `new`", FutureWarning)
    ... ''')
    >>> [f.message for f in scan_source(source, "m.py", "pkg")]
    ['`old` is deprecated; pass {n} to `new`']
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

from codemods.syntax.alias_positions import parse

#: Categories that are deprecations whatever the text says.
DEPRECATION_CATEGORIES = frozenset(
    {
        "FutureWarning",
        "DeprecationWarning",
        "PendingDeprecationWarning",
        "LightningDeprecationWarning",
    }
)
#: Text that makes any other warning a deprecation (torch's ``use_reentrant`` warning is a
#: plain ``UserWarning`` announcing a default change, later that the call will raise).
DEPRECATION_WORDS = re.compile(
    r"deprecat|will be removed|will raise an exception|default value of \S+ will be",
    re.IGNORECASE,
)
#: Lightning's helpers, with the category each warns with when none is passed.
_HELPERS = {"rank_zero_deprecation": "LightningDeprecationWarning", "rank_zero_warn": "UserWarning"}
#: Lightning's FSDP-area files among its strategies and plugins.
_LIGHTNING_FILES = r"fsdp|fully_shard|model_parallel"


@dataclass(frozen=True)
class Area:
    """A part of a package the census reads.

    Attributes:
        package: The dotted name findings are filed under (``pytorch_lightning`` sources
            are filed under ``lightning.pytorch``: they are the same code).
        path: A directory or ``.py`` file, relative to the directory holding the
            top-level package.
        files: A regular expression the file names must match (``None``: every file).
    """

    package: str
    path: str
    files: str | None = None

    @property
    def top(self) -> str:
        """The top-level package the area belongs to."""
        return self.path.split("/", 1)[0]


def _lightning(package: str, top: str) -> tuple[Area, ...]:
    return tuple(
        Area(package, f"{top}/{part}", _LIGHTNING_FILES) for part in ("strategies", "plugins")
    )


AREAS: tuple[Area, ...] = (
    Area("torch.distributed.fsdp", "torch/distributed/fsdp"),
    Area("torch.distributed.checkpoint", "torch/distributed/checkpoint"),
    Area("torch.distributed.tensor", "torch/distributed/tensor"),
    Area("torch.distributed._tensor", "torch/distributed/_tensor"),
    Area("torch.distributed.device_mesh", "torch/distributed/device_mesh.py"),
    Area("torch.distributed._shard.checkpoint", "torch/distributed/_shard/checkpoint"),
    Area("torch.distributed._composable", "torch/distributed/_composable"),
    Area("torch.utils.checkpoint", "torch/utils/checkpoint.py"),
    *_lightning("lightning.pytorch", "lightning/pytorch"),
    # the Trainer's check of the sharded-model hooks (`configure_sharded_model`)
    Area("lightning.pytorch", "lightning/pytorch/trainer/configuration_validator.py"),
    Area("lightning.pytorch", "pytorch_lightning/trainer/configuration_validator.py"),
    *_lightning("lightning.fabric", "lightning/fabric"),
    *_lightning("lightning.pytorch", "pytorch_lightning"),
    *_lightning("lightning.fabric", "lightning_fabric"),
)


@dataclass(frozen=True, order=True)
class Finding:
    """One deprecation warning in a package's source.

    Attributes:
        package: The area's dotted name (``torch.distributed.fsdp``).
        file: The file, relative to the directory holding the top-level package.
        line: The line of the ``warn`` call or the decorator.
        scope: The enclosing class and function (``FullyShardedDataParallel.state_dict_type``;
            ``<module>`` at the top level).
        message: The rendered, whitespace-normalised text.
        category: The warning class's name (``log`` for a logger's warning).
        form: ``warn``, ``decorator``, ``log`` or the helper's name.
    """

    package: str
    file: str
    line: int
    scope: str
    message: str
    category: str
    form: str


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


class _Renderer:
    """Turns a message expression into text; names bound to strings are looked up."""

    def __init__(self, bindings: dict[str, ast.expr]):
        self.bindings = bindings

    def __call__(self, node: ast.expr, depth: int = 0) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return "".join(
                part.value if isinstance(part, ast.Constant) else f"{{{ast.unparse(part.value)}}}"
                for part in node.values
            )
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self(node.left, depth) + self(node.right, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return self(node.left, depth)  # "%s" holes stay as written
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "format":
                return self(node.func.value, depth)  # "{}" holes stay as written
        if isinstance(node, ast.Name) and node.id in self.bindings and depth < 5:
            return self(self.bindings[node.id], depth + 1)
        return f"{{{ast.unparse(node)}}}"


def _string_bindings(body: Sequence[ast.stmt]) -> dict[str, ast.expr]:
    """``name = <string expression>`` assignments in a body (the last one wins)."""
    found: dict[str, ast.expr] = {}
    for stmt in body:
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, (ast.Constant, ast.JoinedStr, ast.BinOp))
            ):
                found[node.targets[0].id] = node.value
    return found


def _argument(call: ast.Call, index: int | None, *keywords: str) -> ast.expr | None:
    """The argument passed by one of ``keywords`` or at ``index`` (None: keyword only)."""
    for keyword in call.keywords:
        if keyword.arg in keywords:
            return keyword.value
    if index is None:
        return None
    positional = [arg for arg in call.args if not isinstance(arg, ast.Starred)]
    return positional[index] if len(positional) > index else None


class _Scanner(ast.NodeVisitor):
    def __init__(self, file: str, package: str, module: ast.Module):
        self.file, self.package = file, package
        self.scopes: list[str] = []
        self.bindings = [_string_bindings(module.body)]
        self.findings: list[Finding] = []
        self.seen: set[int] = set()

    def _visit_scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scopes.append(node.name)
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Call) and self._deprecated_call(decorator):
                self.seen.add(id(decorator))
        is_function = not isinstance(node, ast.ClassDef)
        if is_function:
            self.bindings.append({**self.bindings[-1], **_string_bindings(node.body)})
        self.generic_visit(node)
        if is_function:
            self.bindings.pop()
        self.scopes.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _visit_scope

    def visit_Call(self, node: ast.Call) -> None:
        if id(node) not in self.seen:
            self._deprecated_call(node)
        self.generic_visit(node)

    def _deprecated_call(self, call: ast.Call) -> bool:
        name = _last_name(call.func)
        if name == "warn" and (
            isinstance(call.func, ast.Name)
            or _last_name(getattr(call.func, "value", call)) == "warnings"
        ):
            form, default, message = "warn", "UserWarning", _argument(call, 0, "message")
            category_node = _argument(call, 1, "category")
        elif name in ("warning", "warn") and re.search(
            "log", _last_name(getattr(call.func, "value", call)), re.I
        ):
            # torch also announces some deprecations through its module loggers
            form, default, message = "log", "log", _argument(call, 0, "msg")
            category_node = None
        elif name in _HELPERS:
            form, default, message = name, _HELPERS[name], _argument(call, 0, "message")
            category_node = _argument(call, None, "category")
        elif name == "deprecated":
            form, default = "decorator", "DeprecationWarning"
            message = _argument(call, 0, "message", "msg", "reason")
            category_node = _argument(call, None, "category")
        else:
            return False
        category = _last_name(category_node) if category_node is not None else default
        if message is None:
            text = f"{'.'.join(self.scopes) or '<module>'} is deprecated"
        else:
            text = " ".join(_Renderer(self.bindings[-1])(message).split())
        if category not in DEPRECATION_CATEGORIES and not DEPRECATION_WORDS.search(text):
            return False
        scope = ".".join(self.scopes) or "<module>"
        self.findings.append(
            Finding(self.package, self.file, call.lineno, scope, text, category or default, form)
        )
        return True


def scan_source(source: str, file: str, package: str) -> list[Finding]:
    """The deprecation warnings in one module's source.

    Raises:
        SyntaxError: If the source does not parse.
    """
    module = parse(source, filename=file)
    scanner = _Scanner(file, package, module)
    scanner.visit(module)
    return sorted(scanner.findings, key=lambda f: (f.line, f.message))


def _area_files(root: Path, area: Area) -> Iterator[Path]:
    where = root / area.path
    if where.is_file():
        yield where
    elif where.is_dir():
        for path in sorted(where.rglob("*.py")):
            if area.files is None or re.search(area.files, path.name):
                yield path


def scan_tree(root: Path, areas: Iterable[Area] = AREAS) -> list[Finding]:
    """The deprecation warnings of every area present under ``root``.

    ``root`` holds top-level packages (``root/torch/distributed/...``); areas whose path
    is missing are skipped, so one tree may hold torch only, Lightning only, or both.
    """
    findings: list[Finding] = []
    for area in areas:
        for path in _area_files(root, area):
            file = path.relative_to(root).as_posix()
            findings.extend(scan_source(path.read_text(encoding="utf-8"), file, area.package))
    return sorted(set(findings), key=lambda f: (f.package, f.file, f.line))


def installed_roots(tops: Iterable[str] | None = None) -> dict[str, Path]:
    """Where each installed top-level package lives (its parent directory), unimported.

    ``find_spec`` of a top-level name only locates it; nothing of torch or Lightning runs.
    """
    roots: dict[str, Path] = {}
    for top in tops if tops is not None else sorted({area.top for area in AREAS}):
        spec = find_spec(top)
        if spec is not None and spec.submodule_search_locations:
            roots[top] = Path(next(iter(spec.submodule_search_locations))).parent
    return roots


def scan_installed(areas: Iterable[Area] = AREAS) -> list[Finding]:
    """The deprecation warnings in the installed torch's and Lightning's sources."""
    areas = tuple(areas)
    roots = installed_roots({area.top for area in areas})
    found = [
        finding
        for top, root in roots.items()
        for finding in scan_tree(root, [a for a in areas if a.top == top])
    ]
    return sorted(found, key=lambda f: (f.package, f.file, f.line))


def table(findings: Sequence[Finding]) -> str:
    """The findings as a plain-text table, one per line, with a count per package."""
    lines = [f"{f.file}:{f.line} [{f.category}] {f.scope}: {f.message}" for f in findings]
    counts: dict[str, int] = {}
    for finding in findings:
        counts[finding.package] = counts.get(finding.package, 0) + 1
    lines.append("")
    lines.extend(f"{count:4d}  {package}" for package, count in sorted(counts.items()))
    lines.append(f"{len(findings):4d}  in all")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: print the census, or write the coverage page."""
    parser = argparse.ArgumentParser(
        prog="python -m codemods.census", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--root", type=Path, help="scan this tree (holding torch/, lightning/...)")
    parser.add_argument("--render", type=Path, metavar="PAGE", help="write the coverage page")
    parser.add_argument("--check", action="store_true", help="with --render: exit 1 if it is stale")
    parser.add_argument(
        "--untriaged", action="store_true", help="list only findings no entry matches"
    )
    args = parser.parse_args(argv)
    if args.render:
        from codemods.census.page import render_page

        text = render_page()
        if args.check:
            current = args.render.read_text(encoding="utf-8") if args.render.exists() else ""
            if current != text:
                print(
                    f"{args.render} is stale: run python -m codemods.census --render {args.render}"
                )
                return 1
            return 0
        args.render.write_text(text, encoding="utf-8")
        print(f"wrote {args.render}")
        return 0
    if args.root is not None and not args.root.is_dir():
        parser.error(f"--root {args.root}: no such directory")
    try:
        findings = scan_tree(args.root) if args.root is not None else scan_installed()
    except SyntaxError as error:
        print(f"cannot parse {error.filename}:{error.lineno}: {error.msg}", file=sys.stderr)
        return 2
    if args.untriaged:
        from codemods.registry.deprecations import matching

        findings = [f for f in findings if not matching(f.package, f.message, f.scope)]
    print(table(findings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
