"""Run legacy code unchanged: ``python -m compat SCRIPT [ARGS...]``.

The script runs exactly as ``python SCRIPT [ARGS...]`` would (``sys.argv``, ``__main__``,
``sys.path[0]``, the exit code, tracebacks that start at its own lines), with
:func:`compat.install` in effect first, in it and in every Python process it starts.

Usage::

    python -m compat SCRIPT [ARGS...]
    python -m compat -m MODULE [ARGS...]
    torchrun --nproc-per-node 2 -m compat SCRIPT [ARGS...]
    python -m compat --list     # what the drop-in installs here
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

USAGE = """\
usage: python -m compat SCRIPT [ARGS...]
       python -m compat -m MODULE [ARGS...]
       python -m compat --list

Runs SCRIPT (or MODULE) as `python SCRIPT` would, with the legacy FSDP, Lightning and
FairScale names installed at their old homes (also in the processes it starts).
Under torchrun: `torchrun --nproc-per-node N -m compat SCRIPT [ARGS...]`."""

#: Frames of the runner itself, left out of the tracebacks the user sees.
_RUNNER_FILES = {__file__, runpy.__file__, "<frozen runpy>"}


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "--list":
        return list_installed()
    if argv[0] == "-m":
        if len(argv) < 2:
            print("python -m compat: -m needs a module name\n" + USAGE, file=sys.stderr)
            return 2
        install(subprocesses=True)
        return run_module(argv[1], argv[2:])
    if argv[0].startswith("-"):
        print(f"python -m compat: unknown option {argv[0]}\n" + USAGE, file=sys.stderr)
        return 2
    install(subprocesses=True)
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
    code = compile(source, full, "exec", dont_inherit=True)
    return _run(lambda: exec(code, main_module.__dict__))  # noqa: S102 - the user's script


def run_module(name: str, args: list[str]) -> int:
    """Run module ``name`` as ``python -m name args...`` would; return its exit code."""
    program = os.path.basename(getattr(sys, "orig_argv", ["python"])[0])
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


def _is_zip(path: str) -> bool:
    import zipfile

    return os.path.isfile(path) and zipfile.is_zipfile(path)


def _set_path0(directory: str) -> None:
    # `python -m compat` put the working directory first; `python SCRIPT` puts its folder.
    if sys.flags.safe_path:
        return
    if sys.path and sys.path[0] in ("", os.getcwd()):
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
