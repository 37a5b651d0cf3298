"""The project's import graph: no cycles, and the registry and compat keep to their contract.

The graph is built with ``ast`` from every module of ``compat/`` and ``codemods/``, with
the imports at module level and those inside functions alike (a function-local import
that closes a cycle only hides it until the function runs first). An import of
``a.b.c`` also runs ``a`` and ``a.b`` unless the importer lives inside them, so those
packages count as imported too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.checkout_env import checkout_env

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("compat", "codemods")

#: Cycles the project knows of and is removing, as (importer, imported) edges to ignore.
KNOWN_EDGES: set[tuple[str, str]] = set()


def find_modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Every module of ``packages`` under ``root``, by dotted name."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


MODULES = find_modules(ROOT, PACKAGES)


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _project_module(dotted: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``dotted`` that is a project module."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def direct_imports(name: str, modules: dict[str, Path] = MODULES) -> set[str]:
    """The project modules ``name`` names in its import statements, wherever they stand."""
    tree = ast.parse(modules[name].read_text(encoding="utf-8"))
    package = name if modules[name].name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            # `from a import b` imports the module a.b where there is one, else a.
            targets = [f"{origin}.{alias.name}" for alias in node.names] + [origin]
        else:
            continue
        for target in targets:
            module = _project_module(target, modules)
            if module is not None and module != name:
                found.add(module)
    return found


def edges(name: str, modules: dict[str, Path] = MODULES) -> set[str]:
    """What importing ``name`` runs: its imports, and their packages outside its own."""
    own = set(_ancestors(name)) | {name}
    result = set()
    for target in direct_imports(name, modules):
        result |= {module for module in [*_ancestors(target), target] if module not in own}
    return {target for target in result if (name, target) not in KNOWN_EDGES}


def find_cycles(modules: dict[str, Path] = MODULES) -> list[list[str]]:
    """Every strongly connected group of two or more modules (Tarjan), each sorted."""
    graph = {name: sorted(edges(name, modules)) for name in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for name in graph:
        if name not in index:
            visit(name)
    return sorted(groups)


def test_the_graph_sees_both_packages_and_local_imports():
    assert {"compat.fsdp.wrap", "compat.policies", "codemods.registry.names"} <= set(MODULES)
    # compat.checkpointing imports torch's checkpoint wrapper inside functions only.
    assert "compat.policies" in direct_imports("compat.checkpointing")


def test_no_import_cycle():
    assert find_cycles() == []


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.startswith("codemods.registry")))
def test_the_registry_imports_only_itself(name):
    outside = {m for m in direct_imports(name) if not m.startswith("codemods.registry")}
    assert outside == set()


#: What compat may take from codemods: the registry (with its shared names), the version,
#: and what a warning asks of a call (what migrate does with it: the fixes' per-call
#: decision, the ``ast`` lint of the file, the releases it runs on), none of which loads
#: libcst (test_a_warning_about_a_call_loads_no_libcst).
COMPAT_MAY_IMPORT = (
    "codemods.registry",
    "codemods._version",
    "codemods.rules.call_blockers",
    "codemods.syntax",
    "codemods.astlint.lint",
    "codemods.settings",
    "codemods.releases",
    "codemods.screen.evidence",
    "codemods.cli.targets",
    "codemods.cli.config",
)


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.split(".")[0] == "compat"))
def test_compat_imports_only_the_registry_from_codemods(name):
    taken = {m for m in direct_imports(name) if m.split(".")[0] == "codemods"}
    assert {m for m in taken if not m.startswith(COMPAT_MAY_IMPORT)} == set()


def test_a_warning_about_a_call_loads_no_libcst(tmp_path):
    """compat's verdict on a FairScale call runs the codemod's ``ast`` lint, not libcst."""
    script = tmp_path / "train.py"
    script.write_text(
        "import sys\n"
        "from compat.call_source import _verdicts\n"
        "source = b'from fairscale.nn import FullyShardedDataParallel as F\\nF(m, verbose=1)\\n'\n"
        "assert _verdicts(source, 'FSDP301') is not None\n"
        "assert 'libcst._nodes.base' not in sys.modules, 'libcst loaded'\n"
    )
    run = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=checkout_env(),
        timeout=120,
    )
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize(
    ("files", "cycles"),
    [
        # Two modules importing each other inside functions, one of them relatively.
        (
            {
                "a.py": "def f():\n    from pkg import b\n",
                "b.py": "def g():\n    from . import a\n",
            },
            [["pkg.a", "pkg.b"]],
        ),
        # Importing pkg.sub.c runs pkg/sub/__init__.py, which imports back.
        (
            {
                "a.py": "import pkg.sub.c\n",
                "sub/__init__.py": "from pkg import a\n",
                "sub/c.py": "",
            },
            [["pkg.a", "pkg.sub"]],
        ),
        # A package importing its own submodules, and they their siblings, is no cycle.
        ({"__init__.py": "from pkg import a\n", "a.py": "from pkg import b\n", "b.py": ""}, []),
    ],
)
def test_the_checker_finds_cycles(tmp_path, files, cycles):
    files = {"__init__.py": "", "sub/__init__.py": "", **files}
    for relative, text in files.items():
        (tmp_path / "pkg" / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / relative).write_text(text)
    assert find_cycles(find_modules(tmp_path, ("pkg",))) == cycles


#: The stages of ``codemods``, lowest first: a module imports only from its own stage's
#: packages and from lower stages (``docs/contributing.md`` draws the same line).
STAGES: tuple[tuple[str, ...], ...] = (
    ("codemods.registry", "codemods._version", "codemods"),
    ("codemods.settings", "codemods.findings", "codemods.syntax"),
    ("codemods.screen", "codemods.verify"),
    ("codemods.rules",),
    ("codemods.astlint",),
    ("codemods.engine",),
    ("codemods.batch", "codemods.census"),
    ("codemods.cli", "codemods.lint", "codemods.migrate"),
)


def stage_of(name: str) -> tuple[int, str]:
    """The stage of a ``codemods`` module, and the package (or module) that places it."""
    best: tuple[int, str] | None = None
    for index, members in enumerate(STAGES):
        for member in members:
            inside = name == member or name.startswith(member + ".")
            if inside and (best is None or len(member) > len(best[1])):
                best = (index, member)
    assert best is not None, f"{name} belongs to no stage: add its package to STAGES"
    return best


CODEMODS = {name: path for name, path in MODULES.items() if name.split(".")[0] == "codemods"}


@pytest.mark.parametrize("name", sorted(CODEMODS))
def test_imports_point_down_the_stages(name):
    index, home = stage_of(name)
    upward = []
    for target in direct_imports(name):
        if target.split(".")[0] != "codemods":
            continue
        other, place = stage_of(target)
        if place != home and other >= index and not (name == "codemods" or place == "codemods"):
            upward.append(target)
    # Within a stage, packages stay apart (cli's entry modules aside: they are its own).
    same_stage = {"codemods.cli", "codemods.lint", "codemods.migrate"}
    upward = [t for t in upward if not (home in same_stage and stage_of(t)[1] in same_stage)]
    assert upward == []


def test_the_packages_make_at_most_eight_layers():
    """The longest chain of package imports (each package counted once) is 8 or fewer."""
    packages = {stage_of(name)[1] for name in CODEMODS}
    graph: dict[str, set[str]] = {package: set() for package in packages}
    for name in CODEMODS:
        home = stage_of(name)[1]
        for target in direct_imports(name):
            if target.split(".")[0] == "codemods" and stage_of(target)[1] != home:
                graph[home].add(stage_of(target)[1])
    graph["codemods"].discard("codemods._version")  # the package's own version number

    depth: dict[str, int] = {}

    def layer(package: str) -> int:
        if package not in depth:
            depth[package] = 1 + max((layer(t) for t in graph[package]), default=0)
        return depth[package]

    assert max(layer(package) for package in packages) <= 8


def test_at_most_twelve_modules_stand_directly_in_codemods():
    direct = [
        name
        for name in CODEMODS
        if name.count(".") == 1 and not MODULES[name].name == "__init__.py"
    ]
    assert len(direct) + 1 <= 12, direct  # and the package's own __init__


#: The registry's rule tables: data, one entry per rule, which may grow past the limit.
RULE_TABLES = ("codemods.registry.deprecations",)


def _is_rule_table(name: str) -> bool:
    return name in RULE_TABLES or (
        name.startswith("codemods.registry.") and name.endswith("_rules")
    )


def test_no_module_of_code_is_over_four_hundred_lines():
    sizes = {
        name: MODULES[name].read_text(encoding="utf-8").count("\n")
        for name in CODEMODS
        if not _is_rule_table(name)
    }
    assert {name: n for name, n in sizes.items() if n > 400} == {}, "split them by what they hold"
