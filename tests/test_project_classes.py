"""A hook in a class whose LightningModule base lives in another file of the run (FSDP207).

:mod:`codemods.cli.project_classes` follows class bases through imports across the
files of one run; lint reports and migrate renames ``configure_sharded_model`` there,
and nowhere a base is not (certainly) a LightningModule.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from codemods import lint, migrate
from codemods.batch.runner import process_files
from codemods.cli import project_classes
from codemods.cli.project_classes import ProjectClasses
from codemods.settings import Settings

FILES = {
    "pkg/__init__.py": "",
    "pkg/base.py": """
        import pytorch_lightning as pl
        from lightning.pytorch import LightningModule as LM


        class BaseModule(pl.LightningModule):
            pass


        class Other(LM):
            pass


        class NotLightning:
            pass
        """,
    "pkg/models/__init__.py": "",
    "pkg/models/mid.py": """
        from ..base import BaseModule


        class Mid(BaseModule):
            pass
        """,
    "pkg/models/gpt.py": """
        from pkg import base
        from pkg.base import NotLightning
        from pkg.models.mid import Mid


        class GPT(Mid):
            def configure_sharded_model(self):
                self.blocks = None


        class ThroughModule(base.Other):
            def configure_sharded_model(self):
                pass


        class Plain(NotLightning):
            def configure_sharded_model(self):
                pass
        """,
    "pkg/models/star.py": """
        from pkg.base import *


        class Starred(BaseModule):
            def configure_sharded_model(self):
                pass
        """,
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return tmp_path


def _bases(project: Path) -> dict[str, frozenset[str]]:
    paths = sorted(project.rglob("*.py"))
    classes = ProjectClasses(paths)
    return {str(p.relative_to(project)): classes.lightning_bases(p) for p in paths}


def test_bases_are_followed_through_relative_absolute_and_module_imports(project):
    bases = _bases(project)
    assert bases["pkg/models/mid.py"] == {"BaseModule"}
    assert bases["pkg/models/gpt.py"] == {"Mid", "base.Other"}  # not NotLightning
    assert bases["pkg/models/star.py"] == frozenset()  # a star import resolves to nothing
    assert bases["pkg/base.py"] == frozenset()  # Lightning's own class is the rule's


def test_with_hook_names_only_the_files_a_hook_leads_to_are_read(project):
    # A LightningModule subclass in a file no hook's class leads to: left unread.
    (project / "pkg/aside.py").write_text(
        "import lightning.pytorch as pl\n\n\nclass Aside(pl.LightningModule):\n    pass\n"
    )
    paths = sorted(project.rglob("*.py"))
    every = ProjectClasses(paths)
    hooked = ProjectClasses(paths, ["configure_sharded_model"])
    for name in ("pkg/models/gpt.py", "pkg/models/star.py"):  # the files with a hook
        assert hooked.lightning_bases(project / name) == every.lightning_bases(project / name)
    assert hooked.lightning_bases(project / "pkg/models/gpt.py") == {"Mid", "base.Other"}
    read = {str(p.relative_to(project)) for p in hooked._files}
    assert read == {"pkg/models/gpt.py", "pkg/models/star.py", "pkg/models/mid.py", "pkg/base.py"}
    assert "pkg/aside.py" in {str(p.relative_to(project)) for p in every._files}
    assert ProjectClasses(paths, ["no_such_hook"])._files == {}


def test_a_module_name_two_files_could_have_resolves_to_nothing(project):
    twin = project / "other" / "pkg" / "base.py"
    twin.parent.mkdir(parents=True)
    twin.write_text("class BaseModule:\n    pass\n", encoding="utf-8")
    (project / "pkg/models/abs.py").write_text(
        "from pkg.base import BaseModule\n\n\nclass A(BaseModule):\n    pass\n", encoding="utf-8"
    )
    assert _bases(project)["pkg/models/abs.py"] == frozenset()


def test_lint_reports_the_hook_where_the_base_is_in_another_file(project, capsys):
    code = lint.main(["--select", "FSDP207", "--target-lightning", "2.1", str(project)])
    out = capsys.readouterr().out
    assert code == 1
    assert f"{project / 'pkg/models/gpt.py'}:7:5: FSDP207" in out
    assert f"{project / 'pkg/models/gpt.py'}:12:5: FSDP207" in out
    assert out.count("FSDP207") == 2  # Plain and Starred are not LightningModules here


def test_a_lint_in_worker_processes_relints_the_files_the_classes_change(
    project, capsys, monkeypatch
):
    # Enough bytes for worker processes (runner.POOL_BYTES): they screen every file and
    # say which hold a hook's name; this process reads those alone (not padding.py, nor
    # base.py until gpt.py's bases lead there), then lints gpt.py again with its bases.
    (project / "pkg" / "padding.py").write_text("# padding\n" * 14_000, encoding="utf-8")
    searched: list[str] = []
    real = project_classes._bytes
    monkeypatch.setattr(project_classes, "_bytes", lambda path: searched.append(path) or real(path))
    argv = ["--select", "FSDP207", "--target-lightning", "2.1", "--output-format", "json"]
    lint.main([*argv, "--jobs", "2", str(project)])
    pooled = capsys.readouterr().out
    assert sorted(Path(p).name for p in searched) == ["gpt.py", "star.py"]
    lint.main([*argv, "--jobs", "1", str(project)])
    assert pooled == capsys.readouterr().out
    assert pooled.count('"code": "FSDP207"') == 2


@pytest.mark.parametrize("jobs", [1, 2])
def test_each_result_says_whether_the_file_holds_a_hooks_name(project, jobs):
    # As the files are screened (in workers with jobs=2: padding makes it worth a pool),
    # by the bytes read: a Python file only, the name anywhere (a comment counts).
    (project / "pkg" / "padding.py").write_text("# configure_sharded_model\n" * 9_000)
    (project / "pkg" / "notes.ipynb").write_text('{"cells": [], "x": "configure_sharded_model"}')
    paths = sorted(project.rglob("*.py")) + [project / "pkg" / "notes.ipynb"]
    hooks = (b"configure_sharded_model", b"synchronize_staging")
    results = process_files(paths, Settings(), False, jobs=jobs, hooks=hooks)
    held = {str(p.relative_to(project)) for p, r in zip(paths, results) if r.hook}
    assert held == {"pkg/models/gpt.py", "pkg/models/star.py", "pkg/padding.py"}
    assert not any(r.hook for r in process_files(paths, Settings(), False, jobs=jobs))


def test_the_files_known_to_hold_a_hook_are_the_only_ones_read_for_it(project):
    paths = sorted(project.rglob("*.py"))
    hooks = ["configure_sharded_model"]
    gpt = project / "pkg/models/gpt.py"
    classes = ProjectClasses(paths, hooks, holding=[gpt])
    read = {str(p.relative_to(project)) for p in classes._files}
    assert read == {"pkg/models/gpt.py", "pkg/models/mid.py", "pkg/base.py"}  # not star.py
    assert classes.lightning_bases(gpt) == ProjectClasses(paths, hooks).lightning_bases(gpt)
    assert ProjectClasses(paths, hooks, holding=[])._files == {}


def test_migrate_renames_it_and_leaves_the_rest(project):
    migrate.main(["--select", "FSDP207", "--target-lightning", "2.1", str(project)])
    text = (project / "pkg/models/gpt.py").read_text(encoding="utf-8")
    assert text.count("def configure_model(self):") == 2
    assert text.count("def configure_sharded_model(self):") == 1  # Plain's
    assert "configure_sharded_model" in (project / "pkg/models/star.py").read_text()


def test_one_file_alone_does_not_see_its_base(project, capsys):
    lint.main(["--select", "FSDP207", "--target-lightning", "2.1", str(project / "pkg/models")])
    assert "FSDP207" not in capsys.readouterr().out  # pkg/base.py is not in this run


def test_the_statement_walk_meets_imports_and_classes_as_ast_walk_does():
    # The reading walks statements only: the same imports and classes, in the same
    # order (a name bound twice keeps the binding ast.walk's order gives it).
    import ast

    from codemods.syntax.class_bases import statements
    from tests.realistic_tree import build_tree

    kinds = (ast.Import, ast.ImportFrom, ast.ClassDef)
    sources = [
        *build_tree(16).values(),
        b"try:\n    import a\nexcept ImportError:\n    import b as a\nelse:\n    pass\n"
        b"finally:\n    from c import a\n"
        + (b"match x:\n    case 1:\n" if sys.version_info >= (3, 10) else b"if x:\n")
        + b"        class K(a.M): pass\n"
        b"def f():\n    class L(K): pass\n    import d\nwith g():\n    import a\n",
    ]
    for source in sources:
        tree = ast.parse(source)
        walked = [node for node in ast.walk(tree) if isinstance(node, kinds)]
        assert [node for node in statements(tree) if isinstance(node, kinds)] == walked


def test_a_file_resolves_through_its_directory_as_path_resolve_does(tmp_path, monkeypatch):
    # The run resolves each directory once: linked directories, a linked file, a
    # relative path, a link loop and a missing file come out as Path.resolve has them.
    from codemods.cli.project_classes import _resolved
    from codemods.cli.resolved_paths import ResolvedDirectories

    real = tmp_path / "real"
    real.mkdir()
    (real / "a.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "linked").symlink_to(real, target_is_directory=True)
    (tmp_path / "b.py").symlink_to(real / "a.py")
    (tmp_path / "loop.py").symlink_to(tmp_path / "loop.py")
    monkeypatch.chdir(tmp_path)
    given = ["linked/a.py", "real/a.py", "b.py", "loop.py", "gone.py", "real/../b.py", "a.pyi"]
    directories = ResolvedDirectories()
    assert [_resolved(p, directories) for p in given] == [_resolved(p) for p in given]
    assert _resolved("linked/a.py", directories) == real.resolve() / "a.py"
    assert _resolved("a.pyi", directories) is None


def test_a_base_in_a_package_init_and_through_a_linked_module(tmp_path):
    # Absolute imports name a package (its __init__.py), or a module the run names by a
    # link (a file is named by what it resolves to: real.py, not mid.py).
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib/__init__.py").write_text(
        "import lightning.pytorch as pl\n\n\nclass Base(pl.LightningModule):\n    pass\n"
    )
    (tmp_path / "real.py").write_text(
        "from lib import Base\n\n\nclass Mid(Base):\n    pass\n", encoding="utf-8"
    )
    (tmp_path / "mid.py").symlink_to(tmp_path / "real.py")
    (tmp_path / "model.py").write_text(
        "from real import Mid\nfrom lib import Base\n\n\nclass M(Mid):\n"
        "    def configure_sharded_model(self):\n        pass\n\n\nclass N(Base):\n    pass\n"
    )
    paths = [tmp_path / "lib/__init__.py", tmp_path / "mid.py", tmp_path / "model.py"]
    classes = ProjectClasses(paths, ["configure_sharded_model"])
    assert classes.lightning_bases(tmp_path / "model.py") == {"Mid", "Base"}
    assert ProjectClasses(paths).lightning_bases(tmp_path / "model.py") == {"Mid", "Base"}


def test_a_file_the_screening_parsed_comes_with_its_names_and_bases(project):
    # A hook file that imports Lightning passes the pre-filter and is parsed there: its
    # result holds what the project classes need of it. A file the pre-filter rules out
    # (gpt.py names no Lightning itself) and a file that is not ASCII say only True.
    import ast

    from codemods.syntax.class_bases import names_and_bases

    direct = project / "pkg/models/direct.py"
    direct.write_text(
        "import lightning.pytorch as pl\nfrom .mid import Mid\n\n\n"
        "class D(Mid, pl.LightningModule):\n    def configure_sharded_model(self):\n        pass\n",
        encoding="utf-8",
    )
    accented = project / "pkg/models/accented.py"
    accented.write_text(direct.read_text().replace("pass", "x = 'é'"), encoding="utf-8")
    paths = sorted(project.rglob("*.py"))
    results = process_files(paths, Settings(), False, jobs=1, hooks=(b"configure_sharded_model",))
    hooks = {p.name: r.hook for p, r in zip(paths, results) if r.hook}
    assert hooks["direct.py"] == names_and_bases(ast.parse(direct.read_bytes()))
    assert hooks["direct.py"][1] == {"D": ["Mid", "pl.LightningModule"]}
    assert hooks["accented.py"] is True and hooks["gpt.py"] is True


def test_a_known_file_is_not_read_again_and_reads_as_a_read_one(project, monkeypatch):
    import ast

    from codemods.syntax.class_bases import names_and_bases

    paths = sorted(project.rglob("*.py"))
    hooks = ["configure_sharded_model"]
    gpt, star = project / "pkg/models/gpt.py", project / "pkg/models/star.py"
    read = ProjectClasses(paths, hooks, holding=[gpt, star])
    searched: list[str] = []
    real = project_classes._bytes
    monkeypatch.setattr(project_classes, "_bytes", lambda path: searched.append(path) or real(path))
    known = {str(gpt): names_and_bases(ast.parse(gpt.read_bytes()))}
    given = ProjectClasses(paths, hooks, holding=[gpt, star], known=known)
    assert [Path(p).name for p in searched] == ["star.py"]  # gpt.py's bases are still followed
    assert set(given._files) == set(read._files)
    for path in paths:
        assert given.lightning_bases(path) == read.lightning_bases(path)
