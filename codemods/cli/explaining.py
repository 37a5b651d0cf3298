"""``--explain``: one rule's page, or every rule listed; as text or as JSON (as ruff's).

Also what every command needs when its output is piped into ``head``: a reader that
stops early ends the run quietly, not with a ``BrokenPipeError`` traceback.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from codemods.cli.options import EXIT_CLEAN, EXIT_ERROR
from codemods.cli.output import TOOL_RULES, UNUSED_NOQA
from codemods.registry import REGISTRY, Rule


def explain(code: str, output_format: str = "text") -> int:
    """Print the page of rule ``code`` (every rule, one line each, for ``""``); the exit code."""
    import json  # only for --explain

    if not code.strip():
        return _list_all(output_format)
    if code.strip().upper() == UNUSED_NOQA:
        return _explain_unused_noqa(output_format)
    try:
        rule = REGISTRY[code.strip().upper()]
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return EXIT_ERROR
    from codemods.registry.render import explain as page
    from codemods.rules.index import where_it_lives

    if output_format == "json":
        print(json.dumps(_as_json(rule, page(rule)), indent=2))
        return EXIT_CLEAN
    print(page(rule))
    print("\n## Where it lives")
    print("\n".join(f"- `{path}`" for path in where_it_lives(rule)))
    return EXIT_CLEAN


def _as_json(rule: Rule, explanation: str | None = None) -> dict:
    """A rule as ruff's ``rule --output-format json`` shows one (its fields, and ours)."""
    data = {
        "code": rule.code,
        "name": rule.name,
        "linter": "fsdp-compat",
        "summary": rule.message,
        "message_formats": [rule.message],
        "fix": {"safe": "Fix is always available.", "unsafe": "Fix is sometimes available."}.get(
            rule.fix.value, "Fix is not available."
        ),
        "fix_safety": rule.fix.value,
        "framework": rule.framework.value,
        "opt_in": rule.opt_in,
        "old": list(rule.old),
        "new": rule.new,
        "introduced": rule.introduced,
        "deprecated": rule.deprecated,
        "removed": rule.removed,
    }
    if explanation is not None:
        data["explanation"] = explanation
    return data


def _unused_noqa_json() -> dict:
    """FSDP900 in the shape :func:`_as_json` gives a registry rule."""
    name, summary = TOOL_RULES[UNUSED_NOQA]
    return {
        "code": UNUSED_NOQA,
        "name": name,
        "linter": "fsdp-compat",
        "summary": summary,
        "fix_safety": "manual",
        "opt_in": True,
    }


def _explain_unused_noqa(output_format: str) -> int:
    """The page of FSDP900, the tool's own rule (it has no registry entry)."""
    import json  # only for --explain

    name, summary = TOOL_RULES[UNUSED_NOQA]
    page = (
        f"{UNUSED_NOQA} ({name}): {summary}\n\n"
        "## What it does\nFinds a `# noqa: FSDP...` comment naming a code that silences no "
        "finding on its line (like ruff's RUF100; opt-in: `--extend-select FSDP900`).\n\n"
        "## Why is this bad?\nA stale suppression hides the next real finding on that line.\n\n"
        "## Fix safety\nNo automatic fix: remove the code, or the comment."
    )
    if output_format == "json":
        print(json.dumps({**_unused_noqa_json(), "explanation": page}, indent=2))
    else:
        print(page)
    return EXIT_CLEAN


def _list_all(output_format: str) -> int:
    """Every rule: ``CODE  name  fix-safety  message``, or a JSON array of them."""
    import json  # only for --explain

    if output_format == "json":
        every = [_as_json(rule) for rule in REGISTRY] + [_unused_noqa_json()]
        print(json.dumps(every, indent=2))
        return EXIT_CLEAN
    width = max(len(rule.name) for rule in REGISTRY)
    for rule in REGISTRY:
        marker = "(opt-in) " if rule.opt_in else ""
        print(f"{rule.code}  {rule.name:<{width}}  {rule.fix.value:<6}  {marker}{rule.message}")
    name, summary = TOOL_RULES[UNUSED_NOQA]
    print(f"{UNUSED_NOQA}  {name:<{width}}  {'manual':<6}  (opt-in) {summary}")
    return EXIT_CLEAN


@contextlib.contextmanager
def quiet_broken_pipe() -> Iterator[None]:
    """End quietly when the reader of standard output goes away (``| head``).

    Standard output is pointed at ``/dev/null`` so that Python's own flush at exit
    does not fail again, and the run exits as a piped command does: with SIGPIPE's
    status, 141, the way shells report it.
    """
    try:
        yield
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        with contextlib.suppress(OSError, ValueError):
            os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(141) from None
