"""compat's warnings say what migrate does on the releases the calling file runs on.

A project that declares ``torch>=1.12`` still runs on 1.12 and 1.13, where torch calls
policies with ``unwrapped_params=``: ``fsdp-migrate`` leaves such a policy alone there
(tests/test_declared_target.py), and the warning ``compat`` gives at run time must not
promise a rewrite. Where the project's range allows the fix, the warning says migrate
rewrites it. Each case runs a real script in its own scratch project, in this process
(``runpy``, as ``python train.py`` runs it; compat reads each file's project once a
file): a fresh interpreter cost 3.4 s of CPU a case, importing torch again.
"""

from __future__ import annotations

import runpy
import textwrap

import pytest

from compat.features import current

SCRIPT = textwrap.dedent(
    """\
    import warnings

    import torch.nn as nn

    from compat.fsdp.wrap import size_based_auto_wrap_policy

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        size_based_auto_wrap_policy(nn.Linear(2, 2), recurse=False, unwrapped_params=10)
    print("\\n".join(str(w.message) for w in caught if "[FSDP102]" in str(w.message)))
    """
)


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        (
            "torch>=1.12\n",
            "`python -m codemods.migrate PATH` leaves it where the file runs: no fix runs on "
            "torch 1.12..latest: it needs torch 2.0.",
        ),
        ("torch>=2.0\n", "`python -m codemods.migrate PATH` rewrites it."),
    ],
    ids=["a range below the fix", "a range the fix runs on"],
)
def test_the_warning_follows_the_files_range(tmp_path, monkeypatch, capsys, declared, expected):
    (tmp_path / "requirements.txt").write_text(declared)
    (tmp_path / "train.py").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(tmp_path / "train.py"), run_name="__main__")
    out = capsys.readouterr().out
    if current().policy_numel_kwarg == "unwrapped_params":
        # torch before 2.0 passes `unwrapped_params` itself: compat's policy is torch's
        # own call there, and says nothing whatever the range
        assert "[FSDP102]" not in out, out
        return
    assert "[FSDP102]" in out and expected in out, out
