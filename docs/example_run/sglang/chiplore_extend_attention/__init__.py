"""Extend attention tuned by chiplore; needs torch and triton only."""

from .kernel import extend_attention_fwd

__all__ = ["extend_attention_fwd"]
