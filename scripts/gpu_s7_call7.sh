#!/usr/bin/env bash
# GPU session 7, call 7 (one H200; carry .whl): as call 6 (scripts/gpu_s7_call6.sh: the 9-case bench, then the
# kernels' GPU tests in 8 pytest-xdist workers) after its two findings: the ragged batch ran 1639 us, not 1170,
# because a where() on V in the TMA tail tile added 16 bytes of shared memory to the 64x64 program (no longer two
# per SM); and the launch-timing test cannot share the GPU with other workers, so it runs alone afterwards.
set -u
bash scripts/gpu_s7_call6.sh
export PYTHONPATH=$PWD
timeout 60 python3 -m pytest -q -m gpu tests/kernels/test_timing_gpu.py -p no:cacheprovider > $OUT/tests_timing_gpu.log 2>&1
echo "timing tests rc=$?"
tail -3 $OUT/tests_timing_gpu.log
