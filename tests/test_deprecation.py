"""The project's warning: category, message, and the user's file and line."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import warnings

import pytest

from codemods.registry import REGISTRY
from compat import FSDPDeprecationWarning, warn_deprecated
from compat.deprecation import deprecation_message

COMPAT_DIR = os.path.dirname(inspect.getfile(warn_deprecated))


def _line_above() -> int:
    """The line just before the caller's current line."""
    return inspect.currentframe().f_back.f_lineno - 1


def test_category_is_a_future_warning():
    assert issubclass(FSDPDeprecationWarning, FutureWarning)


def test_points_at_the_callers_file_and_line():
    with pytest.warns(FSDPDeprecationWarning) as record:
        warn_deprecated("FSDP101")
        line = _line_above()
    assert record[0].filename == __file__
    assert record[0].lineno == line


def _compat_wrapper(code: str):
    """A function whose frames look like compat's own (compiled with a compat filename)."""
    namespace = {"warn_deprecated": warn_deprecated}
    source = f"def legacy(*args, **kwargs):\n    warn_deprecated({code!r})\n    return True\n"
    exec(compile(source, os.path.join(COMPAT_DIR, "_fake_shim.py"), "exec"), namespace)
    return namespace["legacy"]


def test_skips_compat_frames_to_reach_the_user():
    legacy = _compat_wrapper("FSDP102")
    with pytest.warns(FSDPDeprecationWarning) as record:
        legacy()
        line = _line_above()
    assert (record[0].filename, record[0].lineno) == (__file__, line)


def test_skips_torch_frames_when_torch_calls_a_legacy_callable():
    torch = pytest.importorskip("torch")
    legacy = _compat_wrapper("FSDP102")
    model = torch.nn.Sequential(torch.nn.Linear(2, 2))
    with pytest.warns(FSDPDeprecationWarning) as record:
        # nn.Module.apply (torch's code) calls the legacy callable for each module.
        model.apply(lambda m: legacy(m))
        line = _line_above()
    assert [(r.filename, r.lineno) for r in record] == [(__file__, line)]


def test_a_legacy_context_manager_warns_at_the_with_line():
    pytest.importorskip("torch.distributed.fsdp")
    from compat.fairscale import enable_wrap  # a contextlib.contextmanager

    with pytest.warns(FSDPDeprecationWarning, match=r"\[FSDP302\]") as record:
        with enable_wrap():
            line = _line_above()
    assert [(r.filename, r.lineno) for r in record] == [(__file__, line)]


def test_once_per_call_site():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            warn_deprecated("FSDP103")
        warn_deprecated("FSDP103")  # another line: warns again
        for _ in range(2):
            warn_deprecated("FSDP104")  # another rule on its own line
    assert [str(w.message)[-9:] for w in caught] == ["[FSDP103]", "[FSDP103]", "[FSDP104]"]


def test_unknown_code_is_a_key_error():
    with pytest.raises(KeyError, match="FSDP999"):
        warn_deprecated("FSDP999")


@pytest.mark.parametrize("rule", list(REGISTRY), ids=[r.code for r in REGISTRY])
def test_message_says_what_since_instead_and_how(rule):
    text = deprecation_message(rule, detail="(seen in a test)")
    assert rule.short_old_spelling in text
    assert ("is deprecated" in text) != (rule.opt_in or rule.kind.value == "default value change")
    version = rule.deprecated or rule.introduced
    if version:
        assert f"{rule.version_framework.display} {version}" in text
    assert rule.message in text
    assert "python -m codemods.migrate" in text
    assert text.endswith(f"(seen in a test) [{rule.code}]")


@pytest.mark.slow
def test_shown_by_default_filters(tmp_path):
    script = tmp_path / "user.py"
    script.write_text("from compat import warn_deprecated\nwarn_deprecated('FSDP203')\n")
    env = {**os.environ, "PYTHONPATH": os.path.dirname(COMPAT_DIR)}
    env.pop("PYTHONWARNINGS", None)
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert f"{script}:2: FSDPDeprecationWarning:" in proc.stderr
    assert "FSDPStrategy" in proc.stderr
