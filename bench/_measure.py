"""Measurement helpers shared by the benchmarks."""

from __future__ import annotations

import threading


class PeakRss:
    """Samples, in a thread, the summed RSS of this process and all its descendants.

    ``peak`` (bytes) is the largest sum seen; use as a context manager around the work.
    Each sample walks ``/proc`` (psutil builds the whole ppid map: 1.5-5 ms); at 0.1 s that
    was ~2 CPU-s of the measured process over a 65 s executor run (py-spy), so the default is
    0.5 s. The peak is set by the long-lived processes (parent, workers, their templates),
    not by the short-lived children a coarser interval can miss.
    """

    def __init__(self, interval: float = 0.5) -> None:
        import psutil

        self._psutil = psutil
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = self._psutil.Process()
        while not self._stop.is_set():
            total = 0
            try:
                procs = [me, *me.children(recursive=True)]
            except self._psutil.Error:
                procs = [me]
            for p in procs:
                try:
                    total += p.memory_info().rss
                except self._psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
