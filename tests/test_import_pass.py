"""The import pass's short cuts give what libcst's import visitors give on the whole module.

:mod:`codemods.engine.imports.finish` adds imports without libcst's ``AddImportsVisitor``
(:mod:`codemods.engine.imports.adding`), and removes them line by line where the module's text
makes the answer certain, instead of ``RemoveImportsVisitor`` on the whole module
(issue 18: the visitors took about 3 s of a 600-line script's 4 s). Each
case here compares the result with the visitors' own on the whole module, byte for byte,
but the last two: where a later top-level line imports from the same module (real
scripts set flags between imports), the pass puts the name there on purpose.
"""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
from libcst.metadata import MetadataWrapper

from codemods.engine.imports.adding import add_imports
from codemods.engine.imports.finish import _read_names, _remove_unused_imports
from codemods.engine.run import run
from codemods.settings import Settings

_BODY = "\n\ndef train(model):\n    return model\n"

ADDS = {
    "docstring-first": '"""Training."""\nimport os\n' + _BODY,
    "no-imports": "x = 1\n" + _BODY,
    "imports-only": "import os\nfrom torch.distributed.fsdp.wrap import size_based_auto_wrap_policy"
    + "\n",
    "merges-into-existing": "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
    + _BODY,
    "comment-before-code": "import os\n# the model\nx = 1\n" + _BODY,
    "future-import": "from __future__ import annotations\n\nimport os\n" + _BODY,
    "nested-import-only": "x = 1\n\n\ndef f():\n    from torch.distributed.fsdp.wrap import A\n",
    "already-there": "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n" + _BODY,
    "crlf": "import os\r\nx = 1\r\n",
}


@pytest.mark.parametrize("source", ADDS.values(), ids=ADDS.keys())
def test_adding_on_the_top_gives_what_the_whole_module_gives(source):
    def context() -> CodemodContext:
        ctx = CodemodContext(filename="train.py")
        AddImportsVisitor.add_needed_import(ctx, "torch.distributed.fsdp.wrap", "ModuleWrapPolicy")
        AddImportsVisitor.add_needed_import(ctx, "functools", "partial", asname="p")
        return ctx

    tree = cst.parse_module(source)
    expected = AddImportsVisitor(context()).transform_module(tree).code
    wanted = [
        ("torch.distributed.fsdp.wrap", "ModuleWrapPolicy", None),
        ("functools", "partial", "p"),
    ]
    assert add_imports(tree, wanted).code == expected


_POLICY = ("torch.distributed.fsdp.wrap", "transformer_auto_wrap_policy", None)
_FUNCTOOLS = ("functools", None, None)
_IMPORTS = (
    "import functools\n"
    "from torch.distributed.fsdp.wrap import (\n"
    "    ModuleWrapPolicy,\n"
    "    transformer_auto_wrap_policy,  # old\n"
    ")\n"
)
REMOVES = {
    # certainly unused: only on its import line
    "unused-in-parentheses": (
        _IMPORTS + "policy = ModuleWrapPolicy({A})\nfunctools.reduce\n",
        [_POLICY],
    ),
    "unused-alone": (
        "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\nx = 1\n",
        [_POLICY],
    ),
    "unused-first-of-two": (
        "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy, B\nB\n",
        [_POLICY],
    ),
    # certainly used: read, and bound by imports only
    "read-module": (_IMPORTS + "functools.partial(f)\nModuleWrapPolicy\n", [_FUNCTOOLS, _POLICY]),
    # neither: the whole module's scopes decide
    "in-a-string": (
        _IMPORTS + '__all__ = ["transformer_auto_wrap_policy"]\nModuleWrapPolicy\n',
        [_POLICY],
    ),
    "in-a-comment": (
        _IMPORTS + "# transformer_auto_wrap_policy is gone\nModuleWrapPolicy\n",
        [_POLICY],
    ),
    "shadowed-by-a-parameter": (
        _IMPORTS + "def f(functools):\n    return functools\nModuleWrapPolicy\n",
        [_FUNCTOOLS, _POLICY],
    ),
    "nested-import": (
        _IMPORTS
        + "def f():\n    from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n",
        [_POLICY],
    ),
    "star-import": (
        "from torch.distributed.fsdp.wrap import *\n" + _IMPORTS,
        [_POLICY, _FUNCTOOLS],
    ),
    "attribute-of-the-same-name": (
        _IMPORTS + "x.transformer_auto_wrap_policy\nModuleWrapPolicy\nfunctools\n",
        [_POLICY],
    ),
}


@pytest.mark.parametrize(("source", "queued"), REMOVES.values(), ids=REMOVES.keys())
def test_removing_line_by_line_gives_what_the_whole_module_gives(source, queued):
    def context() -> CodemodContext:
        ctx = CodemodContext(filename="train.py")
        for module, name, asname in queued:
            RemoveImportsVisitor.remove_unused_import(ctx, module, name, asname)
        return ctx

    tree = cst.parse_module(source)
    expected = RemoveImportsVisitor(context()).transform_module(tree).code
    assert _remove_unused_imports(list(queued), tree).code == expected


def test_the_short_cuts_are_taken():
    """The common cases do not fall back (else the figures of issue 18 would not hold)."""
    tree = cst.parse_module(REMOVES["unused-in-parentheses"][0])
    calls = []
    original = RemoveImportsVisitor.transform_module

    def counted(self, module):
        calls.append(len(module.body))
        return original(self, module)

    RemoveImportsVisitor.transform_module = counted
    try:
        _remove_unused_imports([_POLICY], tree)
    finally:
        RemoveImportsVisitor.transform_module = original
    assert calls == []  # the one line by codemods.engine.imports.removal, no visitor on the module


@pytest.mark.parametrize(
    ("code", "read"),
    [
        ("import a\na.b\n", True),
        ("import a\na = 1\na\n", False),
        ("import a\ndef f(a):\n    a\n", False),
        ("import a\nfor a in x:\n    a\n", False),
        ("import a\ntry:\n    pass\nexcept E as a:\n    a\n", False),
        ("from m import *\nimport a\na\n", False),
        ("import a\nclass a:\n    pass\na\n", False),
        ("import a\ndef g():\n    global a\n    a\n", False),
        ("import a\n[a for a in x]\n", False),
        ("import a\nwith x as a:\n    a\n", False),
        ("import a\ndel a\n", False),
        ("not python (", False),
    ],
)
def test_a_read_name_bound_by_imports_only_is_certainly_used(code, read):
    assert ("a" in _read_names(code)) is read


_PARTIAL = (
    "policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})\n"
)
#: (before, the import lines after): black's one-name-a-line imports the fix changes.
ONE_NAME_A_LINE = {
    "the only name swapped": (
        "import functools\n\nfrom torch.distributed.fsdp.wrap import (\n"
        "    transformer_auto_wrap_policy,\n)\n\n" + _PARTIAL,
        "from torch.distributed.fsdp.wrap import (\n    ModuleWrapPolicy,\n)\n",
    ),
    "a name merged in": (
        "import functools\n\nfrom torch.distributed.fsdp.wrap import (\n"
        "    size_based_auto_wrap_policy,\n    transformer_auto_wrap_policy,\n)\n\n"
        + _PARTIAL
        + "other = size_based_auto_wrap_policy\n",
        "from torch.distributed.fsdp.wrap import (\n"
        "    ModuleWrapPolicy,\n    size_based_auto_wrap_policy,\n)\n",
    ),
    "the last name removed, a comment above, tabs, an alias": (
        "import functools\n\n# policies\nfrom torch.distributed.fsdp.wrap import (\n"
        "\tModuleWrapPolicy as MWP,\n\ttransformer_auto_wrap_policy,\n)  # wrap\n\n"
        + _PARTIAL
        + "third = MWP\n",
        "# policies\nfrom torch.distributed.fsdp.wrap import (\n"
        "\tModuleWrapPolicy,\n\tModuleWrapPolicy as MWP,\n)  # wrap\n",
    ),
    "CRLF": (
        "import functools\r\n\r\nfrom torch.distributed.fsdp.wrap import (\r\n"
        "    transformer_auto_wrap_policy,\r\n)\r\n\r\n" + _PARTIAL.replace("\n", "\r\n"),
        "from torch.distributed.fsdp.wrap import (\r\n    ModuleWrapPolicy,\r\n)\r\n",
    ),
}


@pytest.mark.parametrize(("source", "imports"), ONE_NAME_A_LINE.values(), ids=ONE_NAME_A_LINE)
def test_a_changed_import_keeps_one_name_a_line(source, imports):
    from codemods.engine.run import run
    from codemods.settings import Settings

    new = run(source.encode(), Settings(fix=True, unsafe_fixes=True)).new_source.decode()
    assert imports in new
    assert run(new.encode(), Settings(fix=True, unsafe_fixes=True)).new_source is None


@pytest.mark.parametrize(
    "layout",
    [
        "(\n    transformer_auto_wrap_policy,  # the policy\n)",  # a comment inside
        "(transformer_auto_wrap_policy,\n)",  # not one name a line
        "(\n    transformer_auto_wrap_policy, size_based_auto_wrap_policy,\n)",
    ],
)
def test_other_layouts_are_left_to_libcsts_visitors(layout):
    """Only the layout the pattern is certain of is rebuilt: the rest as libcst gives it."""
    from codemods.engine.imports.finish import keep_one_name_a_line

    before = cst.parse_module(f"from torch.distributed.fsdp.wrap import {layout}\n")
    after = cst.parse_module("from torch.distributed.fsdp.wrap import (\n    ModuleWrapPolicy)\n")
    assert keep_one_name_a_line(before, after).code == after.code


def test_an_unchanged_import_and_a_nested_one_are_left_alone():
    from codemods.engine.imports.finish import keep_one_name_a_line

    code = "from m import (\n    a,\n)\n"
    nested = "def f():\n    from m import (\n        b)\n"
    before = cst.parse_module(code + nested.replace("b)", "b,\n    )"))
    after = cst.parse_module(code + nested)
    assert keep_one_name_a_line(before, after).code == after.code


def test_an_added_import_the_new_code_does_not_use_is_taken_out_again():
    from codemods.engine.imports.finish import Edits, finish

    original = cst.parse_module("import os\n\nx = os.sep\n")
    rewritten = original  # a later fix dropped the code that needed the addition
    edits = Edits(imports_to_add=[("torch.distributed.fsdp.wrap", "ModuleWrapPolicy", None)])
    done = finish(edits, MetadataWrapper(original), rewritten, "x.py")
    assert done.code == original.code


def test_an_added_import_the_original_spelled_is_kept():
    """``ModuleWrapPolicy`` in a comment: not certainly unused, the check decides."""
    from codemods.engine.imports.finish import Edits, finish

    original = cst.parse_module("import os  # not ModuleWrapPolicy\n\nx = os.sep\n")
    edits = Edits(imports_to_add=[("torch.distributed.fsdp.wrap", "ModuleWrapPolicy", None)])
    done = finish(edits, MetadataWrapper(original), original, "x.py")
    assert "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n" in done.code


LATER = (
    "import torch\n"
    "torch.backends.cuda.matmul.allow_tf32 = True\n"
    "import functools\n"
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "{later}\n"
    "\n"
    "policy = functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda m: m in blocks)\n"
    "model = FSDP(model, auto_wrap_policy=policy)\n"
)


def test_an_added_name_joins_a_later_import_of_its_module():
    # Real scripts set flags between imports: the name goes where its module's line is.
    later = "from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy, always_wrap_policy"
    outcome = run(LATER.format(later=later).encode(), Settings(fix=True))
    new = outcome.new_source.decode()
    assert new.startswith("import torch\ntorch.backends")
    assert "from torch.distributed.fsdp.wrap import CustomPolicy, always_wrap_policy\n" in new


def test_an_import_in_a_fallback_block_is_not_joined():
    later = (
        "try:\n"
        "    from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy, ModuleWrapPolicy\n"
        "except ImportError:\n    from fsdp_shim import lambda_auto_wrap_policy, ModuleWrapPolicy"
    )
    new = run(LATER.format(later=later).encode(), Settings(fix=True)).new_source.decode()
    # a line in a fallback block bridges API generations: the new name goes to the top
    assert new.startswith("import torch\nfrom torch.distributed.fsdp.wrap import CustomPolicy\n")
    assert new.count("CustomPolicy") == 2  # the import and the use
