"""The fix verifier: what a rewrite breaks, compared binding by binding with the old file."""

from __future__ import annotations

import ast
import re
import symtable
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from codemods.registry import REGISTRY, ChangeKind
from codemods.verify import statement_diff
from codemods.verify.check import Breakage, breakages
from codemods.verify.scopes import scan

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "migrate"
FIXTURE_FILES = sorted(FIXTURES.glob("*/*.py"))
FIXTURE_PAIRS = sorted(path.parent for path in FIXTURES.glob("*/output.py"))
EXAMPLES = [rule for rule in REGISTRY if rule.example is not None]

STRATEGY = "from pytorch_lightning.strategies import DDPFullyShardedNativeStrategy\n"
RENAMED_STRATEGY = {"DDPFullyShardedNativeStrategy": "FSDPStrategy"}
DEFAULT_POLICY = "from torch.distributed.fsdp.wrap import default_auto_wrap_policy\n"
RENAMED_POLICY = {"default_auto_wrap_policy": "size_based_auto_wrap_policy"}
FUTURE = "from __future__ import annotations\n"


def rename(source: str, mapping: dict[str, str]) -> str:
    for old, new in mapping.items():
        source = source.replace(old, new)
    return source


def reasons(old: str, new: str, renamed: dict[str, str] | None = None, **kw) -> list[str]:
    return [str(found) for found in breakages(old, new, renamed, **kw)]


# -- Check 3: a reference left to a renamed import -------------------------------------

LEFT_BEHIND = [
    pytest.param(  # issue 15, defect 1: the attribute read keeps the old name
        STRATEGY + "\nstrategy = DDPFullyShardedNativeStrategy()\n"
        "print(DDPFullyShardedNativeStrategy.strategy_name)\n",
        "from pytorch_lightning.strategies import FSDPStrategy\n\nstrategy = FSDPStrategy()\n"
        "print(DDPFullyShardedNativeStrategy.strategy_name)\n",
        RENAMED_STRATEGY,
        ["DDPFullyShardedNativeStrategy still used at 4:7"],
        id="attribute-of-the-old-name",
    ),
    pytest.param(  # issue 15, defect 1: in an f-string
        DEFAULT_POLICY
        + 'policy = default_auto_wrap_policy\nprint(f"{default_auto_wrap_policy.__name__}")\n',
        rename(DEFAULT_POLICY, RENAMED_POLICY)
        + 'policy = size_based_auto_wrap_policy\nprint(f"{default_auto_wrap_policy.__name__}")\n',
        RENAMED_POLICY,
        ["default_auto_wrap_policy still used at 3:10"],
        id="f-string",
    ),
    pytest.param(
        STRATEGY + "\n\nclass Model:\n    def strategy(self):\n"
        "        return DDPFullyShardedNativeStrategy()\n",
        rename(STRATEGY, RENAMED_STRATEGY) + "\n\nclass Model:\n    def strategy(self):\n"
        "        return DDPFullyShardedNativeStrategy()\n",
        RENAMED_STRATEGY,
        [
            "`FSDPStrategy` imported at 1:42 but unused",
            "DDPFullyShardedNativeStrategy still used at 6:16",
        ],
        id="in-a-method",
    ),
    pytest.param(
        DEFAULT_POLICY + "\n\n@default_auto_wrap_policy.register\ndef hook():\n    pass\n",
        rename(DEFAULT_POLICY, RENAMED_POLICY)
        + "\n\n@default_auto_wrap_policy.register\ndef hook():\n    pass\n",
        RENAMED_POLICY,
        [
            "`size_based_auto_wrap_policy` imported at 1:41 but unused",
            "default_auto_wrap_policy still used at 4:2",
        ],
        id="decorator",
    ),
    pytest.param(
        DEFAULT_POLICY + "\n\ndef build(policy=default_auto_wrap_policy):\n    return policy\n",
        rename(DEFAULT_POLICY, RENAMED_POLICY)
        + "\n\ndef build(policy=default_auto_wrap_policy):\n    return policy\n",
        RENAMED_POLICY,
        [
            "`size_based_auto_wrap_policy` imported at 1:41 but unused",
            "default_auto_wrap_policy still used at 4:18",
        ],
        id="default-argument",
    ),
    pytest.param(
        DEFAULT_POLICY + "print(default_auto_wrap_policy)\ndel default_auto_wrap_policy\n",
        rename(DEFAULT_POLICY, RENAMED_POLICY)
        + "print(size_based_auto_wrap_policy)\ndel default_auto_wrap_policy\n",
        RENAMED_POLICY,
        ["default_auto_wrap_policy still used at 3:5"],
        id="del",
    ),
    pytest.param(
        STRATEGY + '__all__ = ["DDPFullyShardedNativeStrategy"]\n',
        rename(STRATEGY, RENAMED_STRATEGY) + '__all__ = ["DDPFullyShardedNativeStrategy"]\n',
        RENAMED_STRATEGY,
        [
            "`FSDPStrategy` imported at 1:42 but unused",
            "DDPFullyShardedNativeStrategy still used at 2:12",
        ],
        id="dunder-all",
    ),
    pytest.param(  # the except branch still binds the old name: not undefined, still wrong
        "try:\n    " + STRATEGY + "except ImportError:\n    DDPFullyShardedNativeStrategy = None\n"
        "strategy = DDPFullyShardedNativeStrategy\n",
        "try:\n    "
        + rename(STRATEGY, RENAMED_STRATEGY)
        + "except ImportError:\n    DDPFullyShardedNativeStrategy = None\n"
        "strategy = DDPFullyShardedNativeStrategy\n",
        RENAMED_STRATEGY,
        [
            "`FSDPStrategy` imported at 2:46 but unused",
            "DDPFullyShardedNativeStrategy still used at 5:12",
        ],
        id="conditional-import-in-try",
    ),
    pytest.param(
        STRATEGY + "\n\ndef make(s: DDPFullyShardedNativeStrategy) -> None:\n    pass\n",
        rename(STRATEGY, RENAMED_STRATEGY)
        + "\n\ndef make(s: DDPFullyShardedNativeStrategy) -> None:\n    pass\n",
        RENAMED_STRATEGY,
        [
            "`FSDPStrategy` imported at 1:42 but unused",
            "DDPFullyShardedNativeStrategy still used at 4:13",
        ],
        id="annotation",
    ),
    pytest.param(  # symtable records no annotation under this import (Python 3.10-3.13)
        FUTURE + STRATEGY + "\n\ndef make(s: DDPFullyShardedNativeStrategy) -> None:\n    pass\n",
        FUTURE
        + rename(STRATEGY, RENAMED_STRATEGY)
        + "\n\ndef make(s: DDPFullyShardedNativeStrategy) -> None:\n    pass\n",
        RENAMED_STRATEGY,
        [
            "`FSDPStrategy` imported at 2:42 but unused",
            "DDPFullyShardedNativeStrategy still used at 5:13",
        ],
        id="annotation-under-future-import",
    ),
    pytest.param(
        STRATEGY + 'kinds: list["DDPFullyShardedNativeStrategy"] = []\n',
        rename(STRATEGY, RENAMED_STRATEGY) + 'kinds: list["DDPFullyShardedNativeStrategy"] = []\n',
        RENAMED_STRATEGY,
        [
            "`FSDPStrategy` imported at 1:42 but unused",
            "DDPFullyShardedNativeStrategy still used at 2:14",
        ],
        id="string-annotation",
    ),
    pytest.param(
        "def make():\n    " + STRATEGY + "    return DDPFullyShardedNativeStrategy()\n",
        "def make():\n    "
        + rename(STRATEGY, RENAMED_STRATEGY)
        + "    return DDPFullyShardedNativeStrategy()\n",
        RENAMED_STRATEGY,
        [
            "`FSDPStrategy` imported at 2:46 but unused (in `make`)",
            "DDPFullyShardedNativeStrategy still used at 3:12",
        ],
        id="function-level-import",
    ),
    pytest.param(
        STRATEGY + "use = lambda: DDPFullyShardedNativeStrategy\n",
        rename(STRATEGY, RENAMED_STRATEGY) + "use = lambda: DDPFullyShardedNativeStrategy\n",
        RENAMED_STRATEGY,
        [
            "`FSDPStrategy` imported at 1:42 but unused",
            "DDPFullyShardedNativeStrategy still used at 2:15",
        ],
        id="lambda",
    ),
]


@pytest.mark.parametrize(("old", "new", "renamed", "expected"), LEFT_BEHIND)
def test_a_reference_left_to_a_renamed_import_is_reported(old, new, renamed, expected):
    assert reasons(old, new, renamed) == expected


# -- Check 1: a name left undefined -----------------------------------------------------

UNDEFINED = [
    pytest.param(
        "from functools import partial\n\npolicy = partial(wrap, min_num_params=100)\n",
        "\npolicy = partial(wrap, min_num_params=100)\n",
        ["`partial` undefined at 2:10"],
        id="import-removed-use-kept",
    ),
    pytest.param(  # a name bound in a class body is not visible in its methods
        "class Model:\n    size = 3\n\n    def width(self):\n        return self.size\n",
        "class Model:\n    size = 3\n\n    def width(self):\n        return size\n",
        ["`size` undefined at 5:16"],
        id="class-scope-not-seen-by-methods",
    ),
    pytest.param(
        "layers = [x for x in blocks]\n",
        "layers = [x for x in blocks]\nlast = x\n",
        ["`x` undefined at 2:8"],
        id="comprehension-variable-does-not-leak",
    ),
    pytest.param(
        "class Model:\n    names = ['a']\n    upper = [n.upper() for n in names]\n",
        "class Model:\n    names = ['a']\n    upper = [n.upper() for n in names if n in names]\n",
        ["`names` undefined at 3:47"],
        id="comprehension-in-a-class-sees-only-its-first-iterable",
    ),
    pytest.param(
        "init = lambda module: module.reset()\n",
        "init = lambda m: module.reset()\n",
        ["`module` undefined at 1:18"],
        id="lambda-parameter-renamed-alone",
    ),
    pytest.param(  # the old file had one undefined use; the rewrite adds another
        "print(missing)\n",
        "print(missing)\nprint(missing)\n",
        ["`missing` undefined at 2:7 (2 uses, 1 before)"],
        id="one-more-use-of-an-undefined-name",
    ),
    pytest.param(
        "from torch import nn\n__all__ = ['nn']\n",
        "__all__ = ['nn']\n",
        ["`nn` in __all__ undefined at 1:12"],
        id="dunder-all",
    ),
    pytest.param(  # the import goes, an annotation still needs it
        FUTURE
        + "from typing import Sequence\n\n\ndef f(x: Sequence) -> None:\n    print(Sequence)\n",
        FUTURE + "\n\n\ndef f(x: Sequence) -> None:\n    print(x)\n",
        ["`Sequence` undefined at 5:10"],
        id="annotation-under-future-import",
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), UNDEFINED)
def test_a_name_left_undefined_is_reported(old, new, expected):
    assert reasons(old, new) == expected


def test_a_star_import_in_the_new_file_skips_the_undefined_check():
    old = "from torch.nn import *\nfrom functools import partial\nf = partial(Linear, 2)\n"
    new = "from torch.nn import *\nf = partial(Linear, 2)\n"
    assert reasons(old, new) == []
    # ... but not the others.
    assert reasons(old, new.replace("f = ", "from os import sep\nf = ")) == [
        "`sep` imported at 2:16 but unused"
    ]


# -- Check 2: an import left unused ----------------------------------------------------

UNUSED = [
    pytest.param(  # issue 15, defect 17: the partial goes, its imports stay, one is added
        "from functools import partial\n"
        "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n"
        "strategy = FSDPStrategy(\n"
        "    auto_wrap_policy=partial(\n"
        "        transformer_auto_wrap_policy, transformer_layer_cls={A, B}\n"
        "    ),\n"
        ")\n",
        "from functools import partial\n"
        "from torch.distributed.fsdp.wrap import ModuleWrapPolicy, transformer_auto_wrap_policy\n"
        "strategy = FSDPStrategy(\n"
        "    auto_wrap_policy={A, B},\n"
        ")\n",
        [
            "`partial` imported at 1:23 but unused",
            "`ModuleWrapPolicy` imported at 2:41 but unused",
            "`transformer_auto_wrap_policy` imported at 2:59 but unused",
        ],
        id="module-wrap-policy-added-unused",
    ),
    pytest.param(
        "def build():\n    from functools import partial\n    return partial(wrap)\n",
        "def build():\n    from functools import partial\n    return wrap\n",
        ["`partial` imported at 2:27 but unused (in `build`)"],
        id="function-level-import",
    ),
    pytest.param(
        "class Model:\n    def build(self):\n        import torch\n        return torch.nn\n",
        "class Model:\n    def build(self):\n        import torch\n        return nn\n",
        ["`torch` imported at 3:16 but unused (in `Model.build`)", "`nn` undefined at 4:16"],
        id="method-level-import",
    ),
    pytest.param(
        "import torch.nn\nlayer = torch.nn.Linear(2, 2)\n",
        "import torch.nn\nimport torch.nn.functional as F\nlayer = torch.nn.Linear(2, 2)\n",
        ["`F` imported at 2:8 but unused"],
        id="aliased-import-added",
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), UNUSED)
def test_an_import_left_unused_is_reported(old, new, expected):
    assert reasons(old, new) == expected


def test_imports_of_an_init_module_are_reexports():
    old = "from .strategies import DDPFullyShardedNativeStrategy\n"
    new = "from .strategies import DDPFullyShardedNativeStrategy, FSDPStrategy\n"
    assert reasons(old, new) == ["`FSDPStrategy` imported at 1:56 but unused"]
    assert reasons(old, new, reexports=True) == []


@pytest.mark.parametrize(
    "source",
    [
        "__all__ = ['a'] + ['b']\n",
        "__all__: list[str] = ('a',)\n__all__ += ['b']\n",
        "__all__ = []\n__all__.extend(['a', 'b'])\n__all__.append('c')\n",
        "__all__ = ['b']\nif x:\n    __all__.append('c')\n",
        "try:\n    import a\nexcept ImportError:\n    pass\nelse:\n    __all__ = ('a',)\n",
        "def f():\n    __all__ = ['a']\n",
    ],
)
def test_the_verifier_and_the_planners_read_one_all(source):
    """One reader of ``__all__`` (``codemods.syntax.exports``): the same strings for all."""
    import libcst

    from codemods.syntax.exports import ast_exports, cst_exports

    tree = ast.parse(source)
    assert set(scan(tree.body).exports) == set(ast_exports(tree))
    assert cst_exports(libcst.parse_module(source)) == ast_exports(tree)


# -- Sound rewrites: nothing to report -------------------------------------------------

SOUND = [
    pytest.param(
        STRATEGY + "\nstrategy = DDPFullyShardedNativeStrategy()\n"
        "print(DDPFullyShardedNativeStrategy.strategy_name)\n",
        None,
        RENAMED_STRATEGY,
        id="renamed-import-with-every-use",
    ),
    pytest.param(
        FUTURE + STRATEGY + 'x: "DDPFullyShardedNativeStrategy"\n'
        "def f(s: DDPFullyShardedNativeStrategy) -> list[DDPFullyShardedNativeStrategy]:\n"
        "    return [s]\n",
        None,
        RENAMED_STRATEGY,
        id="renamed-in-annotations-too",
    ),
    pytest.param(
        "from functools import partial\nimport os\npolicy = partial(wrap, 100)\nprint(os.sep)\n",
        "import os\npolicy = wrap\nprint(os.sep)\n",
        None,
        id="import-removed-with-its-last-use",
    ),
    pytest.param(  # the old file's unused import and undefined name are not the fix's
        "import os\nimport sys\n" + STRATEGY + "print(undefined_thing)\n"
        "s = DDPFullyShardedNativeStrategy()\n",
        None,
        RENAMED_STRATEGY,
        id="old-defects-left-as-they-were",
    ),
    pytest.param(
        "def count():\n    global counter\n    counter = 1\n\n\nprint(counter)\n",
        "def count():\n    global counter\n    counter = 2\n\n\nprint(counter)\n",
        None,
        id="global-binds-at-module-level",
    ),
    pytest.param(
        "def outer():\n    total = 0\n    def add():\n"
        "        nonlocal total\n        total += 1\n    return add\n",
        "def outer():\n    total = 0\n    def add():\n"
        "        nonlocal total\n        total += 2\n    return add\n",
        None,
        id="nonlocal",
    ),
    pytest.param(
        "try:\n    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "except ImportError:\n    FSDP = None\nm = FSDP\n",
        "try:\n    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "except ImportError:\n    FSDP = None\nm = FSDP(None)\n",
        None,
        id="conditional-binding-in-try",
    ),
    pytest.param(
        "if any((hit := x) for x in xs):\n    print(hit)\n",
        "if any((hit := x) for x in xs):\n    print(hit, hit)\n",
        None,
        id="walrus-binds-outside-the-comprehension",
    ),
    pytest.param(
        "from torch.distributed.fsdp import FullyShardedDataParallel\n",
        "from torch.distributed.fsdp import FullyShardedDataParallel\n"
        "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n"
        "__all__ = ['ModuleWrapPolicy']\n",
        None,
        id="import-listed-in-dunder-all",
    ),
    pytest.param(
        "class Model:\n    size = 3\n    double = size * 2\n",
        "class Model:\n    size = 3\n    double = size * 3\n    print(__module__, __qualname__)\n",
        None,
        id="class-body-sees-its-own-names",
    ),
    pytest.param(
        FUTURE + "from typing import TYPE_CHECKING, Sequence\n\nif TYPE_CHECKING:\n"
        "    from torch import Tensor\n\n\ndef f(x: 'Tensor', y: Sequence) -> None:\n    pass\n",
        FUTURE + "from typing import TYPE_CHECKING, Sequence\n\nif TYPE_CHECKING:\n"
        "    from torch import Tensor\n\n\ndef f(x: 'Tensor', y: Sequence) -> int:\n    pass\n",
        None,
        id="imports-used-only-in-annotations",
    ),
    pytest.param(
        "from typing import Literal\nmode: Literal['fsdp_native'] = 'fsdp_native'\n",
        "from typing import Literal\nmode: Literal['fsdp'] = 'fsdp'\n",
        None,
        id="literal-strings-are-not-names",
    ),
    pytest.param(
        "import os\nprint(os.sep, __file__, __name__)\n",
        "import os\nprint(os.sep, __file__, __name__, __doc__)\n",
        None,
        id="module-dunders",
    ),
]


@pytest.mark.parametrize(("old", "new", "renamed"), SOUND)
def test_a_sound_rewrite_breaks_nothing(old, new, renamed):
    if new is None:
        new = rename(old, renamed)
    assert reasons(old, new, renamed) == []


# -- Sources that do not parse or decode ------------------------------------------------


def test_a_new_file_that_does_not_parse_is_one_breakage():
    found = breakages("x = 1\n", "x = (1\n")
    assert len(found) == 1
    assert found[0].name == "" and found[0].line == 1
    assert found[0].reason.startswith("does not parse: ")


def test_an_old_file_that_does_not_parse_has_nothing_to_compare():
    assert breakages("x = (1\n", "x = 1\nprint(y)\n") == []


def test_bytes_crlf_and_wide_characters():
    old = "# -*- coding: latin-1 -*-\r\nfrom a import Old\r\ns = 'é'; print(Old)\r\n"
    new = old.replace("from a import Old", "from a import New")
    found = breakages(old.encode("latin-1"), new.encode("latin-1"), {"Old": "New"})
    assert [str(item) for item in found] == [
        "`New` imported at 2:15 but unused",
        "Old still used at 3:16",  # characters, not UTF-8 bytes
    ]
    assert found[1] == Breakage(3, 16, "Old", "Old still used at 3:16")


# -- Changed statements far apart in a large file, and inside large classes ------------


def _large_module() -> str:
    blocks = [STRATEGY, "import os\n"]
    for index in range(60):
        blocks.append(
            f"\n\nclass Block{index}:\n    size = {index}\n\n    def run(self, x):\n"
            f"        return [os.sep * self.size for _ in range(x)]\n"
        )
        if index in (5, 40):
            blocks.append(
                f"\n\ndef strategy{index}():\n    return DDPFullyShardedNativeStrategy()\n"
            )
    return "".join(blocks)


def test_changes_far_apart_are_all_seen():
    old = _large_module()
    sound = rename(old, RENAMED_STRATEGY)
    assert reasons(old, sound, RENAMED_STRATEGY) == []
    left = "def strategy40():\n    return DDPFullyShardedNativeStrategy()"
    broken = sound.replace("def strategy40():\n    return FSDPStrategy()", left)
    line = broken.splitlines().index("def strategy40():") + 2
    assert reasons(old, broken, RENAMED_STRATEGY) == [
        f"DDPFullyShardedNativeStrategy still used at {line}:12"
    ]
    # An unchanged block far from the edit loses its import: the block is read again.
    unused = sound.replace("import os\n", "import os\nimport sys\n").replace("os.sep * ", "")
    assert reasons(old, unused, RENAMED_STRATEGY) == [
        "`os` imported at 2:8 but unused",
        "`sys` imported at 3:8 but unused",
    ]


def _large_class(extra: str = "") -> str:
    methods = "".join(
        f"\n    def step{index}(self, batch):\n        return self.SCALE * batch + {index}\n"
        for index in range(40)
    )
    return (
        STRATEGY + "\n\nclass Module:\n    SCALE = 2\n    DOUBLE = SCALE * 2\n"
        "\n    def strategy(self):\n        return DDPFullyShardedNativeStrategy()\n"
        + methods
        + extra
        + "\n\ndef main():\n    return Module().strategy()\n"
    )


CLASS_EDITS = [
    pytest.param(
        lambda s: s.replace(STRATEGY, rename(STRATEGY, RENAMED_STRATEGY)),
        [
            "`FSDPStrategy` imported at 1:42 but unused",
            "DDPFullyShardedNativeStrategy still used at 9:16",
        ],
        id="method-in-a-kept-class-still-uses-the-old-name",
    ),
    pytest.param(  # the binding goes in a changed statement, its use stays in a kept one
        lambda s: rename(s, RENAMED_STRATEGY).replace("SCALE = 2\n", "WIDTH = 2\n"),
        ["`SCALE` undefined at 6:14"],
        id="class-level-binding-removed",
    ),
    pytest.param(
        lambda s: rename(s, RENAMED_STRATEGY).replace(
            "    def step3(", "      def extra(self):\n        pass\n\n    def step3("
        ),
        ["does not parse"],
        id="a-method-at-the-wrong-indentation",
    ),
    pytest.param(
        lambda s: rename(s, RENAMED_STRATEGY).replace(
            "\n\ndef main", "\n    def last(self):\n        return helper()\n\n\ndef main"
        ),
        ["`helper` undefined at 132:16"],
        id="a-method-added-after-the-last",
    ),
    pytest.param(
        lambda s: rename(s, RENAMED_STRATEGY).replace("class Module:", "class Module(Base):"),
        ["`Base` undefined at 4:14"],
        id="class-header-changed",
    ),
    pytest.param(
        lambda s: rename(s, RENAMED_STRATEGY).replace(
            "    DOUBLE = SCALE * 2\n", "    import math\n    DOUBLE = SCALE * 2\n"
        ),
        ["`math` imported at 6:12 but unused (in `Module`)"],
        id="class-level-import-added",
    ),
    pytest.param(
        lambda s: rename(s, RENAMED_STRATEGY).replace(
            "    def step7(",
            "    def step7(self, batch, n=SCALE):\n        pass\n\n    def step7_(",
        ),
        [],
        id="a-default-reads-the-class-scope",
    ),
]


@pytest.mark.parametrize(("edit", "expected"), CLASS_EDITS)
def test_edits_inside_a_large_class(edit, expected):
    old = _large_class()
    found = reasons(old, edit(old), RENAMED_STRATEGY)
    if expected == ["does not parse"]:
        assert len(found) == 1 and found[0].startswith("does not parse: ")
    else:
        assert found == expected
    assert _comparable(breakages(old, edit(old), RENAMED_STRATEGY)) == _comparable(
        _both_ways(old, edit(old), RENAMED_STRATEGY)[1]
    )


# -- Whole-file comparison and the statement-by-statement one agree ---------------------


def _both_ways(old: str, new: str, renamed=None) -> tuple[list[Breakage], list[Breakage]]:
    """The verifier's answer, and the answer of scanning both modules whole."""
    fast = breakages(old, new, renamed)
    units, align = statement_diff._units, statement_diff._align
    statement_diff._units = lambda text, tree: [statement_diff._Unit(0, 0, tree.body)]
    statement_diff._align = lambda texts, new, kept: None
    try:
        whole = breakages(old, new, renamed)
    finally:
        statement_diff._units, statement_diff._align = units, align
    return fast, whole


def _sources() -> list[str]:
    found = [path.read_text(encoding="utf-8") for path in FIXTURE_FILES]
    found += [rule.example.before for rule in EXAMPLES] + [rule.example.after for rule in EXAMPLES]
    return found + [_large_module()]


EDITS = st.sampled_from(
    ["delete", "duplicate", "rename", "blank", "swap", "indent", "dedent", "import", "method"]
)
#: Lines an edit inserts: an import (at any depth) and a method that reads an unbound name.
INSERTS = {
    "import": "import os_added\n",
    "method": "    def added(self, n=SIZE_ADDED):\n        return helper_added(n)\n",
}


#: A function whose import the rewrite leaves unused, redefined below with it used: the
#: two share the import's key, as in a scan of the whole module.
_REDEFINED = (
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "def shard(model):\n"
    "    from torch.distributed.fsdp.wrap import lambda_auto_wrap_policy\n"
    "    return FSDP(model, auto_wrap_policy=lambda_auto_wrap_policy)\n"
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    source=st.sampled_from(_sources()),
    edits=st.lists(st.tuples(EDITS, st.integers(0, 10_000)), min_size=1, max_size=4),
)
@example(source=_REDEFINED, edits=[("duplicate", 1), ("duplicate", 3), ("swap", 2)])
def test_reading_only_the_changed_statements_loses_nothing(source, edits):
    lines = source.splitlines(keepends=True)
    names = sorted({node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)})
    renamed = {}
    for edit, at in edits:
        if not lines:
            break
        index = at % len(lines)
        if edit == "delete":
            del lines[index]
        elif edit == "duplicate":
            lines.insert(index, lines[index])
        elif edit == "blank":
            lines.insert(index, "\n")
        elif edit == "swap" and index + 1 < len(lines):
            lines[index], lines[index + 1] = lines[index + 1], lines[index]
        elif edit == "indent":
            lines[index] = "    " + lines[index]
        elif edit == "dedent":
            lines[index] = lines[index][4:] if lines[index].startswith("    ") else lines[index]
        elif edit in INSERTS:
            lines.insert(index, INSERTS[edit])
        elif edit == "rename" and names:
            name = names[at % len(names)]
            renamed[name] = name + "_new"
            lines[index] = lines[index].replace(name, name + "_new")
    fast, whole = _both_ways(source, "".join(lines), renamed)
    assert _comparable(fast) == _comparable(whole)


def _comparable(found: list[Breakage]) -> list[tuple]:
    """One more use of a name undefined before: either use is a fair place to show."""
    return sorted(
        (0, 0, item.name, re.sub(r"at \d+:\d+", "", item.reason))
        if item.reason.endswith(" before)")
        else (item.line, item.col, item.name, item.reason)
        for item in found
    )


# -- Every fixture and example: unchanged is sound, and each rewrite is sound -----------


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_an_unchanged_fixture_breaks_nothing(path):
    source = path.read_text(encoding="utf-8")
    assert breakages(source, source) == []
    assert breakages(source, source + "\n") == []  # read statement by statement
    assert breakages(source, "\n" + source) == []  # every line moved


@pytest.mark.parametrize("rule", EXAMPLES, ids=lambda rule: rule.code)
def test_an_unchanged_example_breaks_nothing(rule):
    assert breakages(rule.example.before, rule.example.before + "\n") == []
    assert breakages(rule.example.after, rule.example.after + "\n") == []


@pytest.mark.parametrize("directory", FIXTURE_PAIRS, ids=lambda p: p.name)
def test_every_fixture_rewrite_is_sound(directory):
    old = (directory / "input.py").read_text(encoding="utf-8")
    new = (directory / "output.py").read_text(encoding="utf-8")
    assert reasons(old, new) == []


def _renames(rule) -> dict[str, str]:
    """The local names a symbol rename's fix renames (what the engine would pass)."""
    if rule.kind is not ChangeKind.SYMBOL_RENAME or rule.new is None:
        return {}
    return {old.rpartition(".")[2]: rule.new.rpartition(".")[2] for old in rule.old}


@pytest.mark.parametrize("rule", [r for r in EXAMPLES if r.fixable], ids=lambda rule: rule.code)
def test_every_example_rewrite_is_sound(rule):
    # A manual rule's `after` is advice, not a fix's output: only fixable rules count.
    assert reasons(rule.example.before, rule.example.after, _renames(rule)) == []


def test_a_renamed_import_unused_before_may_stay_unused():
    old = "from fairscale.nn.wrap import default_auto_wrap_policy\n"
    new = "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n"
    assert reasons(old, new, RENAMED_POLICY) == []
    assert reasons(old, new) == ["`size_based_auto_wrap_policy` imported at 1:41 but unused"]
    used = old + "print(default_auto_wrap_policy)\n"
    assert reasons(used, new, RENAMED_POLICY) == [
        "`size_based_auto_wrap_policy` imported at 1:41 but unused"
    ]


# -- The scope model agrees with the compiler's (symtable) ------------------------------


def _compiler_view(source: str) -> tuple[set[str], set[str]]:
    """Module-level bindings and the names read from the module's globals, per symtable."""
    top = symtable.symtable(source, "<test>", "exec")
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    read = {s.get_name() for s in top.get_symbols() if s.is_referenced()}
    tables = list(top.get_children())
    while tables:
        table = tables.pop()
        tables.extend(table.get_children())
        for symbol in table.get_symbols():
            if symbol.is_declared_global():
                bound.add(symbol.get_name())
            if symbol.is_referenced() and symbol.is_global():
                read.add(symbol.get_name())
    return bound, read


def _inlined(tree: ast.AST) -> tuple[set[str], set[str]]:
    """Python 3.12+ inlines list, set and dict comprehensions (PEP 709) and its symtable
    shows it: their targets appear bound in the enclosing table, and names they read
    lose their "referenced" mark there. The names each way, to leave out there."""
    if sys.version_info < (3, 12):
        return set(), set()
    comprehensions = [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp))
    ]
    targets = {
        node.id
        for comp in comprehensions
        for generator in comp.generators
        for node in ast.walk(generator.target)
        if isinstance(node, ast.Name)
    }
    read = {n.id for comp in comprehensions for n in ast.walk(comp) if isinstance(n, ast.Name)}
    return targets, read


def _string_annotation_names(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                found |= {n.id for n in ast.walk(ast.parse(node.value.strip(), mode="eval"))
                          if isinstance(n, ast.Name)}  # fmt: skip
            except SyntaxError:
                pass
    return found


SCOPE_CASES = [case.values[0] for case in LEFT_BEHIND + UNDEFINED + UNUSED + SOUND]


@pytest.mark.parametrize("source", _sources() + SCOPE_CASES)
def test_the_scope_model_agrees_with_symtable(source):
    # Without the future import symtable records annotations, as the scope model does.
    source = source.replace(FUTURE, "\n")
    tree = ast.parse(source)
    facts = scan(tree.body)
    bound, read = _compiler_view(source)
    targets, inlined_reads = _inlined(tree)
    assert facts.bound - bound <= _declared_globals(tree)
    assert bound - facts.bound <= targets
    assert read - targets <= set(facts.refs)
    assert set(facts.refs) - read <= _string_annotation_names(tree) | inlined_reads


def _declared_globals(tree: ast.AST) -> set[str]:
    return {name for node in ast.walk(tree) if isinstance(node, ast.Global) for name in node.names}


# -- Check 4: an import made unconditional ------------------------------------------

GUARDED = "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
ADDED = "from torch.distributed.checkpoint.state_dict import get_model_state_dict\n"


@pytest.mark.parametrize(
    ("old", "expected"),
    [
        pytest.param(  # fastNLP's shape: torch optional
            "if TORCH_AVAILABLE:\n    " + GUARDED,
            ["`torch` imported unconditionally at 1:1; the old module imports it only "
             "inside a block (line 2)"],
            id="availability-flag",
        ),
        pytest.param(
            "try:\n    " + GUARDED + "except ImportError:\n    FSDP = None\n",
            ["`torch` imported unconditionally at 1:1; the old module imports it only "
             "inside a block (line 2)"],
            id="try-import",
        ),
        pytest.param(
            "def load(model):\n    " + GUARDED + "    return FSDP\n",
            ["`torch` imported unconditionally at 1:1; the old module imports it only "
             "inside a block (line 2)"],
            id="lazy-import-in-a-function",
        ),
        pytest.param(
            "import torch\n\nif TORCH_AVAILABLE:\n    " + GUARDED, [], id="already-at-module-level"
        ),
        pytest.param("from . import helpers\n", [], id="never-imported"),
    ],
)  # fmt: skip
def test_an_import_made_unconditional_is_reported(old, expected):
    new = ADDED + old
    assert (
        reasons(old, new) == expected
        or [r for r in reasons(old, new) if "unconditionally" in r] == expected
    )
