#!/usr/bin/env bash
# The GPU leg, as run on a lent GPU machine (torch and Lightning already installed there,
# no network): the project's wheels-only dependencies from .whl/, then the focused tests
# (census, state-dict and FSDP1-to-FSDP2 runs, one process: pytest-xdist drops the junit
# properties the matrix page reads) and then every other distributed or gpu-marked test
# (in parallel), each on NCCL where CUDA is present. Junit files and logs go to $OUT
# (default: ./gpu-out); the focused file goes on the matrix page with
#   python .ci/matrix.py --focused --add OUT/gpu-focused.xml
# Prepare .whl/ here first: the machine's Python's wheels of libcst and pyflakes, e.g.
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 -d .whl libcst pyflakes
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH="$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c 'import torch, lightning; print("torch", torch.__version__, "lightning", lightning.__version__, "cuda", torch.cuda.is_available())'
jobs=${GPU_JOBS:-8}
focused=(tests/test_census.py tests/test_compat_state_dict.py tests/test_state_dict_runs.py
  tests/test_state_dict_fix_runs.py tests/test_fsdp2_runs.py tests/test_gpu.py)
timeout "${FOCUSED_TIMEOUT:-240}" python3 -m pytest -p no:cacheprovider -q \
  --junitxml="$out/gpu-focused.xml" "${focused[@]}" 2>&1 | tee "$out/gpu-focused.log" | tail -40
timeout "${DISTRIBUTED_TIMEOUT:-300}" python3 -m pytest -p no:cacheprovider -q -n "$jobs" \
  -m "distributed or gpu" "${focused[@]/#/--ignore=}" --junitxml="$out/gpu-distributed.xml" 2>&1 \
  | tee "$out/gpu-distributed.log" | tail -60
