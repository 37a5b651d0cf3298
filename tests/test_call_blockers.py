"""What migrate does with one FairScale FSDP / ``DDPFullyShardedStrategy`` call, said alike.

FSDP301's and FSDP202's fixes decide call by call (:mod:`codemods.rules.call_blockers`);
compat's warnings for the same calls say what ``migrate`` will do with *that* call,
from the same helper and the codemod's own lint of the file
(:mod:`compat.call_source`). Each source below is run through the codemod (lint on
``ast``, the libcst engine) and, as a program, through compat: the codemod's verdict
on the call and compat's warning must agree, and the warning names the reason.
"""

from __future__ import annotations

import ast
import runpy
import textwrap
import warnings

import pytest

from codemods.astlint.lint import lint
from codemods.engine.run import run
from codemods.releases import Releases
from codemods.rules.call_blockers import (
    ddp_fully_sharded_blockers,
    fairscale_fsdp_blockers,
    from_ast,
)
from codemods.rules.fsdp303 import GIVEN_MORE, NOT_ENTERED, STAYS_FAIRSCALE
from codemods.settings import Settings
from codemods.syntax import ast_nodes as on_ast
from tests.distributed import NEEDS_FSDP1
from tests.scratch_projects import CURRENT_RELEASES

FAIRSCALE = "from compat.fairscale import FullyShardedDataParallel as FSDP\n"
STRATEGY = (
    "from torch import nn\n"
    "from compat.strategies import DDPFullyShardedStrategy\n"
    "class Block(nn.Module):\n"
    "    pass\n"
)

# (call, the reasons migrate leaves it for a human: none where it rewrites it)
FSDP301_CALLS = [
    ("FSDP(model, reshard_after_forward=False)", []),
    ("FSDP(model, mixed_precision=True, compute_dtype=torch.bfloat16)", []),
    ("FSDP(model, cpu_offload=True, move_grads_to_cpu=True)", []),
    ("FSDP(model, bucket_cap_mb=25)", ["`bucket_cap_mb` has no torch FSDP meaning"]),
    (
        "FSDP(model, state_dict_device=torch.device('cpu'))",
        ["`state_dict_device` has no torch FSDP meaning"],
    ),
    ("FSDP(model, **config)", ["`**kwargs` hides which arguments it passes"]),
    (
        "FSDP(model, reshard_after_forward=flag)",
        ["`reshard_after_forward` is not a literal True or False"],
    ),
    (
        "FSDP(model, compute_dtype=torch.bfloat16)",
        ["`compute_dtype` without `mixed_precision=True` has no torch FSDP meaning"],
    ),
    ("FSDP(module=model)", ["the module is not its first positional argument"]),
    (
        "FSDP(model, move_grads_to_cpu=True)",
        [
            "`move_grads_to_cpu=True` disagrees with the parameters' offload (torch offloads "
            "gradients exactly when it offloads parameters)"
        ],
    ),
]
FSDP202_CALLS = [
    ("DDPFullyShardedStrategy(min_num_params=100, cpu_offload=True)", []),
    ("DDPFullyShardedStrategy(activation_checkpointing=[Block])", []),
    ("DDPFullyShardedStrategy(bucket_cap_mb=25)", ["`bucket_cap_mb` has no FSDPStrategy meaning"]),
    (
        "DDPFullyShardedStrategy(state_dict_to_cpu=True)",
        ["`state_dict_to_cpu` has no FSDPStrategy meaning"],
    ),
    ("DDPFullyShardedStrategy(**config)", ["`**kwargs` hides which arguments it passes"]),
    (
        "DDPFullyShardedStrategy(reshard_after_forward=flag)",
        ["`reshard_after_forward` is not a literal True or False"],
    ),
    (
        "DDPFullyShardedStrategy(activation_checkpointing=checkpointed())",
        ["`activation_checkpointing` is not a class or a list of classes"],
    ),
]


def _call_of(source: str) -> ast.Call:
    return ast.parse(source, mode="eval").body  # type: ignore[return-value]


def _codemod_fixes(source: bytes, code: str, reasons: list[str]) -> bool:
    """The codemod's verdict on the file's last line's call, with libcst and ast agreeing.

    Where it leaves the call, its finding names ``reasons``.
    """
    settings = Settings(select=(code,))
    findings = lint(source, settings)
    assert findings == run(source, settings).findings
    line = source.count(b"\n")
    (finding,) = [f for f in findings if f.line == line]
    if reasons:
        assert f"(line {line}: {'; '.join(reasons)})" in (finding.no_fix or "")
    return finding.fixable


@pytest.mark.parametrize(("call", "reasons"), FSDP301_CALLS)
def test_fsdp301_blockers_are_the_codemods_decision(call, reasons):
    source = f"import torch\n{FAIRSCALE}wrapped = {call}\n".encode()
    assert _codemod_fixes(source, "FSDP301", reasons) is (not reasons)
    arguments = [from_ast(arg) for arg in on_ast.arguments(_call_of(call))]
    assert fairscale_fsdp_blockers(arguments) == reasons


def test_a_partial_of_the_class_is_named_as_the_reason():
    source = (
        f"import functools\n{FAIRSCALE}wrap = functools.partial(FSDP, flatten_parameters=True)\n"
    )
    reasons = ["a `functools.partial` of it, whose calls add arguments the fix does not see"]
    assert not _codemod_fixes(source.encode(), "FSDP301", reasons)


@pytest.mark.parametrize(("call", "reasons"), FSDP202_CALLS)
def test_fsdp202_blockers_are_the_codemods_decision(call, reasons):
    source = f"{STRATEGY}strategy = {call}\n".encode()
    assert _codemod_fixes(source, "FSDP202", reasons) is (not reasons)
    classes = "activation_checkpointing=[" in call  # what the codemod's resolver sees
    arguments = [from_ast(arg, classes) for arg in on_ast.arguments(_call_of(call))]
    assert ddp_fully_sharded_blockers(arguments) == reasons


# compat's warnings --------------------------------------------------------------------

torch = pytest.importorskip("torch")


@pytest.fixture
def single_rank():
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def _warnings_of(tmp_path, body: str, name: str = "program.py") -> list[str]:
    """Run ``body`` as a program from a file; its FSDP deprecation warnings' texts."""
    from compat import FSDPDeprecationWarning

    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    # a project on the current releases: what migrate does turns on the call alone
    (tmp_path / "pyproject.toml").write_text(CURRENT_RELEASES)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runpy.run_path(str(path))
    return [str(w.message) for w in caught if issubclass(w.category, FSDPDeprecationWarning)]


_PRELUDE_301 = (
    f"import torch\n{FAIRSCALE}model = torch.nn.Linear(2, 2)\nflag = True\nconfig = {{}}\n"
)


@NEEDS_FSDP1
@pytest.mark.distributed
@pytest.mark.parametrize(("call", "reasons"), FSDP301_CALLS)
def test_fsdp301_warning_says_what_migrate_does_with_the_call(tmp_path, single_rank, call, reasons):
    messages = _warnings_of(tmp_path, f"{_PRELUDE_301}wrapped = {call}\n")
    general = [m for m in messages if "[FSDP301]" in m][0]
    if reasons:
        expected = f"--unsafe-fixes PATH` leaves this call for a human: {'; '.join(reasons)}."
        assert expected in general
    else:
        assert "--unsafe-fixes PATH` rewrites it; review the change." in general
    # every FSDP301 warning of the call (the dropped arguments' too) says the same
    assert all(("leaves this call" in m) is bool(reasons) for m in messages if "[FSDP301]" in m)


_PRELUDE_202 = f"{STRATEGY}flag = True\nconfig = {{}}\ndef checkpointed():\n    return [Block]\n"


@pytest.mark.parametrize(("call", "reasons"), FSDP202_CALLS)
def test_fsdp202_warning_says_what_migrate_does_with_the_call(tmp_path, call, reasons):
    pytest.importorskip("lightning")
    messages = _warnings_of(tmp_path, f"{_PRELUDE_202}strategy = {call}\n")
    general = [m for m in messages if "[FSDP202]" in m][0]
    if reasons:
        expected = f"--unsafe-fixes PATH` leaves this call for a human: {'; '.join(reasons)}."
        assert expected in general
    else:
        assert "--unsafe-fixes PATH` rewrites it; review the change." in general


def test_a_certain_call_in_a_file_migrate_keeps_says_so(tmp_path):
    pytest.importorskip("lightning")
    body = (
        f"{_PRELUDE_202}"
        "kept = DDPFullyShardedStrategy(bucket_cap_mb=25)\n"
        "certain = DDPFullyShardedStrategy(min_num_params=100)\n"
    )
    messages = [m for m in _warnings_of(tmp_path, body, "train.py") if "[FSDP202]" in m]
    assert "leaves this call for a human: it renames a file's uses together, and not every " \
        "one in train.py is certain (`fsdp-lint --select FSDP202 train.py` lists them)." \
        in messages[-1]  # fmt: skip
    source = (tmp_path / "train.py").read_bytes()
    assert not any(f.fixable for f in lint(source, Settings(select=("FSDP202",))))


def test_without_source_the_values_decide(tmp_path):
    pytest.importorskip("lightning")
    from compat import FSDPDeprecationWarning

    code = compile(f"{_PRELUDE_202}strategy = DDPFullyShardedStrategy(bucket_cap_mb=25)\n",
                   "<no source>", "exec")  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(code, {})  # noqa: S102
    messages = [str(w.message) for w in caught if issubclass(w.category, FSDPDeprecationWarning)]
    assert (
        "leaves this call for a human: `bucket_cap_mb` has no FSDPStrategy meaning."
        in (messages[0])
    )


@NEEDS_FSDP1
@pytest.mark.distributed
def test_a_call_the_fix_is_not_about_gets_no_verdict(tmp_path, single_rank):
    """FairScale's ``wrap()`` builds the FSDP (FSDP301 warns there); the codemod reports
    FSDP303 at that line, not FSDP301, so the warning keeps the rule's own hint."""
    from codemods.registry import REGISTRY
    from compat.deprecation import deprecation_message

    body = (
        f"{_PRELUDE_301}from compat.fairscale import enable_wrap, wrap\n"
        "with enable_wrap(wrapper_cls=FSDP):\n"
        "    layer = wrap(torch.nn.Linear(2, 2), bucket_cap_mb=25)\n"
    )
    messages = _warnings_of(tmp_path, body)
    assert deprecation_message(REGISTRY["FSDP301"]) in messages
    assert not any("leaves this call" in m for m in messages)


def test_without_columns_the_one_call_on_the_frames_line_is_read(tmp_path):
    """Python 3.10 gives a frame's line, not its columns: compat reads the one FSDP202
    call that starts on it, and none where two do."""
    from types import SimpleNamespace

    from compat import call_source

    lines = [
        *STRATEGY.splitlines(),
        "config = {}",
        "strategy = DDPFullyShardedStrategy(",
        "    **config,",
        ")",
        "pair = DDPFullyShardedStrategy(), DDPFullyShardedStrategy()",
    ]
    path = tmp_path / "train.py"
    path.write_text("\n".join(lines) + "\n")
    call_line = lines.index("strategy = DDPFullyShardedStrategy(") + 1
    code = SimpleNamespace(co_filename=str(path))
    frame = SimpleNamespace(f_code=code, f_globals={}, f_lineno=call_line)
    position = call_source._only_call_on_line(frame, "FSDP202")
    assert position == (call_line, call_line + 2, len("strategy = "), 1)
    frame.f_lineno = len(lines)
    assert call_source._only_call_on_line(frame, "FSDP202") is None


_TWO_WRAPPERS = """\
from fairscale.nn.checkpoint import checkpoint_wrapper


def build_a(layer, offload_to_cpu):
    return checkpoint_wrapper(layer, {first})


def build_b(layer):
    return checkpoint_wrapper(layer, offload_to_cpu=True)
"""


_NOT_FALSE = "`offload_to_cpu` is not a literal False (True is torch's `offload_wrapper`)"


@pytest.mark.parametrize(
    ("first", "line", "reason"),
    [
        ("offload_to_cpu=offload_to_cpu", 5, _NOT_FALSE),
        ("offload_to_cpu=False", 9, _NOT_FALSE),
        ("debug=True", 5, "`debug` has no torch `checkpoint_wrapper` meaning"),
    ],
)
@pytest.mark.parametrize("fix", [False, True])
def test_every_run_names_the_files_first_call_the_fix_leaves_and_why(first, line, reason, fix):
    """The libcst engine's walk is not in source order: it names the same call as lint."""
    from codemods.releases import Releases

    source = _TWO_WRAPPERS.format(first=first).encode()
    torch = Releases.parse(torch="2.2..")
    settings = Settings(select=("FSDP306",), fix=fix, unsafe_fixes=True, releases=torch)
    findings = run(source, settings).findings
    assert lint(source, Settings(select=("FSDP306",), releases=torch)) == [
        f.replace(fixed=False) for f in findings
    ]
    assert {f.no_fix for f in findings} == {
        "not every use in this file is one its fix rewrites with certainty "
        f"(line {line}: {reason}); it renames every use together"
    }


_TORCH_22 = Releases.parse(torch="2.2..")
_WRAPS = """\
from fairscale.nn.wrap import enable_wrap, wrap
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def build(layer, other):
    with enable_wrap(wrapper_cls=FSDP):
        inner = wrap(layer)
    return inner, {call}
"""


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        ("wrap(other)", NOT_ENTERED),
        ("wrap(other, flatten_parameters=True)", GIVEN_MORE),
    ],
)
@pytest.mark.parametrize("fix", [False, True])
def test_fsdp303_names_why_a_wrap_stays_fairscales(call, reason, fix):
    """A ``wrap`` outside ``enable_wrap``, or given FairScale's arguments: both detectors
    name it, on its line (8)."""
    source = _WRAPS.format(call=call).encode()
    select = ("FSDP302", "FSDP303")
    settings = Settings(select=select, fix=fix, unsafe_fixes=True, releases=_TORCH_22)
    findings = [f for f in run(source, settings).findings if f.code == "FSDP303"]
    assert lint(source, Settings(select=select, releases=_TORCH_22)) == [
        f.replace(fixed=False)
        for f in run(source, Settings(select=select, releases=_TORCH_22)).findings
    ]
    assert len(findings) == 3
    assert {f.no_fix for f in findings} == {
        "not every use in this file is one its fix rewrites with certainty "
        f"(line 8: {reason}); it renames every use together"
    }


def test_fsdp303_says_its_enable_wrap_stays_fairscales_in_a_run_without_fsdp302():
    """A safe-only migration leaves FSDP302's unsafe fix out: the ``wrap`` inside
    FairScale's ``enable_wrap`` stays for that reason (lint, which asks what a fixing
    run could do, says it moves only with FSDP302)."""
    source = _WRAPS.format(call="None").encode()
    settings = Settings(select=("FSDP302", "FSDP303"), fix=True, releases=_TORCH_22)
    (finding,) = [f for f in run(source, settings).findings if f.code == "FSDP303" and f.line == 7]
    assert finding.no_fix == (
        "not every use in this file is one its fix rewrites with certainty "
        f"(line 7: {STAYS_FAIRSCALE}); it renames every use together"
    )
