"""Ground floor: user-facing errors, settings read from the environment, atomic file writes, inter-process locks
and text made safe to print.

Every chiplore package except `kernels` may import these (stdlib only); they import nothing of chiplore.
"""
