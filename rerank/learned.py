"""The learned reranker: a small scikit-learn model over :mod:`rerank.features`.

Fitting (the kinds of :data:`ModelKind`), the saved JSON model and the registered reranker
function. A model ranks a task's loaded programs by its score; ground truth enters only through
:class:`TaskVerdicts`, which the feature code never receives. Design: ``docs/rerankers.md``, "Models".
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt

from evaluation.errors import TestgenError
from rerank.features import FEATURE_NAMES, SCORE_FEATURES, MissingFeatureInput, pool_features
from rerank.matrix import TaskMatrix
from rerank.methods import Ranking, rank_groups

__all__ = ["ModelKind", "TaskVerdicts", "LinearModel", "Scorer", "fit", "fit_scorer", "ranking_from_scores",
           "learned", "load_model", "save_model", "default_model_path", "shipped_model_path",
           "SHIPPED_MODELS", "training_fingerprint", "model_shape_warnings", "MODEL_FORMAT"]

ModelKind = Literal["logistic", "pairwise", "listwise", "direct", "boosting"]
"""How a model is fitted (see the module docstring)."""

MODEL_FORMAT = "testgen-rerank-model/1"
"""The ``format`` field of a saved model."""

DEFAULT_C = 0.01
"""Inverse L2 strength of the linear kinds (scikit-learn's ``C``) on standardised features.
Strong: the pools are small (100-odd tasks with something to learn)."""


@dataclass(frozen=True, kw_only=True)
class TaskVerdicts:
    """Ground truth of one task: which distinct programs are correct (a type of its own, apart
    from :class:`~rerank.matrix.TaskMatrix`: only training and scoring code read it)."""

    task_id: str
    """The task (the same as its matrix's)."""
    correct: npt.NDArray[np.bool_]
    """Per distinct solution of the task's matrix, in its order."""


Scorer = Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]]
"""Feature table of one task -> one score per program (higher is better)."""


@dataclass(frozen=True, kw_only=True)
class LinearModel:
    """A saved model: standardisation + a linear score (the linear kinds)."""

    kind: ModelKind
    """How it was fitted."""
    features: tuple[str, ...]
    """Feature columns (names from :data:`rerank.features.FEATURES`), in order."""
    mean: tuple[float, ...]
    """Standardisation: per-feature mean of the training programs."""
    scale: tuple[float, ...]
    """Standardisation: per-feature standard deviation (1 where constant)."""
    coef: tuple[float, ...]
    """Weight of each standardised feature."""
    intercept: float = 0.0
    """Constant term (does not change a ranking)."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Fitting options (``C``, the verdict kind trained on, ...)."""
    training: Mapping[str, Any] = field(default_factory=dict)
    """What it was trained on: data hash, tasks and their fingerprints, counts, inputs."""
    versions: Mapping[str, str] = field(default_factory=dict)
    """Library versions at training time."""
    cv: Mapping[str, Any] | None = None
    """Cross-validated figures of this configuration on its training pool, if run."""

    def score(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Scores of the rows of a feature table in :attr:`features` order."""
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        return np.asarray(z @ np.asarray(self.coef) + self.intercept, np.float64)

    def to_json(self) -> dict[str, Any]:
        """The saved form."""
        return {
            "format": MODEL_FORMAT,
            "kind": self.kind,
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "coef": list(self.coef),
            "intercept": self.intercept,
            "options": dict(self.options),
            "training": dict(self.training),
            "versions": dict(self.versions),
            "cv": self.cv,
        }


def library_versions() -> dict[str, str]:
    """Versions of what a model's numbers depend on."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for dist in ("testgen", "numpy", "scipy", "scikit-learn"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "unknown"
    return out


def training_fingerprint(matrix: TaskMatrix) -> str:
    """A hash of what a task's features are computed from (programs, tests, outcomes)."""
    h = hashlib.sha256()
    h.update(matrix.task_id.encode())
    for key, c in zip(matrix.solution_keys, matrix.solution_counts.tolist()):
        h.update(f"{key}:{c};".encode())
    for key, c in zip(matrix.test_keys, matrix.test_counts.tolist()):
        h.update(f"{key}:{c};".encode())
    h.update(np.packbits(matrix.passed).tobytes())
    h.update(np.packbits(matrix.loaded).tobytes())
    return h.hexdigest()[:16]


def _standardise(x: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    from sklearn.preprocessing import StandardScaler

    sc = StandardScaler().fit(x)
    mean = np.asarray(sc.mean_, np.float64)
    scale = np.asarray(sc.scale_, np.float64)  # scikit-learn sets 1.0 for constant features
    return mean, scale


def _task_rows(
    tables: Sequence[npt.NDArray[np.float64]], matrices: Sequence[TaskMatrix], verdicts: Sequence[TaskVerdicts]
) -> list[tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_], npt.NDArray[np.float64]]]:
    """Per task with loaded programs: (features, correct, occurrence weight) of the loaded ones."""
    out = []
    for x, m, v in zip(tables, matrices, verdicts):
        if v.task_id != m.task_id or v.correct.shape != (m.n_solutions,):
            raise ValueError(f"{m.task_id}: verdicts do not match the matrix")
        rows = np.flatnonzero(m.loaded)
        if rows.size:
            out.append((x[rows], v.correct[rows].astype(bool), m.solution_counts[rows].astype(np.float64)))
    return out


def _pointwise(data: list[tuple[Any, Any, Any]]) -> tuple[Any, Any, Any]:
    x = np.vstack([d[0] for d in data])
    y = np.concatenate([d[1] for d in data])
    # each task weighs 1 in all; within it, programs by occurrence. So the objective is
    # sum over tasks of their loss + |beta|^2 / (2C) for every kind, and C means the same.
    w = np.concatenate([d[2] / d[2].sum() for d in data])
    return x, y, w


def _fit_logistic(data: list[tuple[Any, Any, Any]], c: float) -> tuple[npt.NDArray[np.float64], float]:
    from sklearn.linear_model import LogisticRegression

    x, y, w = _pointwise(data)
    if y.all() or not y.any():
        return np.zeros(x.shape[1]), 0.0
    lr = LogisticRegression(C=c, max_iter=5000).fit(x, y, sample_weight=w)
    return np.asarray(lr.coef_[0], np.float64), float(lr.intercept_[0])


def _fit_pairwise(data: list[tuple[Any, Any, Any]], c: float) -> tuple[npt.NDArray[np.float64], float]:
    from sklearn.linear_model import LogisticRegression

    diffs, weights = [], []
    for x, y, w in data:
        good, bad = np.flatnonzero(y), np.flatnonzero(~y)
        if not good.size or not bad.size:
            continue
        d = (x[good][:, None, :] - x[bad][None, :, :]).reshape(-1, x.shape[1])
        pw = (w[good][:, None] * w[bad][None, :]).reshape(-1)
        diffs += [d, -d]
        weights += [pw / (2 * pw.sum()), pw / (2 * pw.sum())]
    if not diffs:
        return np.zeros(data[0][0].shape[1]), 0.0
    x_all = np.vstack(diffs)
    # each task contributes its pairs both ways: (good - bad, 1) and (bad - good, 0)
    y_all = np.concatenate([np.full(len(d), i % 2 == 0) for i, d in enumerate(diffs)])
    w_all = np.concatenate(weights)
    lr = LogisticRegression(C=c, fit_intercept=False, max_iter=5000)
    lr.fit(x_all, y_all, sample_weight=w_all)
    return np.asarray(lr.coef_[0], np.float64), 0.0


def _fit_listwise(data: list[tuple[Any, Any, Any]], c: float) -> tuple[npt.NDArray[np.float64], float]:
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    useful = [(x, y, np.log(w)) for x, y, w in data if y.any() and not y.all()]
    dim = data[0][0].shape[1]
    if not useful:
        return np.zeros(dim), 0.0
    lam = 1.0 / (c * len(useful))

    def loss(beta: npt.NDArray[np.float64]) -> tuple[float, npt.NDArray[np.float64]]:
        total, grad = 0.0, np.zeros(dim)
        for x, y, logw in useful:
            s = x @ beta + logw  # a pick is by occurrence: weight w, preference exp(score)
            la, lc = logsumexp(s), logsumexp(s[y])
            total -= lc - la
            grad -= np.exp(s[y] - lc) @ x[y] - np.exp(s - la) @ x
        return total / len(useful) + 0.5 * lam * float(beta @ beta), grad / len(useful) + lam * beta

    res = minimize(loss, np.zeros(dim), jac=True, method="L-BFGS-B")
    return np.asarray(res.x, np.float64), 0.0


DIRECT_STEP = 0.05
"""Grid step of the ``direct`` kind's weights (each a multiple of it, summing to 1)."""

DIRECT_MAX_FEATURES = 5
"""The ``direct`` grid has C(1/step + d - 1, d - 1) points: 10,626 for 5 features."""


def _simplex(dim: int, step: float) -> npt.NDArray[np.float64]:
    """Every weight vector with entries in multiples of ``step`` summing to 1, as columns."""
    import itertools

    n = int(round(1 / step))
    pts = [(*c, n - sum(c)) for c in itertools.product(range(n + 1), repeat=dim - 1) if sum(c) <= n]
    return np.asarray(pts, np.float64).T / n


def _contenders(x: npt.NDArray[np.float64], y: npt.NDArray[np.bool_], w: npt.NDArray[np.float64]
                ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
    """The rows that can be in the top tie group for some non-negative weights summing to 1:
    a row below another in *every* feature never is (it is strictly below it whatever the
    weights), so dropping it changes no pick and no tie. Speeds up the grid search."""
    if len(x) < 3:
        return x, y, w
    below = np.any(np.all(x[:, None, :] < x[None, :, :], axis=2), axis=1)
    keep = ~below
    return x[keep], y[keep], w[keep]


def _fit_direct(data: list[tuple[Any, Any, Any]], c: float) -> tuple[npt.NDArray[np.float64], float]:
    """Maximise the training pass@1 itself over non-negative weights on a grid (Metzler & Croft,
    Information Retrieval 2007); every feature oriented "higher is better". Grid points that tie
    (a plateau) are averaged. ``c`` is not used."""
    dim = data[0][0].shape[1]
    if dim > DIRECT_MAX_FEATURES:
        raise TestgenError(f"the 'direct' model searches a grid: at most {DIRECT_MAX_FEATURES} features, got {dim}")
    grid = _simplex(dim, DIRECT_STEP)
    total = np.zeros(grid.shape[1])
    for x_all, y_all, w_all in data:
        if not y_all.any() or y_all.all():
            continue  # nothing to gain or lose: every pick is wrong, or every pick is right
        x, y, w = _contenders(x_all, y_all, w_all)
        s = np.round(x @ grid, 9)  # [programs, grid points]; rounding merges float noise into ties
        top = s == s.max(axis=0)
        total += (top * (w * y)[:, None]).sum(axis=0) / (top * w[:, None]).sum(axis=0)
    best = np.flatnonzero(total >= total.max() - 1e-9)
    return np.asarray(grid[:, best].mean(axis=1), np.float64), 0.0


def fit_scorer(
    tables: Sequence[npt.NDArray[np.float64]],
    matrices: Sequence[TaskMatrix],
    verdicts: Sequence[TaskVerdicts],
    *,
    kind: ModelKind = "direct",
    c: float = DEFAULT_C,
    seed: int = 0,
) -> tuple[Scorer, LinearModel | None]:
    """Fit on feature tables; returns the scorer and, for the linear kinds, the model."""
    data = _task_rows(tables, matrices, verdicts)
    if not data:
        raise TestgenError("no task with a loaded program to train on")
    x_all = np.vstack([d[0] for d in data])
    mean, scale = _standardise(x_all)
    std = [((x - mean) / scale, y, w) for x, y, w in data]
    if kind == "boosting":
        from sklearn.ensemble import HistGradientBoostingClassifier

        x, y, w = _pointwise(std)
        gb = HistGradientBoostingClassifier(max_iter=100, max_depth=2, learning_rate=0.05, min_samples_leaf=100,
                                            l2_regularization=1.0, random_state=seed).fit(x, y, sample_weight=w)
        return (lambda t: np.asarray(gb.decision_function((t - mean) / scale), np.float64)), None
    fitters = {"logistic": _fit_logistic, "pairwise": _fit_pairwise, "listwise": _fit_listwise,
               "direct": _fit_direct}
    if kind not in fitters:
        raise TestgenError(f"unknown model kind {kind!r} (known: {', '.join(get_args(ModelKind))})")
    coef, intercept = fitters[kind](std, c)
    model = LinearModel(kind=kind, features=(), mean=tuple(mean.tolist()), scale=tuple(scale.tolist()),
                        coef=tuple(coef.tolist()), intercept=intercept)
    return model.score, model


def fit(
    matrices: Sequence[TaskMatrix],
    verdicts: Sequence[TaskVerdicts],
    *,
    features: Sequence[str] = SCORE_FEATURES,
    kind: ModelKind = "direct",
    c: float = DEFAULT_C,
    label: str = "",
    inputs: Mapping[str, Any] | None = None,
    shapes: Mapping[str, Any] | None = None,
    source: Sequence[TaskMatrix] | None = None,
) -> LinearModel:
    """Train a savable model on whole pools (every task given is a training task).

    ``matrices`` may hold several pools of the same tasks (subsamples of many shapes, see
    :mod:`rerank.shape_cv`): then ``shapes`` describes them (``{"shapes": [labels], "seeds":
    [...], "range": rerank.shapes.shape_range(pools)}``) and ``source`` is the pool they were
    drawn from (its fingerprints are what ``rerank`` compares to detect in-sample tasks).
    Without ``shapes`` the model records the shape of ``matrices`` as one pool."""
    from rerank.shapes import shape_range

    if kind == "boosting":
        raise TestgenError("a 'boosting' model cannot be saved (no public export); use it under cross-validation")
    tables = [pool_features(m, features) for m in matrices]
    _, model = fit_scorer(tables, matrices, verdicts, kind=kind, c=c)
    assert model is not None
    origin = list(source) if source is not None else list(matrices)
    prints = {m.task_id: training_fingerprint(m) for m in origin}
    shape_info = dict(shapes) if shapes is not None else {"shapes": [], "range": shape_range([origin])}
    data_hash = hashlib.sha256(json.dumps({
        "fingerprints": [training_fingerprint(m) for m in matrices],
        "verdicts": [f"{v.task_id}:{np.packbits(v.correct).tobytes().hex()}" for v in verdicts],
    }).encode()).hexdigest()[:16]
    return LinearModel(
        kind=kind,
        features=tuple(features),
        mean=model.mean,
        scale=model.scale,
        coef=model.coef,
        intercept=model.intercept,
        options={"label": label, **({"step": DIRECT_STEP} if kind == "direct" else {"C": c})},
        training={
            "data_hash": data_hash,
            "tasks": len(prints),
            "pools": len(matrices) // max(len(prints), 1),
            "programs": int(sum(m.n_solutions for m in matrices)),
            "samples": int(sum(int(m.solution_counts.sum()) for m in matrices)),
            "correct_programs": int(sum(int(v.correct.sum()) for v in verdicts)),
            "task_fingerprints": prints,
            "inputs": dict(inputs or {}),
            "shapes": shape_info,
        },
        versions=library_versions(),
    )


def ranking_from_scores(scores: npt.NDArray[np.float64], matrix: TaskMatrix) -> Ranking:
    """Rank the loaded programs by score (equal scores merge into one tie group)."""
    rows = np.flatnonzero(matrix.loaded)
    return rank_groups([(float(scores[i]), [int(i)], [float(matrix.solution_counts[i])]) for i in rows.tolist()])


def save_model(model: LinearModel, path: str | os.PathLike[str]) -> None:
    """Write a model as JSON."""
    Path(path).write_text(json.dumps(model.to_json(), indent=1) + "\n", encoding="utf-8")


def load_model(path: str | os.PathLike[str]) -> LinearModel:
    """Read a model written by :func:`save_model`; errors name the file and the field."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TestgenError(f"{p}:{exc.lineno}: not a model file (invalid JSON: {exc.msg})") from None
    if not isinstance(raw, dict) or raw.get("format") != MODEL_FORMAT:
        raise TestgenError(f"{p}:1: field 'format': expected {MODEL_FORMAT!r} (not a rerank model file)")
    feats = raw.get("features")
    if not isinstance(feats, list) or not all(isinstance(f, str) and f in FEATURE_NAMES for f in feats):
        raise TestgenError(f"{p}:1: field 'features': expected names from rerank.features.FEATURES")
    for name in ("mean", "scale", "coef"):
        v = raw.get(name)
        if not isinstance(v, list) or len(v) != len(feats) or not all(isinstance(a, (int, float)) for a in v):
            raise TestgenError(f"{p}:1: field {name!r}: expected {len(feats)} numbers")
    if raw.get("kind") not in ("logistic", "pairwise", "listwise", "direct"):
        raise TestgenError(f"{p}:1: field 'kind': expected logistic, pairwise, listwise or direct")
    return LinearModel(
        kind=raw["kind"],
        features=tuple(feats),
        mean=tuple(float(a) for a in raw["mean"]),
        scale=tuple(float(a) for a in raw["scale"]),
        coef=tuple(float(a) for a in raw["coef"]),
        intercept=float(raw.get("intercept", 0.0)),
        options=dict(raw.get("options") or {}),
        training=dict(raw.get("training") or {}),
        versions=dict(raw.get("versions") or {}),
        cv=raw.get("cv"),
    )


def model_shape_warnings(model: LinearModel, matrices: Iterable[TaskMatrix]) -> list[str]:
    """Where the pool's shape (samples, test generations, tests per generation per task) is far
    outside the shapes the model was trained on (:func:`rerank.shapes.shape_warnings`); nothing
    for a model that does not record them."""
    from rerank.shapes import shape_warnings

    trained = (model.training.get("shapes") or {}).get("range")
    return shape_warnings(trained, matrices) if isinstance(trained, dict) else []


SHIPPED_MODELS: dict[str, str] = {
    "generators": "generators-humaneval.json",
    "shapes": "codegen16b-humaneval.json",
    "full": "codegen16b-humaneval-full.json",
}
"""The models shipped with the package: ``generators`` (the default: 12 pools of several code
and test generators), ``shapes`` and ``full`` (CodeGen-16B's pool alone) (``docs/rerankers.md``,
"The shipped models")."""


def shipped_model_path(name: str = "shapes") -> Path:
    """Path of a shipped model (:data:`SHIPPED_MODELS`), e.g. for ``rerank --model``."""
    if name not in SHIPPED_MODELS:
        raise TestgenError(f"no shipped model {name!r} (known: {', '.join(SHIPPED_MODELS)})")
    return Path(str(resources.files("rerank") / "models" / SHIPPED_MODELS[name]))


def default_model_path() -> Path:
    """The model ``rerank --method learned`` uses without ``--model`` (the ``generators`` one)."""
    return shipped_model_path("generators")


_LOADED: dict[tuple[str, int], LinearModel] = {}


def _cached_model(path: str | None) -> LinearModel:
    """Each task calls the reranker: read a model file once per (path, modification time)."""
    name = str(path or default_model_path())
    key = (name, Path(name).stat().st_mtime_ns)
    if key not in _LOADED:
        _LOADED[key] = load_model(name)
    return _LOADED[key]


def learned(matrix: TaskMatrix, *, model: str | None = None) -> Ranking:
    """Rank by a trained model (``model``: its JSON file; default: the shipped model)."""
    mdl = _cached_model(model)
    try:
        x = pool_features(matrix, mdl.features)
    except MissingFeatureInput as exc:
        raise TestgenError(f"learned reranker: {exc}") from None
    return ranking_from_scores(mdl.score(x), matrix)
