"""Where PropertyEval's strategies come from: a snapshot read by path (a directory or its
tarball, ``--propertyeval PATH`` or ``$TESTGEN_PROPERTYEVAL``) or the pinned upstream snapshot,
downloaded into the cache and checked (see :mod:`evaluation.evalplus.propertyeval`).

PropertyEval: Mrigank Pawagi (2025), DOI 10.5281/zenodo.15081893,
https://github.com/mrigankpawagi/PropertyEval. No license file upstream: the files are read where
they are, never copied into this repository, and never imported here (their code runs only in
the sandboxed executor). A snapshot is read into memory without extracting it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import tarfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.errors import TestgenError
from evaluation.executor.engine import EngineChoice
from evaluation.io import cache_dir as default_cache_dir

__all__ = ["PROPERTYEVAL_COMMIT", "PROPERTYEVAL_URL", "PROPERTYEVAL_CONTENT_SHA256", "PROPERTYEVAL_ENV", "SHARED_FILE", "Strategies",
           "content_digest", "load_strategies", "draw_inputs", "DRAWER_SOURCE"]

PROPERTYEVAL_COMMIT = "b2be813dcff867cc350c61b8d3ea57ec088ce1ac"
"""The pinned upstream snapshot (its commit "Update README.md")."""
PROPERTYEVAL_URL = f"https://github.com/mrigankpawagi/PropertyEval/archive/{PROPERTYEVAL_COMMIT}.tar.gz"
"""GitHub's archive of the pinned commit (downloaded when no path is given)."""
PROPERTYEVAL_CONTENT_SHA256 = "fe1c57ecefd979e430648c91c447ec89fca65039c93370d4b99a32c585d4d4f9"
"""sha256 of the files used (see :func:`content_digest`) at :data:`PROPERTYEVAL_COMMIT`. A
download must have exactly these; GitHub's archive bytes (its gzip and directory prefix) are
not pinned, the content is. ``../shared/data/propertyeval_b2be813.tar.gz`` (sha256
``0d753de2...``) holds the same files."""
PROPERTYEVAL_ENV = "TESTGEN_PROPERTYEVAL"
"""Environment variable naming the snapshot (a directory or the tarball)."""
SHARED_FILE = f"propertyeval_{PROPERTYEVAL_COMMIT[:7]}.tar.gz"
"""The snapshot's name in the shared data folder (:mod:`evaluation.data_folder`)."""
_MAX_FILE_BYTES = 1 << 20
"""A strategy or limits file larger than this is refused (a snapshot is read into memory)."""
_STRATEGY_PATH = re.compile(r"^(?:[^/]+/)?tests/(\d+)/strategy\.py$")
_LIMITS_PATH = re.compile(r"^(?:[^/]+/)?limits/limits\.py$")


@dataclass(frozen=True, kw_only=True)
class Strategies:
    """A PropertyEval snapshot, read (not imported: the code runs only in the sandbox)."""

    source: str
    """Where it was read from (directory, tarball, or the cached download)."""
    limits: str
    """Text of ``limits/limits.py``."""
    strategies: Mapping[int, str]
    """HumanEval task number -> text of ``tests/<n>/strategy.py``."""
    content_sha256: str
    """:func:`content_digest` of the files."""

    @property
    def pinned(self) -> bool:
        """Whether these are the files of the pinned snapshot."""
        return self.content_sha256 == PROPERTYEVAL_CONTENT_SHA256


def content_digest(limits: str, strategies: Mapping[int, str]) -> str:
    """sha256 over the files used, in a fixed order (path, NUL, length, NUL, bytes)."""
    h = hashlib.sha256()
    items = [("limits/limits.py", limits)] + [(f"tests/{n}/strategy.py", strategies[n]) for n in sorted(strategies)]
    for path, text in items:
        data = text.encode("utf-8")
        h.update(f"{path}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _from_files(source: str, files: Iterable[tuple[str, Callable[[], bytes], int]]) -> Strategies:
    limits: str | None = None
    strategies: dict[int, str] = {}
    for name, read, size in files:
        m = _STRATEGY_PATH.match(name)
        is_limits = _LIMITS_PATH.match(name) is not None
        if m is None and not is_limits:
            continue
        if size > _MAX_FILE_BYTES:
            raise TestgenError(f"{source}: {name}: {size} bytes, more than a strategy file can be ({_MAX_FILE_BYTES})")
        try:
            text = read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TestgenError(f"{source}: {name}: not UTF-8 text ({exc})") from None
        if is_limits:
            limits = text
        else:
            assert m is not None
            strategies[int(m.group(1))] = text
    if limits is None or not strategies:
        raise TestgenError(f"{source}: not a PropertyEval snapshot (expected limits/limits.py and tests/<n>/strategy.py)")
    return Strategies(source=source, limits=limits, strategies=strategies,
                      content_sha256=content_digest(limits, strategies))


def _read_tarball(path: Path) -> Strategies:
    try:
        with tarfile.open(path, "r:*") as tar:
            members = [m for m in tar.getmembers() if m.isfile()]

            def reader(m: tarfile.TarInfo) -> Callable[[], bytes]:
                def read() -> bytes:
                    fh = tar.extractfile(m)
                    return fh.read() if fh is not None else b""
                return read

            return _from_files(str(path), [(m.name.lstrip("./"), reader(m), m.size) for m in members])
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise TestgenError(f"{path}: not a readable PropertyEval tarball ({exc})") from None


def _read_directory(root: Path) -> Strategies:
    files = []
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        files.append((rel, p.read_bytes, p.stat().st_size))
    return _from_files(str(root), files)


def load_strategies(location: str | os.PathLike[str] | None = None, *, cache_dir: str | os.PathLike[str] | None = None) -> Strategies:
    """Read a PropertyEval snapshot: ``location`` (a directory or a tarball), else
    ``$TESTGEN_PROPERTYEVAL``, else the pinned snapshot in the shared data folder
    (:data:`SHARED_FILE`), else the pinned snapshot downloaded (checked) into the cache;
    refused under ``TESTGEN_OFFLINE=1``."""
    where = location if location is not None else os.environ.get(PROPERTYEVAL_ENV) or None
    if where is not None:
        path = Path(where)
        if path.is_dir():
            return _read_directory(path)
        if path.is_file():
            return _read_tarball(path)
        raise TestgenError(f"{path}: no such PropertyEval snapshot (a directory or a .tar.gz)"
                           + ("" if location is not None else f" (from ${PROPERTYEVAL_ENV})"))
    from evaluation.data_folder import find_in_data_folder

    shared = find_in_data_folder(SHARED_FILE)
    if shared is not None:
        found = _read_tarball(shared[0])
        if found.pinned:
            return found
    cached = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = cached / "propertyeval" / f"PropertyEval-{PROPERTYEVAL_COMMIT[:7]}.tar.gz"
    if target.is_file():
        found = _read_tarball(target)
        if found.pinned:
            return found
    return _download(target)


def _download(target: Path, *, timeout: float = 60.0) -> Strategies:
    import shutil
    import tempfile
    import urllib.error
    import urllib.request

    if os.environ.get("TESTGEN_OFFLINE", "") not in ("", "0"):
        raise TestgenError(f"PropertyEval strategies not found and TESTGEN_OFFLINE is set: pass --propertyeval PATH "
                           f"(a directory or the tarball) or set {PROPERTYEVAL_ENV} (upstream: {PROPERTYEVAL_URL})")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        request = urllib.request.Request(PROPERTYEVAL_URL, headers={"User-Agent": "testgen-propertyeval-download"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response, os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(response, out)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise TestgenError(f"PropertyEval download from {PROPERTYEVAL_URL} failed ({getattr(exc, 'reason', exc)}); "
                               f"pass --propertyeval PATH or set {PROPERTYEVAL_ENV}") from None
        found = _read_tarball(tmp)
        if not found.pinned:
            raise TestgenError(f"{PROPERTYEVAL_URL}: content sha256 {found.content_sha256[:16]}... is not the pinned "
                               f"{PROPERTYEVAL_CONTENT_SHA256[:16]}...; not used")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return Strategies(source=str(target), limits=found.limits, strategies=found.strategies,
                      content_sha256=found.content_sha256)


# ---------------------------------------------------------------------------------------------
# Drawing inputs from the strategies, in the sandbox


_DRAW_FUNCTION = "__testgen_propertyeval_draw__"
DRAWER_SOURCE = f'''


def {_DRAW_FUNCTION}(n):
    """Draw n examples of the module's strategy (PropertyEval's tuples(*strategy)), deterministically;
    returned pickled with the Hypothesis and Python versions that drew them. Hypothesis mixes the
    literals of every loaded module outside the standard library and site-packages into what it
    draws; those modules (the harness's own, when it is installed in place) are out of sys.modules
    while it draws, so that the inputs depend on the strategy alone."""
    import os
    import pickle
    import sys
    import sysconfig
    import hypothesis
    from hypothesis import HealthCheck, Phase, given, seed, settings, strategies

    parts = strategy if isinstance(strategy, tuple) else (strategy,)
    drawn = []

    @seed(0)
    @settings(max_examples=n, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    @given(strategies.tuples(*parts))
    def collect(args):
        drawn.append(args)

    paths = sysconfig.get_paths()
    roots = tuple(os.path.join(os.path.realpath(paths[k]), "") for k in ("stdlib", "platstdlib", "purelib", "platlib"))
    local = {{name: module for name, module in list(sys.modules.items())
             if isinstance(getattr(module, "__file__", None), str)
             and not os.path.realpath(module.__file__).startswith(roots)}}
    for name in local:
        del sys.modules[name]
    try:
        collect()
    finally:
        sys.modules.update(local)
    return pickle.dumps((hypothesis.__version__, "%d.%d" % sys.version_info[:2], drawn), 4)
'''
"""The drawing function the sandboxed program ends with (its text is part of the draws' key in the store)."""


def _draw_program(limits: str, strategy: str) -> str:
    """The sandboxed program: ``limits.limits`` made importable from its text, the strategy
    module's text as it is, then the drawing function."""
    preamble = (
        "import sys as __testgen_sys, types as __testgen_types\n"
        "__testgen_pkg = __testgen_types.ModuleType('limits')\n"
        "__testgen_pkg.__path__ = []\n"
        "__testgen_mod = __testgen_types.ModuleType('limits.limits')\n"
        f"exec(compile({limits!r}, 'limits/limits.py', 'exec'), __testgen_mod.__dict__)\n"
        "__testgen_pkg.limits = __testgen_mod\n"
        "__testgen_sys.modules['limits'] = __testgen_pkg\n"
        "__testgen_sys.modules['limits.limits'] = __testgen_mod\n"
    )
    return preamble + strategy + DRAWER_SOURCE


def draw_inputs(strat: Strategies, tasks: Mapping[str, int], *, examples: int, workers: int | None, executor: Any,
                draw_seconds: float, engine: EngineChoice | None = None, hypothesis: str | None = None
                ) -> Iterator[tuple[str, tuple[list[Any], int] | str]]:
    """Draw ``examples`` inputs for each task (``task_id -> PropertyEval's task number``), one
    sandboxed job per task, as they finish: ``(task_id, (distinct inputs, number drawn))``, or
    ``(task_id, why)`` where its strategy does not load or fails (at most 300 characters).

    The jobs run on ``executor`` when given, else on ``engine`` (:func:`evaluation.executor.engine.run_jobs`:
    this machine's pool of ``workers``, or a Ray cluster), as many tasks at once as workers, each
    child forked from its worker's drawing template (Hypothesis imported once per worker,
    :mod:`evaluation.executor.template`). The
    drawn values do not depend on where they were drawn, provided the child's Hypothesis and
    Python are the ones of this process (``hypothesis``, the installed version: a child that
    reports another is refused, since its draws would differ)."""
    import sys

    from evaluation.evalplus.truth import _load_output
    from evaluation.executor import CallTest, Job, Limits
    from evaluation.executor.engine import run_jobs
    from evaluation.records import Outcome

    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    draw_limits = Limits(timeout=draw_seconds, load_timeout=min(60.0, draw_seconds), memory_mb=4096,
                         value_bytes=64 * 1024 * 1024)
    jobs = [Job(program=_draw_program(strat.limits, strat.strategies[number]),
                tests=(CallTest(entry_point=_DRAW_FUNCTION, args=(examples,)),), limits=draw_limits,
                want_values=True, dedup="exact", tag=task_id) for task_id, number in tasks.items()]
    if not jobs:
        return
    results = executor.run(jobs) if executor is not None else run_jobs(jobs, engine=engine, workers=workers)
    for res in results:
        r = res.results[0]
        why = ""
        if res.load_error:
            why = f"strategy does not load: {res.load_error}"
        elif r.outcome is not Outcome.PASSED:
            why = f"drawing failed: {r.outcome.value}: {r.detail}"
        else:
            try:
                got = _load_output(r.value)
                if not (isinstance(got, tuple) and len(got) == 3 and isinstance(got[2], list)):
                    raise ValueError("not (versions, a list of argument tuples)")
                drew_with, python, values = got
                if not all(isinstance(v, tuple) for v in values):
                    raise ValueError("not a list of argument tuples")
            except ValueError as exc:
                why = f"drawing failed: {exc}"
            else:
                if (hypothesis is not None and drew_with != hypothesis) or python != here:
                    raise TestgenError(f"{res.tag}: PropertyEval's inputs were drawn with Hypothesis {drew_with} on "
                                       f"Python {python}, this machine has {hypothesis} on Python {here}: their "
                                       "draws differ (install the same versions where the executor runs)")
        if why:
            yield res.tag, why[:300]
            continue
        seen: set[bytes] = set()
        distinct: list[Any] = []
        for v in values:
            blob = pickle.dumps(v, 4)
            if blob not in seen:
                seen.add(blob)
                distinct.append(v)
        yield res.tag, (distinct, len(values))
