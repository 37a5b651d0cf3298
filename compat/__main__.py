"""Run legacy code unchanged: ``fsdp-compat-run SCRIPT [ARGS...]`` or ``python -m compat ...``.

The script runs exactly as ``python SCRIPT [ARGS...]`` would (``sys.argv``, ``__main__``,
``sys.path[0]``, the exit code, tracebacks that start at its own lines), with
:func:`compat.install` in effect first, in it and in every Python process it starts.
``-m MODULE``, ``-c CODE`` and ``-`` (the program read from stdin) work as with
``python``.

Usage::

    fsdp-compat-run SCRIPT [ARGS...]      # or: python -m compat SCRIPT [ARGS...]
    fsdp-compat-run -m MODULE [ARGS...]
    fsdp-compat-run -c CODE [ARGS...]
    fsdp-compat-run - [ARGS...] < script.py
    torchrun --nproc-per-node 2 --no-python fsdp-compat-run SCRIPT [ARGS...]
    fsdp-compat-run --list                # what the drop-in installs here

``fsdp-compat-run`` imports this package by its own location; ``python -m compat``
imports the first ``compat`` on ``sys.path``, which a ``compat.py`` in the working
directory replaces (:mod:`compat.dropin.shadowing`).
"""

from __future__ import annotations

import builtins
import importlib.machinery
import importlib.util
import os
import runpy
import sys
import types

from compat.dropin import apply_all, install, installed
from compat.dropin.shadowing import SAFE_COMMAND, shadowing_note

#: How ``python -m compat`` names itself; ``fsdp-compat-run`` passes its own name.
MODULE_COMMAND = "python -m compat"

USAGE = """\
usage: {prog} SCRIPT [ARGS...]
       {prog} -m MODULE [ARGS...]
       {prog} -c CODE [ARGS...]
       {prog} - [ARGS...]          (the program read from stdin)
       {prog} --list

Runs SCRIPT (or MODULE, CODE, stdin) as `python SCRIPT` would, with the legacy FSDP,
Lightning and FairScale names installed at their old homes (also in the processes it
starts). Under torchrun: `torchrun --nproc-per-node N --no-python {safe} SCRIPT [ARGS...]`.
`{safe}` is the safe form: `python -m compat` runs a `compat.py` of the working
directory instead, if there is one."""

#: The spellings of the entry Python put first on sys.path for the runner (set by main).
_runner_path0: tuple[str, ...] | None = None

#: Frames of the runner itself, left out of the tracebacks the user sees.
_RUNNER_FILES = {__file__, runpy.__file__, "<frozen runpy>"}


def main(
    argv: list[str] | None = None, prog: str = MODULE_COMMAND, path0: str | None = None
) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Args:
        argv: The arguments after the command.
        prog: The command, as messages name it.
        path0: The entry Python put first on ``sys.path`` to start the runner, which the
            program's own takes the place of: the console script's folder; by default the
            working directory, as ``python -m compat`` puts it there.
    """
    global _runner_path0
    _runner_path0 = ("", os.getcwd()) if path0 is None else (path0,)
    argv = sys.argv[1:] if argv is None else argv
    usage = USAGE.format(prog=prog, safe=SAFE_COMMAND)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "--list":
        return list_installed()
    if argv[0] in ("-m", "-c") and len(argv) < 2:
        needed = "a module name" if argv[0] == "-m" else "a program"
        print(f"{prog}: {argv[0]} needs {needed}\n{usage}", file=sys.stderr)
        return 2
    if argv[0].startswith("-") and argv[0] not in ("-m", "-c", "-"):
        print(f"{prog}: unknown option {argv[0]}\n{usage}", file=sys.stderr)
        return 2
    script_dir = os.path.dirname(os.path.abspath(argv[0])) if argv[0][:1] != "-" else ""
    note = shadowing_note(dict.fromkeys([os.getcwd(), script_dir or os.getcwd()]), prog)
    if note:
        print(note, file=sys.stderr)
    install(subprocesses=True)
    if argv[0] == "-m":
        return run_module(argv[1], argv[2:])
    if argv[0] == "-c":
        return run_code(argv[1], "<string>", ["-c", *argv[2:]])
    if argv[0] == "-":
        return run_stdin(argv[1:])
    return run_script(argv[0], argv[1:])


def list_installed() -> int:
    """Install, import what the drop-in patches, and print what it put in place."""
    install()
    apply_all()
    for record in sorted(installed(), key=lambda r: (r.codes, r.where)):
        print(f"{','.join(record.codes) or '-':<24} {record.where}\n{'':<24}   -> {record.what}")
    return 0


def run_script(path: str, args: list[str]) -> int:
    """Run the file ``path`` as ``python path args...`` would; return its exit code."""
    full = os.path.abspath(path)
    if os.path.isdir(path) or not full.endswith(".py") and _is_zip(full):
        sys.argv[:] = [path, *args]
        return _run(lambda: runpy.run_path(path, run_name="__main__"))
    try:
        with open(full, "rb") as handle:
            source = handle.read()
    except OSError as exc:
        program = os.path.basename(getattr(sys, "orig_argv", ["python"])[0])
        message = f"{program}: can't open file {full!r}: [Errno {exc.errno}] {exc.strerror}"
        print(message, file=sys.stderr)
        return 2
    sys.argv[:] = [path, *args]
    _set_path0(os.path.dirname(full))
    main_module = types.ModuleType("__main__")
    main_module.__dict__.update(
        __file__=full,
        __cached__=None,
        __builtins__=builtins,
        __loader__=importlib.machinery.SourceFileLoader("__main__", full),
    )
    # For good, as under `python path`: pickle, multiprocessing and Lightning look here.
    sys.modules["__main__"] = main_module
    return _run(lambda: _execute(source, full, main_module))


def run_module(name: str, args: list[str]) -> int:
    """Run module ``name`` as ``python -m name args...`` would; return its exit code."""
    program = os.path.basename(getattr(sys, "orig_argv", ["python"])[0])
    _set_path0(os.getcwd())  # there already under `python -m compat`, not under the console script
    try:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations is not None:
            spec = importlib.util.find_spec(f"{name}.__main__")
            if spec is None:
                print(f"{program}: No module named {name}.__main__; '{name}' is a package and "
                      "cannot be directly executed", file=sys.stderr)  # fmt: skip
                return 1
    except ImportError as exc:
        message = f"{program}: Error while finding module specification for {name!r} ({exc})"
        print(message, file=sys.stderr)
        return 1
    if spec is None:
        print(f"{program}: No module named {name}", file=sys.stderr)
        return 1
    sys.argv[:] = [name, *args]
    return _run(lambda: runpy.run_module(name, run_name="__main__", alter_sys=True))


def run_code(source: str | bytes, filename: str, argv: list[str]) -> int:
    """Run ``source`` as ``python -c`` (``filename`` ``"<string>"``) or ``python -`` would."""
    sys.argv[:] = argv
    _set_path0("")
    main_module = _fresh_main()
    if filename == "<stdin>":  # python - sets these; python -c does not
        main_module.__dict__.update(__file__=filename, __cached__=None)
    return _run(lambda: _execute(source, filename, main_module))


def run_stdin(args: list[str]) -> int:
    """Run the program on stdin as ``python - args...`` would (a console on a terminal)."""
    if sys.stdin is not None and sys.stdin.isatty():
        sys.argv[:] = ["-", *args]
        _set_path0("")
        main_module = _fresh_main()
        import code  # only for an interactive session

        return _run(lambda: code.interact(local=main_module.__dict__, exitmsg=""))
    # Bytes, as python reads them: a coding declaration applies.
    source = sys.stdin.buffer.read() if sys.stdin is not None else b""
    return run_code(source, "<stdin>", ["-", *args])


def _execute(source: str | bytes, filename: str, main_module: types.ModuleType) -> None:
    # Compiled inside _run, so that a syntax error is reported as python reports it.
    compiled = compile(source, filename, "exec", dont_inherit=True)
    exec(compiled, main_module.__dict__)  # noqa: S102 - the user's program


def _fresh_main() -> types.ModuleType:
    # For good, as under `python -c`: pickle, multiprocessing and Lightning look here.
    main_module = types.ModuleType("__main__")
    main_module.__dict__.update(
        __builtins__=builtins, __annotations__={}, __loader__=importlib.machinery.BuiltinImporter
    )
    sys.modules["__main__"] = main_module
    return main_module


def _is_zip(path: str) -> bool:
    import zipfile

    return os.path.isfile(path) and zipfile.is_zipfile(path)


def _set_path0(directory: str) -> None:
    # Python put the runner's own entry first (`python -m compat`: the working directory;
    # the console script: its folder); `python SCRIPT` puts the script's folder there,
    # `python -m` the working directory, `python -c` and `python -` "".
    if getattr(sys.flags, "safe_path", False):  # -P, Python 3.11+
        return
    if sys.path and _runner_path0 is not None and sys.path[0] in _runner_path0:
        sys.path[0] = directory
    else:
        sys.path.insert(0, directory)


def _run(body) -> int:
    try:
        body()
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001 - printed as the interpreter would
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename in _RUNNER_FILES:
            tb = tb.tb_next
        # The interpreter prints the exception's own traceback: shorten that one.
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
