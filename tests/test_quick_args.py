"""A hook's command line read without argparse (``codemods/cli/quick_args.py``).

Whatever ``read`` answers must be what the tool's parser makes of the same command
line; everything else it must leave to the parser (None).
"""

from __future__ import annotations

import itertools

import pytest

from codemods import lint, migrate
from codemods.cli import quick_args

TOOLS = {
    "lint": (quick_args.LINT, lint.build_parser),
    "migrate": (quick_args.MIGRATE, migrate.build_parser),
}


def _flag_actions(parser):
    return [
        a
        for a in parser._actions
        if a.option_strings and a.nargs == 0 and a.dest not in ("help", "version")
    ]


@pytest.mark.parametrize("name", TOOLS)
def test_the_tables_are_the_parser_s(name):
    tool, build = TOOLS[name]
    parser = build()
    assert tool.defaults == vars(parser.parse_args([]))
    flags = {}
    for action in _flag_actions(parser):
        for option in action.option_strings:
            # what the flag alone stores (a BooleanOptionalAction: True, or False for --no-)
            flags[option] = (action.dest, getattr(parser.parse_args([option]), action.dest))
    assert tool.flags == flags
    groups = {
        frozenset(a.dest for a in g._group_actions) for g in parser._mutually_exclusive_groups
    }
    assert set(tool.exclusive) == groups


#: Command lines a hook, an editor or a user types, and ones argparse refuses or
#: reads otherwise: each is checked against the parser.
PARTS = ["a.py", "b.py", "--force-exclude", "--no-force-exclude", "-q", "--silent", "-e", "--fix"]


def _lines():
    for count in range(4):
        yield from itertools.permutations(PARTS, count)


@pytest.mark.parametrize("name", TOOLS)
def test_what_it_reads_the_parser_reads_alike(name, capsys):
    tool, build = TOOLS[name]
    parser = build()
    read = 0
    for line in _lines():
        quick = quick_args.read(list(line), tool)
        try:
            expected = vars(parser.parse_args(list(line)))
        except SystemExit:
            assert quick is None, line  # argparse refuses it: so must the quick path
            continue
        if quick is not None:
            read += 1
            assert vars(quick) == expected, line
    capsys.readouterr()
    assert read > 100  # the hook's forms are read here, not handed on


@pytest.mark.parametrize(
    "line",
    [
        ["--select", "FSDP1", "a.py"],  # an option with a value
        ["--qui", "a.py"],  # an abbreviation argparse accepts
        ["-qe", "a.py"],  # short flags together
        ["--help"],
        ["--version"],
        ["-", "a.py"],  # stdin
        ["--", "-a.py"],
        ["a.py", "-q", "b.py"],  # paths on both sides (argparse refuses it)
        ["-q", "-q", "a.py"],
        ["--quiet", "--silent", "a.py"],  # a mutually exclusive pair
        ["--fix=yes", "a.py"],
    ],
)
def test_it_leaves_the_rest_to_argparse(line):
    assert quick_args.read(line, quick_args.LINT) is None


def test_an_error_found_later_prints_the_parser_s_usage(tmp_path, capsys, monkeypatch):
    # `--diff --fix` reads quickly, and is refused after: with argparse's usage and status.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("x = 1\n")
    with pytest.raises(SystemExit) as stopped:
        lint.main(["--diff", "--fix", "a.py"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: fsdp-lint [-h] [--version]"), err
    assert err.rstrip().endswith(
        "fsdp-lint: error: --diff writes nothing: it cannot be combined with --fix"
    )
