"""Ground floor: user-facing errors, settings read from the environment, and atomic file writes.

Every chiplore package except `kernels` may import these (stdlib only); they import nothing of chiplore.
"""
