"""Features of each distinct program in a task's pool, for the learned reranker.

Every feature is a function of a task's :class:`~rerank.matrix.TaskMatrix` alone, so
ground-truth verdicts can never be an input (they reach the learner apart, see
:mod:`rerank.learned`). The features are listed in :data:`FEATURES`; their definitions and
sources (CodeT, RW, MBR-exec, B4, SRank, SG) are in ``docs/rerankers.md``, "Features".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from rerank.matrix import TaskMatrix
from rerank.methods import Ranking, b4, codet, codet_rw

__all__ = ["FeatureSpec", "FEATURES", "FEATURE_NAMES", "DEFAULT_FEATURES", "LOG_OF", "SCORE_FEATURES", "FEATURE_SETS",
           "SHAPE_FEATURES", "SG_FEATURES", "SG_SET",
           "pool_features",
           "MissingFeatureInput"]

Needs = Literal["matrix", "outputs", "sizes", "logprobs", "authors"]
"""What a feature is computed from: the pass/fail matrix (always there), the programs'
outputs on the tests' inputs (``TaskMatrix.output_keys``), program sizes, log-probabilities,
and (self-generated tests) which solution each test was written for (``TaskMatrix.test_authors``)."""


@dataclass(frozen=True, kw_only=True)
class FeatureSpec:
    """One feature of a distinct program (its definition: the table in ``docs/rerankers.md``)."""

    name: str
    """Column name (stable: models store it)."""
    needs: Needs
    """The input it is computed from."""
    source: str
    """The paper or reranker it comes from."""


_BASE_FEATURES: tuple[FeatureSpec, ...] = (
    FeatureSpec(name="loaded", needs="matrix", source="CodeT"),
    FeatureSpec(name="pool_share", needs="matrix", source="duplicates in the pool"),
    FeatureSpec(name="tests_passed_share", needs="matrix", source="CodeT"),
    FeatureSpec(name="distinct_tests_passed_share", needs="matrix", source="CodeT"),
    FeatureSpec(name="rw_passed_share", needs="matrix", source="RW (arXiv 2310.05727)"),
    FeatureSpec(name="passes_none", needs="matrix", source="CodeT"),
    FeatureSpec(name="agreement_share", needs="matrix", source="CodeT"),
    FeatureSpec(name="codet_score_rel", needs="matrix", source="CodeT"),
    FeatureSpec(name="codet_top", needs="matrix", source="CodeT"),
    FeatureSpec(name="codet_rank", needs="matrix", source="CodeT"),
    FeatureSpec(name="b4_posterior", needs="matrix", source="B4 (ASE 2024)"),
    FeatureSpec(name="b4_top", needs="matrix", source="B4 (ASE 2024)"),
    FeatureSpec(name="b4_rank", needs="matrix", source="B4 (ASE 2024)"),
    FeatureSpec(name="soft_agreement", needs="matrix", source="CodeT, soft (SRank's overlap on pass patterns)"),
    FeatureSpec(name="passed_test_consensus", needs="matrix", source="test consensus"),
    FeatureSpec(name="failed_test_consensus", needs="matrix", source="test consensus"),
    FeatureSpec(name="majority_tests_passed", needs="matrix", source="test consensus"),
    FeatureSpec(name="behaviour_share", needs="outputs", source="MBR-exec (EMNLP 2022)"),
    FeatureSpec(name="mbr_top", needs="outputs", source="MBR-exec (EMNLP 2022)"),
    FeatureSpec(name="functional_overlap", needs="outputs", source="SRank (arXiv 2311.03366)"),
    FeatureSpec(name="error_share", needs="outputs", source="errors"),
    FeatureSpec(name="timeout_share", needs="outputs", source="time-outs"),
    FeatureSpec(name="length_rel", needs="sizes", source="program length"),
    FeatureSpec(name="logprob_rel", needs="logprobs", source="the model's likelihood"),
    FeatureSpec(name="b4_log_gap", needs="matrix", source="B4 (ASE 2024)"),
    FeatureSpec(name="functional_overlap_rel", needs="outputs", source="SRank (arXiv 2311.03366)"),
    FeatureSpec(name="behaviour_share_rel", needs="outputs", source="MBR-exec (EMNLP 2022)"),
    FeatureSpec(name="task_codet_top_share", needs="matrix", source="task context"),
    FeatureSpec(name="task_log_programs", needs="matrix", source="task context"),
    # Shape-invariant forms: ranks and shares within the task, in [0, 1], whose
    # meaning does not change with the number of samples, generations or tests per generation.
    FeatureSpec(name="codet_pct", needs="matrix", source="CodeT"),
    FeatureSpec(name="b4_pct", needs="matrix", source="B4 (ASE 2024)"),
    FeatureSpec(name="rw_pct", needs="matrix", source="RW (arXiv 2310.05727)"),
    FeatureSpec(name="rw_score_rel", needs="matrix", source="RW (arXiv 2310.05727)"),
    FeatureSpec(name="overlap_pct", needs="outputs", source="SRank (arXiv 2311.03366)"),
    FeatureSpec(name="mbr_pct", needs="outputs", source="MBR-exec (EMNLP 2022)"),
    FeatureSpec(name="b4_gap_per_test", needs="matrix", source="B4 (ASE 2024)"),
    FeatureSpec(name="b4_log_gap_per_test", needs="matrix", source="B4 (ASE 2024)"),
    # Self-generated tests (SG; Xiong, Guo, Chen, arXiv 2310.05727, Section 7): each generation
    # was written with one of the pool's samples in the prompt.
    FeatureSpec(name="sg_own_tests_passed", needs="authors", source="SG (arXiv 2310.05727)"),
    FeatureSpec(name="sg_own_tests_support", needs="authors", source="SG (arXiv 2310.05727)"),
    FeatureSpec(name="sg_others_tests_passed", needs="authors", source="SG (arXiv 2310.05727)"),
)
"""The features before their log variants, in column order."""

LOG_OF: tuple[str, ...] = (
    "pool_share", "tests_passed_share", "distinct_tests_passed_share", "rw_passed_share", "agreement_share",
    "codet_score_rel", "soft_agreement", "passed_test_consensus", "majority_tests_passed", "behaviour_share",
    "functional_overlap",
)
"""Shares that also get a ``log_`` variant: a linear score over logs is a product of powers,
the shape of CodeT's ``tests x sqrt(solutions)`` and SRank's ``size x overlap x tests``, with
the exponents learned."""

LOG_FLOOR = 1e-3
"""``log_<name> = log(max(<name>, LOG_FLOOR))``."""

_BASE = {f.name: f for f in _BASE_FEATURES}
FEATURES: tuple[FeatureSpec, ...] = _BASE_FEATURES + tuple(
    FeatureSpec(name=f"log_{b}", needs=_BASE[b].needs, source=_BASE[b].source) for b in LOG_OF
)
"""Every feature, in column order: the base features, then the log variants."""

FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)
"""Column names of :data:`FEATURES`."""

DEFAULT_FEATURES: tuple[str, ...] = tuple(f.name for f in FEATURES if f.needs not in ("logprobs", "authors"))
"""What a model uses when the training samples carry no log-probabilities and the tests are not
self-generated (CodeT's data)."""

SG_FEATURES: tuple[str, ...] = tuple(f.name for f in FEATURES if f.needs == "authors")
"""The features of self-generated tests (need :attr:`TaskMatrix.test_authors`)."""

SCORE_FEATURES: tuple[str, ...] = ("b4_log_gap", "log_codet_score_rel", "log_functional_overlap",
                                   "log_behaviour_share")
"""The published rerankers' own scores, each "higher is better": B4's posterior, CodeT's
score, SRank's functional overlap and MBR-exec's class size (a linear score over these
logs is a weighted product of the four)."""

SHAPE_FEATURES: tuple[str, ...] = ("b4_gap_per_test", "codet_score_rel", "functional_overlap_rel",
                                   "behaviour_share_rel")
"""The published rerankers' scores in forms that mean the same on any pool shape:
B4's log-posterior gap to the task's best per test, CodeT's score and SRank's functional
overlap relative to the task's best, the MBR-exec class relative to the largest. The shipped
model's features (``docs/rerankers.md``)."""

SG_SET: tuple[str, ...] = ("b4_gap_per_test", "codet_score_rel", "functional_overlap_rel", "sg_own_tests_support",
                           "sg_others_tests_passed")
"""For self-generated tests: :data:`SHAPE_FEATURES` with the MBR-exec class swapped for two SG
features (the ``direct`` kind takes at most 5)."""

FEATURE_SETS: dict[str, tuple[str, ...]] = {"all": DEFAULT_FEATURES, "scores": SCORE_FEATURES,
                                            "shapes": SHAPE_FEATURES, "sg": SG_SET}
"""Named feature sets (``rerank train --features``)."""

_SPEC = {f.name: f for f in FEATURES}


class MissingFeatureInput(ValueError):
    """A requested feature needs an input the matrix does not carry (outputs, sizes, ...)."""


def _per_program(ranking: Ranking, n: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Score and 0-based tie-group index of each program (NaN / -1 when unranked)."""
    score = np.full(n, np.nan)
    group = np.full(n, -1, np.int64)
    for g, grp in enumerate(ranking.groups):
        idx = np.asarray(grp.members, np.int64)
        score[idx] = grp.score
        group[idx] = g
    return score, group


def _rank_feature(group: npt.NDArray[np.int64], n_groups: int) -> npt.NDArray[np.float64]:
    out = np.zeros(group.shape, np.float64)
    ranked = group >= 0
    if n_groups:
        out[ranked] = 1.0 - group[ranked] / n_groups
    return out


def _safe_div(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64] | float) -> npt.NDArray[np.float64]:
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.divide(a, b)
    return np.where(np.isfinite(r), r, 0.0)


def _percentile(score: npt.NDArray[np.float64], weight: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Per ranked program (finite score), the share of ``weight`` (the task's loaded samples by
    occurrence) on programs scoring at most its own, unranked ones counting as below every score:
    1 for the top group; 0 for an unranked program (NaN)."""
    out = np.zeros(score.shape, np.float64)
    ranked = np.isfinite(score)
    total = float(weight.sum())
    if not ranked.any() or total <= 0:
        return out
    # equal up to float noise (tests x sqrt(samples) computed two ways) is equal: 9 digits
    scale = float(np.abs(score[ranked]).max()) or 1.0
    key = np.round(score[ranked] / scale, 9)
    order = np.argsort(key, kind="stable")
    cum = np.cumsum(weight[ranked][order])
    at_most = cum[np.searchsorted(key[order], key, side="right") - 1]
    out[ranked] = (at_most + float(weight[~ranked].sum())) / total
    return out


def _sg_features(matrix: TaskMatrix, pf: npt.NDArray[np.float64], wl: npt.NDArray[np.float64],
                 n_loaded: float) -> dict[str, npt.NDArray[np.float64]]:
    """The SG features (see :data:`FEATURES`) from ``matrix.test_authors``."""
    assert matrix.test_authors is not None
    n, m = matrix.n_solutions, matrix.n_tests
    own = np.zeros((n, m))  # own[i, j]: occurrences of test j written with program i in the prompt
    for j, authors in enumerate(matrix.test_authors):
        for a in authors:
            if 0 <= a < n:
                own[a, j] += 1
    tw = matrix.test_counts.astype(np.float64)
    q = (wl @ pf) / n_loaded if n_loaded and m else np.zeros(m)
    n_own = own.sum(axis=1)
    others = tw[None, :] - own
    return {
        "sg_own_tests_passed": _safe_div((own * pf).sum(axis=1), n_own),
        "sg_own_tests_support": _safe_div(own @ q, n_own),
        "sg_others_tests_passed": _safe_div((others * pf).sum(axis=1), others.sum(axis=1)),
    }


def _output_codes(
    matrix: TaskMatrix,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Output keys as integers (equal keys, equal codes; -1: not loaded), and which cells
    are errors and which time-outs (failure keys are ``"!<outcome>:<kind>"``)."""
    assert matrix.output_keys is not None
    n, m = matrix.n_solutions, matrix.n_tests
    codes = np.full((n, m), -1, np.int64)
    ids: dict[str, int] = {}
    for i, row in enumerate(matrix.output_keys):
        if matrix.loaded[i] and len(row) == m:
            codes[i] = [ids.setdefault(k, len(ids)) for k in row]
    kinds = np.array([k[:2] for k in ids] or [""], dtype=object)
    is_error = np.append(kinds == "!e", False)   # index -1 (not loaded) maps to the False appended
    is_timeout = np.append(kinds == "!t", False)
    return codes, is_error[codes], is_timeout[codes]


def pool_features(matrix: TaskMatrix, names: Sequence[str] = DEFAULT_FEATURES) -> npt.NDArray[np.float64]:
    """The ``[n_solutions, len(names)]`` feature table of one task (see :data:`FEATURES`).

    Raises :class:`MissingFeatureInput` when a requested feature needs outputs, sizes or
    log-probabilities that the matrix does not carry.

    Longer than 80 lines: one short block per feature of :data:`FEATURES`, in one place so that
    a feature's formula reads beside the task's arrays it shares with the others (loaded
    weights, the pass matrix, CodeT's and B4's scores, the output codes), which a split into
    steps would pass around as a dozen arguments.
    """
    unknown = [nm for nm in names if nm not in _SPEC]
    if unknown:
        raise KeyError(f"unknown feature(s) {unknown}; known: {', '.join(FEATURE_NAMES)}")
    needs = {_SPEC[nm].needs for nm in names}
    if "outputs" in needs and matrix.output_keys is None:
        raise MissingFeatureInput(f"{matrix.task_id}: features need the programs' outputs (build the matrix with outputs)")
    if "sizes" in needs and matrix.solution_sizes is None:
        raise MissingFeatureInput(f"{matrix.task_id}: features need program sizes (rerank.matrix.with_pool_info)")
    if "logprobs" in needs and matrix.solution_logprobs is None:
        raise MissingFeatureInput(f"{matrix.task_id}: features need log-probabilities (samples carry no 'logprob')")
    if "authors" in needs and matrix.test_authors is None:
        raise MissingFeatureInput(f"{matrix.task_id}: features need self-generated tests (generations that name the "
                                  f"solution in their prompt, 'solution_id', as 'testgen run --setting self' writes)")

    n, m = matrix.n_solutions, matrix.n_tests
    w = matrix.solution_counts.astype(np.float64)
    total = float(w.sum())
    loaded = matrix.loaded.astype(bool)
    wl = np.where(loaded, w, 0.0)
    n_loaded = float(wl.sum())
    passed = matrix.passed & loaded[:, None]
    pf = passed.astype(np.float64)
    tw = matrix.test_counts.astype(np.float64)
    cols: dict[str, npt.NDArray[np.float64]] = {}
    want = set(names) | {b for b in LOG_OF if f"log_{b}" in names}

    cols["loaded"] = loaded.astype(np.float64)
    cols["pool_share"] = w / total if total else np.zeros(n)
    cols["tests_passed_share"] = _safe_div(pf @ tw, float(tw.sum())) if m else np.zeros(n)
    cols["distinct_tests_passed_share"] = pf.sum(axis=1) / m if m else np.zeros(n)
    if "rw_passed_share" in want:
        rw = matrix.rank_weights(0.8)
        cols["rw_passed_share"] = _safe_div(pf @ rw, float(rw.sum())) if m else np.zeros(n)
    cols["passes_none"] = (loaded & ~passed.any(axis=1)).astype(np.float64)

    # consensus sets: loaded programs with the same pass pattern
    agreement = np.zeros(n)
    if loaded.any():
        packed = np.packbits(passed, axis=1) if m else np.zeros((n, 1), np.uint8)
        rows = np.flatnonzero(loaded)
        _, inverse = np.unique(packed[rows], axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        set_size = np.bincount(inverse, weights=w[rows])
        agreement[rows] = set_size[inverse]
    cols["agreement_share"] = agreement / total if total else np.zeros(n)

    if want & {"codet_score_rel", "codet_top", "codet_rank", "task_codet_top_share", "codet_pct"}:
        ranking = codet(matrix)
        score, group = _per_program(ranking, n)
        cols["codet_pct"] = _percentile(score, wl)
        best = np.nanmax(score) if ranking.groups else 0.0
        cols["codet_score_rel"] = np.where(np.isnan(score), 0.0, _safe_div(np.nan_to_num(score), best))
        cols["codet_top"] = (group == 0).astype(np.float64)
        cols["codet_rank"] = _rank_feature(group, len(ranking.groups))
        top = float(w[group == 0].sum()) / total if total else 0.0
        cols["task_codet_top_share"] = np.full(n, top)
    if want & {"rw_pct", "rw_score_rel"}:
        score, _ = _per_program(codet_rw(matrix, p=0.8, combine="codet"), n)
        cols["rw_pct"] = _percentile(score, wl)
        best = float(np.nanmax(score)) if np.isfinite(score).any() else 0.0
        cols["rw_score_rel"] = np.where(np.isnan(score), 0.0, _safe_div(np.nan_to_num(score), best))
    if want & {"b4_posterior", "b4_top", "b4_rank", "b4_log_gap", "b4_pct", "b4_gap_per_test", "b4_log_gap_per_test"}:
        ranking = b4(matrix)
        score, group = _per_program(ranking, n)
        gap = np.nanmax(score) - score if ranking.groups else np.full(n, np.nan)
        cols["b4_log_gap"] = np.where(np.isnan(gap), -10.0, -np.log1p(np.nan_to_num(gap)))
        cols["b4_pct"] = _percentile(score, wl)
        per_test = -gap / (m + 1)
        floor = float(np.nanmin(per_test)) if np.isfinite(per_test).any() else 0.0
        cols["b4_gap_per_test"] = np.where(np.isnan(per_test), floor, per_test)
        cols["b4_log_gap_per_test"] = -np.log1p(-cols["b4_gap_per_test"])
        post = np.zeros(n)
        if ranking.groups:
            # normalise over distinct patterns: each consensus set counted once
            sets: dict[bytes, float] = {}
            for i in np.flatnonzero(~np.isnan(score)).tolist():
                sets.setdefault(passed[i].tobytes(), float(score[i]))
            s = np.array(list(sets.values()))
            log_z = float(np.max(s) + math.log(np.exp(s - np.max(s)).sum()))
            ok = ~np.isnan(score)
            post[ok] = np.exp(score[ok] - log_z)
        cols["b4_posterior"] = post
        cols["b4_top"] = (group == 0).astype(np.float64)
        cols["b4_rank"] = _rank_feature(group, len(ranking.groups))

    if want & {"soft_agreement", "passed_test_consensus", "failed_test_consensus", "majority_tests_passed"}:
        if m and n_loaded:
            q = (wl @ pf) / n_loaded  # share of loaded samples passing each test
            # agreement with every loaded sample, test by test: share passing where it passes,
            # share failing where it fails (O(n m), no n x n product)
            same = (pf * q + (1 - pf) * (1 - q)).sum(axis=1) / m
            cols["soft_agreement"] = np.where(loaded, same, 0.0)
            tq = tw * q
            cols["passed_test_consensus"] = _safe_div(pf @ tq, pf @ tw)
            cols["failed_test_consensus"] = np.where(loaded, _safe_div((1 - pf) @ tq, (1 - pf) @ tw), 0.0)
            majority = q > 0.5
            cols["majority_tests_passed"] = (
                pf[:, majority].sum(axis=1) / majority.sum() if majority.any() else np.zeros(n)
            )
        else:
            for k in ("soft_agreement", "passed_test_consensus", "failed_test_consensus", "majority_tests_passed"):
                cols[k] = np.zeros(n)

    if "outputs" in needs:
        codes, errors, timeouts = _output_codes(matrix)
        cols["error_share"] = errors.sum(axis=1) / m if m else np.zeros(n)
        cols["timeout_share"] = timeouts.sum(axis=1) / m if m else np.zeros(n)
        valid = (codes >= 0) & ~errors & ~timeouts  # an output value (the test passed or failed)
        # MBR-exec classes: loaded programs with identical outputs, all-error ones excluded
        behaviour = np.zeros(n)
        usable = loaded & valid.any(axis=1) if m else np.zeros(n, bool)
        if usable.any():
            rows = np.flatnonzero(usable)
            _, inverse = np.unique(codes[rows], axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
            size = np.bincount(inverse, weights=w[rows])
            behaviour[rows] = size[inverse]  # exact output keys, as rerank.methods.mbr_exec
        cols["behaviour_share"] = behaviour / total if total else np.zeros(n)
        cols["mbr_top"] = ((behaviour == behaviour.max()) & usable).astype(np.float64) if usable.any() else np.zeros(n)
        overlap = np.zeros(n)
        if m and n_loaded and valid.any():
            # per (test, output) the samples returning it; one unique over all valid cells
            ii, jj = np.nonzero(valid)
            _, inv = np.unique(codes[ii, jj] * m + jj, return_inverse=True)
            freq = np.bincount(inv, weights=wl[ii])
            np.add.at(overlap, ii, freq[inv] / n_loaded)
            overlap /= m
        cols["functional_overlap"] = overlap

        cols["overlap_pct"] = _percentile(np.where(usable, np.round(overlap, 12), np.nan), wl)
        cols["mbr_pct"] = _percentile(np.where(usable, behaviour, np.nan), wl)
        for rel, src in (("functional_overlap_rel", "functional_overlap"), ("behaviour_share_rel", "behaviour_share")):
            top = float(cols[src].max()) if n else 0.0
            cols[rel] = cols[src] / top if top > 0 else np.zeros(n)
    if "authors" in needs:
        cols |= _sg_features(matrix, pf, wl, n_loaded)
    for b in LOG_OF:
        if f"log_{b}" in want:
            cols[f"log_{b}"] = np.log(np.maximum(cols[b], LOG_FLOOR))
    if "length_rel" in want:
        sizes = np.maximum(np.asarray(matrix.solution_sizes, np.float64), 1.0)
        ref = float(np.median(sizes[loaded])) if loaded.any() else float(np.median(sizes))
        cols["length_rel"] = np.log(sizes / ref)
    if "logprob_rel" in want:
        lp = np.asarray(matrix.solution_logprobs, np.float64)
        cols["logprob_rel"] = lp - float(np.average(lp, weights=w))
    cols["task_log_programs"] = np.full(n, math.log(max(n, 1)))

    return np.column_stack([cols[nm] for nm in names]) if names else np.zeros((n, 0))
