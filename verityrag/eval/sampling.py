"""Samples of the bundled questions that keep each kind's share (``--max-test-questions``)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from verityrag.serve.bundled_corpus import EvalQuestion


def stratified_sample(questions: Sequence[EvalQuestion], n: int, seed: int) -> list[EvalQuestion]:
    """``n`` questions keeping each kind's share (at least one of each kind), chosen by ``seed``.

    Shares are apportioned by largest remainder (ties to the kind seen first), so exactly
    ``n`` questions come back unless ``n`` is below the number of kinds. Rounding each share
    on its own gave 11 for n = 10 and 99 for n = 100 on the bundled test split.
    """
    if n >= len(questions):
        return list(questions)
    rng = random.Random(seed)
    by_kind: dict[str, list[EvalQuestion]] = {}
    for q in questions:
        by_kind.setdefault(q.kind, []).append(q)
    groups = list(by_kind.values())
    quotas = [n * len(items) / len(questions) for items in groups]
    shares = [max(1, math.floor(q)) for q in quotas]
    kinds = range(len(groups))
    while sum(shares) < n:  # the kind furthest below its quota (max() keeps the first of a tie)
        shares[max(kinds, key=lambda i: quotas[i] - shares[i])] += 1
    while sum(shares) > n and max(shares) > 1:  # a kind raised to one: take from the furthest above
        shares[max((i for i in kinds if shares[i] > 1), key=lambda i: shares[i] - quotas[i])] -= 1
    picked: list[EvalQuestion] = []
    for items, share in zip(groups, shares, strict=True):
        picked.extend(rng.sample(items, min(share, len(items))))
    return picked
