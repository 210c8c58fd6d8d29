"""``chiplore profile probe``: the chip measured through Triton (any backend Triton targets).

- `hardware_profiles.probe.measure`: the measurements on the present GPU (compute units from the knee of a
  fixed-work kernel, shared memory per program from a compile-and-launch ladder, threads per program, achievable
  DRAM bandwidth, achievable dense tl.dot throughput per dtype, launch overhead), with torch's copy and matmul
  timed in the same run for comparison.
- `hardware_profiles.probe.kernels`: the Triton kernels (spin, copy, matmul, staged dot, threads, empty).
- `hardware_profiles.probe.analysis`: the pure conclusions (staircase fit, ladder limit, median and spread).
- `hardware_profiles.probe.record`: readings as fields of kind ``measured`` (method, repeats, spread), merged into
  the profile with conflicts recorded, and the spec and measured rooflines side by side.
"""
