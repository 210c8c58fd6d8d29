#!/usr/bin/env bash
# GPU call 1 (H200): sanity, knob sweep of the extend-attention family, GPU kernel tests. Results under $OUT.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv | tee $OUT/nvidia-smi.txt
python3 -c "
import torch
from kernels.extend_attention.spec import TASK, make_inputs
from kernels.extend_attention import extend_attention_fwd, baseline
a = make_inputs(TASK.case('decode'), 1, 'cuda'); extend_attention_fwd(**a); baseline.extend_attention_fwd(**a)
torch.cuda.synchronize(); print('sanity ok', torch.__version__)
" 2>&1 | tail -20
timeout 330 python3 benchmarks/sweep_extend_attention.py --out $OUT/sweep.json --workers 14 2>&1 | tee $OUT/sweep.log | tail -40
timeout 170 python3 -m pytest -q -m gpu tests/kernels -n 12 -x -p no:cacheprovider 2>&1 | tail -25 | tee $OUT/pytest_gpu.log
