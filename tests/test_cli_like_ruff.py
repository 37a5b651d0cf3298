"""Both tools behave as ruff 0.17's users expect: no silent passes, and ruff's habits.

Run through the console scripts (``fsdp-lint``, ``fsdp-migrate``) where a user meets the
behaviour there (a path, a pipe, standard input), and through ``main()`` otherwise.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codemods import lint, migrate
from codemods.cli.config import newest_known
from codemods.registry import REGISTRY
from tests.checkout_env import checkout_env
from tests.notebook_files import notebook

ROOT = Path(__file__).resolve().parents[1]
LEGACY = """\
from torch.distributed.fsdp.wrap import default_auto_wrap_policy
from lightning.pytorch import Trainer

policy = default_auto_wrap_policy
trainer = Trainer(strategy="fsdp_native")
"""
MIGRATED = """\
from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy
from lightning.pytorch import Trainer

policy = size_based_auto_wrap_policy
trainer = Trainer(strategy="fsdp")
"""


@pytest.fixture(autouse=True)
def _at_the_current_releases(current_releases):
    """Tests of the command line, not of ranges (tests/test_declared_target.py): the
    scratch project declares the current releases, so each fix runs on the whole range."""


@pytest.fixture
def here(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def script(name: str, *argv: str, cwd: Path, stdin: str | None = None):
    """Run a console script (``python -m`` where it is not installed) with this checkout."""
    path = shutil.which(name)
    module = {"fsdp-lint": "codemods.lint", "fsdp-migrate": "codemods.migrate"}[name]
    command = [path] if path else [sys.executable, "-m", module]
    env = checkout_env()
    return subprocess.run(
        [*command, *argv],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def run(capsys, tool, *argv: str) -> tuple[int, str, str]:
    try:
        code = tool.main(list(argv))
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- 1. No silent passes ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["fsdp-lint", "fsdp-migrate"])
def test_no_path_means_the_current_directory(tmp_path, name):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(LEGACY)
    done = script(name, "--diff" if name == "fsdp-migrate" else "--quiet", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    if name == "fsdp-lint":
        assert "src/train.py:1:41: FSDP101" in done.stdout
    else:
        assert "+++ b/src/train.py" in done.stdout
        assert "1 files scanned, 1 would change" in done.stderr


@pytest.mark.parametrize(
    ("argv", "config", "where"),
    [
        (["--select", "FSDP999"], None, "--select: unknown rule selector 'FSDP999'"),
        (["--select", "XYZ"], None, "--select: unknown rule selector 'XYZ'"),
        (["--extend-select", "FSDP1,E501"], None, "--extend-select: unknown rule selector"),
        (["--ignore", "FSDP1O1"], None, "--ignore: unknown rule selector 'FSDP1O1'"),
        ([], 'select = ["E501"]', "pyproject.toml: select: unknown rule selector 'E501'"),
        (
            [],
            '[tool.fsdp-compat.per-file-ignores]\n"tests/*" = ["FSDP7"]',
            "per-file-ignores.tests/*: unknown rule selector 'FSDP7'",
        ),
    ],
)
@pytest.mark.parametrize("tool", [lint, migrate], ids=["lint", "migrate"])
def test_an_unknown_selector_is_an_error_naming_the_valid_ones(
    here, capsys, tool, argv, config, where
):
    (here / "train.py").write_text(LEGACY)
    if config is not None:
        header = "" if config.startswith("[") else "[tool.fsdp-compat]\n"
        (here / "pyproject.toml").write_text(header + config + "\n")
    code, out, err = run(capsys, tool, *argv, "train.py")
    assert code == 2 and not out
    assert where in err
    assert "FSDP, FSDP1, FSDP2, FSDP3, FSDP4" in err  # the valid prefixes
    assert (here / "train.py").read_text() == LEGACY


def test_selectors_are_case_blind_and_prefixes_work(here, capsys):
    (here / "train.py").write_text(LEGACY)
    code, out, _ = run(capsys, lint, "--select", "fsdp1", "train.py")
    assert code == 1 and "FSDP101" in out and "FSDP2" not in out


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "ignore",
            '"FSDP101"',
            "ignore must be a list of strings, got 'FSDP101' (write ignore = [\"FSDP101\"])",
        ),
        ("select", "[101]", "select must be a list of strings"),
        ("exclude", '"third_party/*"', "exclude must be a list of strings"),
    ],
)
def test_a_wrong_type_in_the_configuration_is_an_error(here, capsys, key, value, message):
    (here / "pyproject.toml").write_text(f"[tool.fsdp-compat]\n{key} = {value}\n")
    (here / "train.py").write_text(LEGACY)
    code, _, err = run(capsys, lint, "train.py")
    assert code == 2 and message in err


@pytest.mark.parametrize(
    ("argv", "config", "message"),
    [
        (["--target-torch", "2.99"], None, "--target-torch: torch 2.99 is newer than any release"),
        (["--target-torch", "9.0"], None, "--target-torch: torch 9.0 is newer than any release"),
        (["--target-lightning", "3.0"], None, "Lightning 3.0 is newer than any release"),
        ([], 'target-torch = "2.99"', "target-torch: torch 2.99 is newer than any release"),
    ],
)
@pytest.mark.parametrize("tool", [lint, migrate], ids=["lint", "migrate"])
def test_an_impossible_target_is_an_error(here, capsys, tool, argv, config, message):
    if config:
        (here / "pyproject.toml").write_text(f"[tool.fsdp-compat]\n{config}\n")
    (here / "train.py").write_text(LEGACY)
    code, _, err = run(capsys, tool, *argv, "train.py")
    assert code == 2 and message in err and "upgrade fsdp-compat" in err
    assert (here / "train.py").read_text() == LEGACY


def test_the_newest_known_releases_and_their_patches_are_accepted(here, capsys):
    (here / "train.py").write_text(LEGACY)
    torch = newest_known("torch")
    patch = f"{torch.major}.{torch.minor}.9"
    code, out, _ = run(capsys, lint, "--target-torch", patch, "train.py")
    assert code == 1 and "FSDP101" in out
    code, _, _ = run(capsys, lint, "--target-lightning", str(newest_known("lightning")), "train.py")
    assert code == 1


@pytest.mark.parametrize("jobs", ["0", "-3", "two"])
@pytest.mark.parametrize("tool", [lint, migrate], ids=["lint", "migrate"])
def test_jobs_must_be_at_least_one(here, capsys, tool, jobs):
    (here / "train.py").write_text(LEGACY)
    code, _, err = run(capsys, tool, f"--jobs={jobs}", "train.py")
    assert code == 2 and "--jobs: must be a whole number of at least 1" in err


@pytest.mark.parametrize("name", ["fsdp-lint", "fsdp-migrate"])
def test_stdin_filename_reads_stdin_without_a_dash(tmp_path, name):
    # A file of that name exists and is clean: only stdin is read, as ruff does.
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "x.py").write_text("x = 1\n")
    done = script(name, "--stdin-filename", "src/x.py", cwd=tmp_path, stdin=LEGACY)
    assert done.returncode == 1, done.stderr
    if name == "fsdp-lint":
        assert "src/x.py:1:41: FSDP101" in done.stdout
    else:
        assert done.stdout == MIGRATED
        assert "src/x.py:" not in done.stderr  # every finding was fixed


SYNTAX_ERROR = "import os\n\ndef f(:\n    pass\n"


def test_a_syntax_error_without_a_legacy_name_is_reported(tmp_path):
    (tmp_path / "broken.py").write_text(SYNTAX_ERROR)
    (tmp_path / "fine.py").write_text("x = 1\n")
    linted = script("fsdp-lint", ".", cwd=tmp_path)
    # Python's own position and message, once: line 3, column 7.
    assert linted.returncode == 1
    assert linted.stdout.splitlines()[0] == "broken.py:3:7: invalid-syntax invalid syntax"
    assert "All checks passed" not in linted.stdout
    migrated = script("fsdp-migrate", ".", cwd=tmp_path)
    assert migrated.returncode == 2
    assert "error: broken.py: cannot parse: invalid syntax (line 3, column 7)" in migrated.stderr
    assert (tmp_path / "broken.py").read_text() == SYNTAX_ERROR


def test_a_file_only_newer_than_this_python_is_not_a_syntax_error(here, capsys):
    # Python 3.12's grammar: this Python may refuse it, but it is valid code (libcst
    # reads it), and a tool run under an older Python must not call it broken.
    (here / "aliases.py").write_text(
        "type Vector = list[float]\n\ndef first[T](x: T) -> T:\n    return x\n"
    )
    code, out, _ = run(capsys, lint, "aliases.py")
    assert code == 0 and out == "All checks passed!\n"


def test_a_syntax_error_message_has_one_position(here, capsys):
    # libcst's native parser writes its own position into its message ("error at 3:0"),
    # which disagreed with the one beside it; the message now has Python's, once.
    (here / "broken.py").write_text(
        "from torch.distributed.fsdp.wrap import default_auto_wrap_policy\nx = (\n"
    )
    code, _, err = run(capsys, migrate, "broken.py")
    (line,) = [e for e in err.splitlines() if e.startswith("error:")]
    # Python's own words and column: "'(' was never closed", column 5 from Python 3.10
    message, column = _python_error("x = (\n")
    assert line == f"error: broken.py: cannot parse: {message} (line 2, column {column})"
    code, out, _ = run(capsys, lint, "--output-format", "json", "broken.py")
    (finding,) = json.loads(out)
    assert code == 1 and finding["code"] == "invalid-syntax"
    assert finding["location"] == {"row": 2, "column": column} and finding["fix"] is None


def _python_error(source: str) -> tuple[str, int]:
    """The message and column of Python's own syntax error in ``source``."""
    try:
        compile(source, "<file>", "exec")
    except SyntaxError as exc:
        return exc.msg, exc.offset or 1
    raise AssertionError("expected a syntax error")


NOTEBOOK = notebook(
    "%matplotlib inline\nimport torch\n",
    "!pip install lightning\nfrom torch.distributed.fsdp.wrap import default_auto_wrap_policy\n"
    "policy = default_auto_wrap_policy",
    markdown_first=True,
)


def test_a_notebook_is_linted_cell_by_cell(tmp_path):
    (tmp_path / "explore.ipynb").write_text(NOTEBOOK)
    named = script("fsdp-lint", "explore.ipynb", cwd=tmp_path)
    walked = script("fsdp-lint", ".", cwd=tmp_path)  # found in a walk, as ruff finds it
    for done in (named, walked):
        assert done.returncode == 1, done.stderr
        # Cells counted as ruff counts them (the markdown cell is cell 1).
        assert done.stdout.splitlines()[:2] == [
            "explore.ipynb:cell 3:2:41: FSDP101 [*] " + REGISTRY["FSDP101"].message,
            "Found 1 finding.",  # line 3's use is the import's finding
        ]
    ruff = shutil.which("ruff")
    if ruff:  # ruff's own numbering of the same notebook: an unused import in cell 2
        seen = subprocess.run(
            [
                ruff,
                "check",
                "--no-cache",
                "--isolated",
                "--select",
                "F401",
                "--output-format",
                "concise",
                "explore.ipynb",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "explore.ipynb:cell 2:2:8: F401" in seen.stdout


@pytest.mark.parametrize("sort_keys", [True, False], ids=["as-jupyter-writes", "json-order"])
def test_a_notebook_is_fixed_in_its_cells_and_nothing_else(tmp_path, sort_keys):
    path = tmp_path / "explore.ipynb"
    document = json.loads(NOTEBOOK)
    document["cells"][2]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["é\n"]}]
    document["metadata"] = {"kernelspec": {"name": "python3"}}
    # Jupyter's own layout (sorted keys, one-space indent, a final newline), or json's.
    text = json.dumps(document, sort_keys=sort_keys, indent=1, ensure_ascii=False)
    path.write_text(text + "\n" * sort_keys, encoding="utf-8")
    patch = script("fsdp-migrate", "--diff", ".", cwd=tmp_path)
    assert patch.returncode == 1 and patch.stdout.count("\n-") == 2  # two source lines
    done = script("fsdp-migrate", ".", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # changes made
    assert "1 changed, 1 fixes applied" in done.stderr
    after = json.loads(path.read_text(encoding="utf-8"))
    document["cells"][2]["source"] = [
        "!pip install lightning\n",  # the shell escape kept as it was
        "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n",
        "policy = size_based_auto_wrap_policy",
    ]
    assert after == document  # outputs, metadata and the other cells untouched
    expected = json.dumps(document, sort_keys=sort_keys, indent=1, ensure_ascii=False)
    assert path.read_text(encoding="utf-8") == expected + "\n" * sort_keys  # same layout
    assert script("fsdp-lint", "explore.ipynb", cwd=tmp_path).returncode == 0


def test_a_fix_adding_an_import_puts_it_in_the_first_cell(tmp_path):
    path = tmp_path / "explore.ipynb"
    path.write_text(
        notebook(
            "import functools\n"
            "from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy\n",
            "%%time\nx = 1\n",
            "# %time stays a comment\n"
            "policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={B})\n",
        )
    )
    done = script("fsdp-lint", "--fix", "--unsafe-fixes", "explore.ipynb", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    assert cells == [
        "from torch.distributed.fsdp.wrap import ModuleWrapPolicy\n",
        "%%time\nx = 1\n",
        "# %time stays a comment\npolicy = ModuleWrapPolicy({B})\n",
    ]


def test_a_notebook_that_cannot_be_written_back_keeps_its_bytes_and_says_why(tmp_path):
    path = tmp_path / "compact.ipynb"
    # Not a layout json (or Jupyter) writes: written back, it would change beyond the fix.
    path.write_text(
        '{"cells":[{"cell_type":"code","source":'
        '"from torch.distributed.fsdp.wrap import default_auto_wrap_policy"}],  "metadata": {}}'
    )
    before = path.read_bytes()
    linted = script("fsdp-lint", "compact.ipynb", cwd=tmp_path)
    assert "[*]" not in linted.stdout  # --fix would not write it: no promise made
    assert "cannot write back unchanged" in linted.stdout
    done = script("fsdp-migrate", ".", cwd=tmp_path)
    assert done.returncode == 1 and path.read_bytes() == before
    assert "fix withheld: a notebook whose fixes cannot be written back safely" in done.stdout


def test_a_notebook_in_another_language_is_skipped(tmp_path):
    r_code = "library(ggplot2)\nf <- function(x) { x + 1 }\n"  # not Python
    document = json.loads(notebook(r_code))
    document["metadata"] = {"kernelspec": {"language": "R", "name": "ir"}}
    (tmp_path / "analysis.ipynb").write_text(json.dumps(document))
    done = script("fsdp-lint", ".", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "All checks passed!\n"


def test_a_notebooks_github_annotation_names_its_cell(tmp_path):
    (tmp_path / "explore.ipynb").write_text(NOTEBOOK)
    done = script("fsdp-lint", "--output-format", "github", "explore.ipynb", cwd=tmp_path)
    # The line and column count in the cell, which the message names (as ruff's does).
    assert done.stdout.splitlines()[0] == (
        "::error title=fsdp-lint (FSDP101),file=explore.ipynb,line=2,col=41::"
        "explore.ipynb:cell 3:2:41: FSDP101 " + REGISTRY["FSDP101"].message
    )


def test_a_notebook_that_is_not_json_is_an_error(tmp_path):
    (tmp_path / "broken.ipynb").write_text("{not json")
    done = script("fsdp-lint", ".", cwd=tmp_path)
    assert done.returncode == 2
    assert "error: broken.ipynb: not a Jupyter notebook" in done.stderr


# -- 3. ruff's habits --------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["-q", "-s", "-e", "-n", "-v", "--no-cache"])
@pytest.mark.parametrize("tool", [lint, migrate], ids=["lint", "migrate"])
def test_the_short_flags_ruff_users_type(here, capsys, tool, flag):
    (here / "train.py").write_text(LEGACY)
    argv = [flag, "--check", "train.py"] if tool is migrate else [flag, "train.py"]
    code, out, err = run(capsys, tool, *argv)
    assert code == (0 if flag == "-e" else 1)
    if flag == "-s":  # silent: the exit code says it
        assert not out and not err
    if flag == "-q":
        assert "Found" not in out and "files scanned" not in err
    if flag == "-v":
        config = f"configuration: {here / 'pyproject.toml'}"  # the scratch project's
        assert config in err and "checking 1 files" in err
    if tool is lint and flag not in ("-s",):
        assert "train.py:1:41: FSDP101" in out


def test_show_fixes_lists_what_fix_did(here, capsys):
    (here / "train.py").write_text(LEGACY)
    listing = (
        " 2 findings:\n- train.py:\n    1 × FSDP101 (default-auto-wrap-policy)\n"
        f"    1 × FSDP204 ({REGISTRY['FSDP204'].name})\n"
    )
    code, out, err = run(capsys, lint, "--show-fixes", "train.py")
    assert code == 1 and "ix 2 findings:" not in out + err  # nothing fixed, none listed
    code, out, err = run(capsys, lint, "--diff", "--show-fixes", "train.py")
    assert code == 1 and err.endswith("\nWould fix" + listing)
    code, out, _ = run(capsys, lint, "--fix", "--show-fixes", "train.py")
    assert code == 0 and out.endswith("\nFixed" + listing)
    assert (here / "train.py").read_text() == MIGRATED


def test_fix_names_each_unsafe_fix_it_applied(here, capsys):
    """``--fix`` prints what it left; an unsafe fix it applied is printed too, with what it
    changes (its message), and ``--show-fixes`` marks it."""
    (here / "train.py").write_text(
        "from pytorch_lightning import Trainer\n"
        "t = Trainer(strategy='ddp_fully_sharded', precision=16)\n"
    )
    code, out, _ = run(capsys, lint, "--fix", "--unsafe-fixes", "--show-fixes", "train.py")
    message = REGISTRY["FSDP205"].message
    assert f"train.py:2:13: FSDP205 {message} [unsafe fix applied: behaviour may change]\n" in out
    assert out.endswith(
        f"- train.py:\n    1 × FSDP205 ({REGISTRY['FSDP205'].name}, unsafe)\n"
        "    1 × FSDP206 (legacy-precision)\n"
    ), out
    assert "strategy='fsdp'" in (here / "train.py").read_text()


def test_lint_diff_prints_a_patch_git_applies_and_writes_nothing(here, capsys):
    (here / "train.py").write_text(LEGACY)
    code, out, err = run(capsys, lint, "--diff", "train.py")
    assert code == 1 and out.startswith("--- a/train.py\n+++ b/train.py\n")
    assert "Would fix 2 findings." in err
    assert (here / "train.py").read_text() == LEGACY
    if shutil.which("git"):
        (here / "fix.patch").write_text(out)
        subprocess.run(["git", "apply", "fix.patch"], cwd=here, check=True)
        assert (here / "train.py").read_text() == MIGRATED
        code, out, _ = run(capsys, lint, "--diff", "train.py")
        assert code == 0 and out == ""


def test_add_noqa_silences_each_line_once_and_keeps_strings(here, capsys):
    source = textwrap.dedent(
        """\
        from torch.distributed.fsdp.wrap import default_auto_wrap_policy  # noqa: E501
        from lightning.pytorch import Trainer

        trainer = Trainer(
            strategy="fsdp_native",
        )
        policy = default_auto_wrap_policy
        """
    )
    (here / "train.py").write_text(source)
    code, _, err = run(capsys, lint, "--add-noqa", "train.py")
    # the last line's use of the renamed name is its import's finding: one directive there
    assert code == 0 and "Added 2 noqa directives." in err
    assert (here / "train.py").read_text() == source.replace(
        "# noqa: E501", "# noqa: E501, FSDP101"
    ).replace('"fsdp_native",', '"fsdp_native",  # noqa: FSDP204')
    code, out, _ = run(capsys, lint, "train.py")
    assert code == 0 and out == "All checks passed!\n"


def test_unused_noqa_is_reported_when_selected(here, capsys):
    (here / "train.py").write_text(
        "import os  # noqa: FSDP101\n"
        "from torch.distributed.fsdp.wrap import default_auto_wrap_policy  # noqa: FSDP101\n"
        "x = 1  # noqa: E501\n"
    )
    code, out, _ = run(capsys, lint, "train.py")
    assert code == 0  # opt-in, as ruff's RUF100
    code, out, _ = run(capsys, lint, "--extend-select", "FSDP900", "train.py")
    assert code == 1
    assert out.splitlines()[0] == (
        "train.py:1:12: FSDP900 unused `noqa` directive (unused: `FSDP101`)"
    )
    assert "train.py:2:" not in out and "train.py:3:" not in out
    code, out, _ = run(capsys, lint, "--select", "FSDP2,FSDP900", "train.py")
    assert out.splitlines()[:2] == [
        "train.py:1:12: FSDP900 unused `noqa` directive (non-enabled: `FSDP101`)",
        "train.py:2:67: FSDP900 unused `noqa` directive (non-enabled: `FSDP101`)",
    ]


def test_a_former_code_in_a_noqa_still_silences_its_finding(here, capsys):
    # FSDP133 reported `offload_to_cpu=False` before FSDP139 did: the comment still works.
    (here / "train.py").write_text(
        "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (\n"
        "    checkpoint_wrapper,\n)\n"
        "block = checkpoint_wrapper(block, offload_to_cpu=False)  # noqa: FSDP133\n"
    )
    code, out, _ = run(capsys, lint, "--extend-select", "FSDP900", "train.py")
    assert (code, out.strip()) == (0, "All checks passed!")


def test_statistics_has_a_trailer_and_a_json_form(here, capsys):
    (here / "train.py").write_text(LEGACY)
    code, out, _ = run(capsys, lint, "--statistics", "train.py")
    assert code == 1
    assert out.splitlines()[-2:] == ["Found 2 findings.", "[*] 2 fixable with the `--fix` option."]
    code, out, _ = run(capsys, lint, "--statistics", "--output-format", "json", "train.py")
    rows = json.loads(out)
    assert {row["code"]: row["count"] for row in rows} == {"FSDP101": 1, "FSDP204": 1}
    assert all(row["fixable"] and row["fixable_count"] == row["count"] for row in rows)


def test_explain_in_json_and_every_rule_listed(here, capsys):
    code, out, _ = run(capsys, lint, "--explain", "FSDP101", "--output-format", "json")
    data = json.loads(out)
    assert code == 0 and data["code"] == "FSDP101" and data["fix_safety"] == "safe"
    assert data["explanation"].startswith("FSDP101 (default-auto-wrap-policy)")
    every = [rule.code for rule in REGISTRY] + ["FSDP900"]  # the tool's own rule last
    code, out, _ = run(capsys, lint, "--explain")
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == every
    code, out, _ = run(capsys, lint, "--output-format", "json", "--explain")
    assert [rule["code"] for rule in json.loads(out)] == every
    code, out, _ = run(capsys, lint, "--explain", "fsdp900")
    assert code == 0 and out.startswith("FSDP900 (unused-noqa): ")
    code, out, _ = run(capsys, lint, "--explain", "FSDP900", "--output-format", "json")
    assert json.loads(out)["opt_in"] is True


@pytest.mark.skipif(shutil.which("head") is None, reason="needs head")
@pytest.mark.parametrize(
    ("name", "argv"),
    [("fsdp-lint", "--explain FSDP101"), ("fsdp-migrate", "--diff .")],
)
def test_a_closed_pipe_ends_quietly(tmp_path, name, argv):
    for n in range(40):
        (tmp_path / f"m{n}.py").write_text(LEGACY)
    path = shutil.which(name)
    module = {"fsdp-lint": "codemods.lint", "fsdp-migrate": "codemods.migrate"}[name]
    command = path if path else f"{sys.executable} -m {module}"
    done = subprocess.run(
        f"{command} {argv} | head -1",
        shell=True,
        cwd=tmp_path,
        env=checkout_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert len(done.stdout.splitlines()) == 1
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr


def test_migrate_findings_go_to_stdout(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "fs.py").write_text("from fairscale.nn.wrap import auto_wrap\n")
    done = script("fsdp-migrate", "src/", cwd=tmp_path)
    # `fsdp-migrate src/ > todo.txt` keeps the findings left for a human.
    assert done.returncode == 1
    assert done.stdout.startswith("src/fs.py:1:31: FSDP304 ")
    assert "findings left for a human" in done.stderr and "FSDP304" not in done.stderr


def test_progress_in_a_ci_log_is_a_line_per_tenth(tmp_path):
    for n in range(200):
        (tmp_path / f"m{n:03}.py").write_text("x = 1\n")
    done = script("fsdp-migrate", "--check", ".", cwd=tmp_path)
    lines = [line for line in done.stderr.splitlines() if " files (" in line]
    assert len(lines) == 10, done.stderr
    assert lines[0].startswith("20/200 files (10%), ETA ")
    assert lines[-1].startswith("200/200 files (100%), ")
    quiet = script("fsdp-migrate", "--check", "-q", ".", cwd=tmp_path)
    assert quiet.stderr == ""  # -q: findings and errors only, as ruff's
