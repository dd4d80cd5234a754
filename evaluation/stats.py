"""Confidence intervals over tasks and paired tests: when is a difference real?

Every figure this project reports is a mean of per-task values, and every comparison is between
two such means over the *same* tasks, so the unit of resampling is the task:
:func:`bootstrap_ci` (BCa; Efron, "Better Bootstrap Confidence Intervals", JASA 1987),
:func:`paired_test` (a paired permutation or Wilcoxon signed-rank test) and
:func:`compare_to_best`. Resampling is seeded; tests are per comparison, not adjusted for
multiplicity. Details: docs/rerankers.md, "Statistics".
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = [
    "Interval",
    "PairedComparison",
    "PairedTestKind",
    "bootstrap_ci",
    "paired_test",
    "compare_to_best",
    "mean_cis",
    "DEFAULT_RESAMPLES",
]

PairedTestKind = Literal["permutation", "wilcoxon"]
"""Which paired test gives the p-value."""

DEFAULT_RESAMPLES = 9999
"""Bootstrap and permutation resamples (scipy's default)."""


@dataclass(frozen=True, kw_only=True)
class Interval:
    """A mean over units with its bootstrap confidence interval."""

    estimate: float
    """The mean of the values."""
    low: float
    """Lower end of the interval."""
    high: float
    """Upper end of the interval."""
    confidence: float
    """Confidence level (0.95)."""
    n: int
    """Number of units (tasks) averaged."""
    method: str
    """``BCa``, ``percentile``, or ``degenerate`` (all values equal: the interval is the value)."""

    def to_json(self) -> dict[str, float | int | str]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high,
                "confidence": self.confidence, "n": self.n, "method": self.method}


@dataclass(frozen=True, kw_only=True)
class PairedComparison:
    """``a`` against ``b`` on the units both have."""

    mean_a: float
    """Mean of ``a`` over the paired units."""
    mean_b: float
    """Mean of ``b`` over the paired units."""
    difference: Interval
    """Mean of ``a - b`` with its bootstrap interval."""
    p_value: float
    """Two-sided p-value of the paired test (1.0 when every difference is 0)."""
    test: PairedTestKind
    """Which test gave it."""
    alpha: float
    """Significance level the comparison is judged at."""

    @property
    def n(self) -> int:
        return self.difference.n

    @property
    def significant(self) -> bool:
        return self.p_value < self.alpha

    def to_json(self) -> dict[str, object]:
        return {"mean_a": self.mean_a, "mean_b": self.mean_b, "difference": self.difference.to_json(),
                "p_value": self.p_value, "test": self.test, "alpha": self.alpha, "n": self.n,
                "significant": self.significant}


def _mean(x: npt.NDArray[np.float64], axis: int = -1) -> npt.NDArray[np.float64]:
    return np.asarray(np.mean(x, axis=axis))


_BATCH = 1000
"""Resamples evaluated at once (bounds memory: rows x tasks x batch floats)."""


def _bootstrap_rows(
    x: npt.NDArray[np.float64], *, confidence: float, n_resamples: int, seed: int,
    method: Literal["BCa", "percentile", "basic"],
) -> list[Interval]:
    """Intervals of the mean of each row of ``x`` (one scipy call for all rows)."""
    from scipy import stats

    if x.ndim != 2 or x.shape[1] == 0:
        raise ValueError("bootstrap: no values")
    if not np.isfinite(x).all():
        raise ValueError("bootstrap: values must be finite (drop tasks without a value first)")
    est = x.mean(axis=1)
    low = est.copy()
    high = est.copy()
    used = ["degenerate"] * x.shape[0]
    varied = np.flatnonzero(np.ptp(x, axis=1) > 0) if x.shape[1] > 1 else np.zeros(0, np.int64)
    for attempt in (method, "percentile"):
        if varied.size == 0:
            break
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=stats.DegenerateDataWarning)
            warnings.simplefilter("ignore", category=RuntimeWarning)
            res = stats.bootstrap((x[varied],), _mean, n_resamples=n_resamples, confidence_level=confidence,
                                  method=attempt, vectorized=True, axis=-1, batch=_BATCH,
                                  rng=np.random.default_rng(seed))
        lo = np.atleast_1d(np.asarray(res.confidence_interval.low, np.float64))
        hi = np.atleast_1d(np.asarray(res.confidence_interval.high, np.float64))
        ok = np.isfinite(lo) & np.isfinite(hi)
        for r, good, a, b in zip(varied.tolist(), ok.tolist(), lo.tolist(), hi.tolist()):
            if good:
                low[r], high[r], used[r] = min(a, est[r]), max(b, est[r]), attempt
        # BCa is undefined where the jackknife is degenerate: those rows get the percentile interval
        varied = varied[~ok]
    return [
        Interval(estimate=float(est[r]), low=float(low[r]), high=float(high[r]), confidence=confidence,
                 n=int(x.shape[1]), method=used[r])
        for r in range(x.shape[0])
    ]


def bootstrap_ci(
    values: Sequence[float] | npt.ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    method: Literal["BCa", "percentile", "basic"] = "BCa",
) -> Interval:
    """Bootstrap interval of the mean of ``values`` (one value per task; NaN not allowed)."""
    x = np.asarray(values, np.float64).reshape(1, -1)
    return _bootstrap_rows(x, confidence=confidence, n_resamples=n_resamples, seed=seed, method=method)[0]


def _p_values(d: npt.NDArray[np.float64], test: PairedTestKind, n_resamples: int, seed: int) -> list[float]:
    """Two-sided p-value of each row of paired differences ``d`` (tasks along the last axis)."""
    from scipy import stats

    p = np.ones(d.shape[0])
    rows = np.flatnonzero(np.any(d != 0, axis=1))
    # One task: flipping its sign gives -d and d, so the two-sided p is exactly 1 (scipy refuses n = 1).
    if rows.size == 0 or d.shape[1] < 2:
        return p.tolist()
    if test == "permutation":
        # one sample with permutation_type="samples": scipy flips the sign of each task's
        # difference, i.e. swaps a and b within the task (the paired permutation test)
        res = stats.permutation_test((d[rows],), _mean, permutation_type="samples", vectorized=True,
                                     n_resamples=n_resamples, alternative="two-sided", axis=-1,
                                     batch=_BATCH, rng=np.random.default_rng(seed))
        p[rows] = np.atleast_1d(res.pvalue)
    elif test == "wilcoxon":
        for r in rows.tolist():
            p[r] = float(stats.wilcoxon(d[r], zero_method="wilcox").pvalue)
    else:
        raise ValueError(f"paired test: unknown test {test!r} (permutation, wilcoxon)")
    return [float(v) for v in np.minimum(p, 1.0)]


def _paired_arrays(
    a: Mapping[str, float], b: Mapping[str, float]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    keys = [k for k in a if k in b]
    if not keys:
        raise ValueError("paired_test: the two sides have no unit (task) in common")
    return (np.array([a[k] for k in keys], np.float64), np.array([b[k] for k in keys], np.float64))


def paired_test(
    a: Mapping[str, float],
    b: Mapping[str, float],
    *,
    test: PairedTestKind = "permutation",
    alpha: float = 0.05,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> PairedComparison:
    """Compare per-task values of two methods on the tasks both have.

    ``permutation``: under the null hypothesis the labels a/b are exchangeable within a
    task, so the sign of each task's difference is flipped at random (exact when
    ``2**n <= n_resamples``); the statistic is the mean difference, what the tables report.
    ``wilcoxon``: the signed-rank test (tasks with a zero difference are dropped, scipy's
    ``zero_method="wilcox"``), which tests a shift of the median rather than the mean.
    """
    x, y = _paired_arrays(a, b)
    d = (x - y).reshape(1, -1)
    diff = _bootstrap_rows(d, confidence=confidence, n_resamples=n_resamples, seed=seed, method="BCa")[0]
    p = _p_values(d, test, n_resamples, seed)[0]
    return PairedComparison(mean_a=float(x.mean()), mean_b=float(y.mean()), difference=diff,
                            p_value=p, test=test, alpha=alpha)


def mean_cis(
    per_method: Mapping[str, Mapping[str, float]],
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Interval]:
    """:func:`bootstrap_ci` of each method's per-task values (methods with no value are left out)."""
    out: dict[str, Interval] = {}
    by_size: dict[int, list[str]] = {}
    for name, vals in per_method.items():
        if vals:
            by_size.setdefault(len(vals), []).append(name)
    for names in by_size.values():
        x = np.array([[float(v) for v in per_method[nm].values()] for nm in names], np.float64)
        for nm, iv in zip(names, _bootstrap_rows(x, confidence=confidence, n_resamples=n_resamples,
                                                  seed=seed, method="BCa")):
            out[nm] = iv
    return out


def compare_to_best(
    per_method: Mapping[str, Mapping[str, float]],
    *,
    test: PairedTestKind = "permutation",
    alpha: float = 0.05,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> tuple[str, dict[str, PairedComparison]]:
    """The method with the highest mean, and every other method compared with it.

    Returns ``(best, {method: comparison of method against best})`` on the tasks every
    method has; a comparison that is not :attr:`~PairedComparison.significant` marks a method
    the data cannot tell apart from the best. Ties on the mean go to the first method in
    ``per_method``'s order. All comparisons share one scipy call per statistic.
    """
    if not per_method:
        raise ValueError("compare_to_best: no methods")
    names = list(per_method)
    keys = [k for k in per_method[names[0]] if all(k in per_method[nm] for nm in names)]
    if not keys:
        raise ValueError("compare_to_best: the methods have no task in common")
    x = np.array([[float(per_method[nm][k]) for k in keys] for nm in names], np.float64)
    means = x.mean(axis=1)
    b = int(np.argmax(means))
    others = [i for i in range(len(names)) if i != b]
    if not others:
        return names[b], {}
    d = x[others] - x[b]
    diffs = _bootstrap_rows(d, confidence=confidence, n_resamples=n_resamples, seed=seed, method="BCa")
    ps = _p_values(d, test, n_resamples, seed)
    return names[b], {
        names[i]: PairedComparison(mean_a=float(means[i]), mean_b=float(means[b]), difference=diff, p_value=p,
                                   test=test, alpha=alpha)
        for i, diff, p in zip(others, diffs, ps)
    }
