#!/usr/bin/env bash
# The GPU leg: the whole suite on a lent GPU machine, in one call of at most 8 minutes.
#
# The machine has torch, Lightning, pytest, pytest-xdist and pytest-timeout but no network:
# the project's wheels-only dependencies travel in .whl/ (prepare it here first with the
# machine's Python's wheels of libcst and pyflakes, e.g.
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 -d .whl libcst==1.9.0 pyflakes==4.1.0
# ). Each multi-process test gets NCCL where there is a GPU for each of its ranks and gloo
# on the CPU otherwise (tests/distributed.py); the junit records which. Tests that need a
# tool the machine lacks (Sphinx, pre-commit, ruff) skip with that reason.
#
# Leaves in $OUT (default ./gpu-out): gpu.xml (junit; on the matrix page with
# `python .ci/matrix.py --add OUT/gpu.xml`), gpu.log and summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH="$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1
# No package index there: the test that pip-installs the project skips, saying so.
export FSDP_COMPAT_OFFLINE=1
nvidia-smi -L
python3 -c 'import torch, lightning; print("torch", torch.__version__, "lightning", lightning.__version__, "cuda", torch.cuda.is_available())'
# pytest-timeout's per-test limit keeps one hung test from costing the whole junit file.
timeout "${SUITE_TIMEOUT:-450}" python3 -m pytest -p no:cacheprovider -q \
  -n "${GPU_JOBS:-$(nproc)}" --timeout "${TEST_TIMEOUT:-240}" --durations 15 \
  --junitxml="$out/gpu.xml" "$@" >"$out/gpu.log" 2>&1
status=$?
tail -60 "$out/gpu.log"
python3 .ci/matrix.py --summary "$out/gpu.xml" | tee "$out/summary.txt"
exit $status
