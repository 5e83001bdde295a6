"""Fairness measures the reproductions, the twin and the validation scripts share:
Jain's index and max-min fair shares (one definition each)."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["jain", "max_min_shares"]


def jain(xs: Sequence[float], *, all_zero: float = math.nan) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²) (Jain, Chiu and Hawe 1984): 1 when all are
    equal, 1/n when one takes everything. ``all_zero`` is the value for no values or all
    zero (NaN by default; 1.0 reads "nobody got anything" as equal)."""
    sq = sum(x * x for x in xs)
    if not xs or sq == 0:
        return all_zero
    return sum(xs) ** 2 / (len(xs) * sq)


def max_min_shares(capacity: float, demands: Sequence[float]) -> list[float]:
    """Max-min fair shares of ``capacity`` among ``demands`` (water filling: the smallest
    demands are met first, the rest share what is left equally)."""
    share = [0.0] * len(demands)
    left, n = capacity, len(demands)
    for i in sorted(range(len(demands)), key=lambda i: demands[i]):
        share[i] = min(demands[i], left / n)
        left -= share[i]
        n -= 1
    return share
