"""The evidence's names come from the tree's index in the order a walk would give them.

:func:`codemods.screen.evidence._names` reads the imports and attributes from the
index (no walk of its own); where two names appeared in the same release, the first
met names the floor's evidence, so the order is part of the output. The reference
here is the walk the module made before: every node outside the gated and fallback
blocks, a node's children taken last first.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from codemods.screen.evidence import _gate, _names
from codemods.syntax.gates import catches_import_error
from tests.realistic_tree import build_tree

ROOT = Path(__file__).resolve().parents[1]


def _walked(tree: ast.Module) -> Iterator[str]:
    bound: dict[str, str] = {}
    attributes = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Try) and any(map(catches_import_error, node.handlers)):
            continue
        if isinstance(node, ast.If) and _gate(node.test):
            continue
        stack.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
                top = alias.name.partition(".")[0]
                bound[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                qualified = node.module if alias.name == "*" else f"{node.module}.{alias.name}"
                yield qualified
                if alias.name != "*":
                    bound[alias.asname or alias.name] = qualified
        elif isinstance(node, ast.Attribute):
            attributes.append(node)
    for node in attributes:
        root, _, rest = ast.unparse(node).partition(".")
        base = node
        while isinstance(base, ast.Attribute):
            base = base.value
        if isinstance(base, ast.Name) and root in bound:
            yield f"{bound[root]}.{rest}"


CASES = {
    "nested and gated": (
        "import torch\nimport torch.distributed as dist\n"
        "from torch.distributed.fsdp import wrap as w\n"
        "@dist.fsdp.api.decorate(torch.a.b)\n"
        "def f(x=torch.nn.Linear, *, y=dist.c.d) -> torch.ret.type:\n"
        "    import torch.distributed.fsdp.wrap\n"
        "    return {torch.k1: dist.v1, torch.k2: dist.v2}\n"
        "value = torch.x.y if dist.t.u else w.ModuleWrapPolicy.z\n"
        "try:\n    from torch.distributed.fsdp import MixedPrecision\n"
        "except ImportError:\n    MixedPrecision = torch.q.r\n"
        "if torch.__version__ >= '2.4':\n    from torch.distributed._composable import fsdp\n"
        "else:\n    fsdp = dist.e.f\n"
        "f(torch.p.q, key=dist.g.h, *torch.s.t)\n"
    ),
}


def _sources() -> dict[str, str]:
    sources = {f"case:{name}": source for name, source in CASES.items()}
    sources.update({f"tree:{path}": text for path, text in build_tree(16).items()})
    examples = (ROOT / "examples" / "legacy").glob("*.py")
    sources.update({f"example:{p.name}": p.read_text(encoding="utf-8") for p in examples})
    return sources


@pytest.mark.parametrize(("name", "source"), sorted(_sources().items()))
def test_the_names_come_in_the_walks_order(name, source):
    tree = ast.parse(source)
    assert list(_names(tree)) == list(_walked(tree))
