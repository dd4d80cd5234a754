"""The ``openai`` backend: any OpenAI-compatible server (OpenAI, ``vllm serve``, TGI, ...), or
several serving the same model, with retries, backoff and one shared request queue.

``docs/run.md`` (an OpenAI-compatible server; several servers) gives the design: what is
retried and counted, how a failed request moves to another server, why each is answered once.
"""

from __future__ import annotations

import os
import queue
import random
import re
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evaluation.errors import RunFailure, TestgenError
from testgen.backends.base import Backend, Capabilities, Generation, OnResult, Prompt, Sampling, cut_at_stop, json_object_option
from testgen.backends.openai_requests import MalformedAnswer, RequestStats, advice, choices_of, classify, describe

__all__ = ["OpenAIBackend", "OpenAIOptions", "RequestStats", "read_base_urls"]

_CHAT_HINTS = ("gpt-3.5", "gpt-4", "gpt-5", "chat", "instruct", "-it", "o1", "o3", "o4", "claude", "qwen2.5-coder")
_MAX_STOP = 4  # the OpenAI API accepts at most 4 stop sequences; the rest are applied here
_URL_SPLIT = re.compile(r"[,\s]+")


def _check_url(url: str, where: str) -> str:
    if not re.match(r"https?://[^/\s]", url):
        raise ValueError(f"{where}: not an http(s) URL: {url!r}")
    return url


def read_base_urls(base_url: str | None, base_url_file: str | None) -> list[str]:
    """The servers named by ``base_url`` (one URL, or several separated by commas or spaces) and
    ``base_url_file`` (one URL per line; blank lines and ``#`` comments ignored), in that order,
    each once. Raises ``ValueError`` naming the file and line of a bad entry."""
    urls: list[str] = []
    for part in _URL_SPLIT.split(base_url or ""):
        if part:
            urls.append(_check_url(part, "base_url"))
    if base_url_file:
        try:
            lines = Path(base_url_file).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ValueError(f"base_url_file: {base_url_file}: {exc.strerror or exc}") from None
        found = 0
        for lineno, line in enumerate(lines, 1):
            entry = line.split("#", 1)[0].strip()
            if entry:
                urls.append(_check_url(entry, f"base_url_file: {base_url_file}:{lineno}"))
                found += 1
        if not found:
            raise ValueError(f"base_url_file: {base_url_file}: no URL in the file")
    return list(dict.fromkeys(urls))


@dataclass(frozen=True, kw_only=True)
class OpenAIOptions:
    """Options of the ``openai`` backend."""

    base_url: str | None = None
    """Server base URL, e.g. ``http://localhost:8000/v1``, or several separated by commas
    (``--base-url`` repeated); ``None``: ``$OPENAI_BASE_URL`` or OpenAI."""
    base_url_file: str | None = None
    """File of server base URLs, one per line (``#`` comments), added to ``base_url``."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key (unset or empty is fine for local servers)."""
    endpoint: Literal["auto", "chat", "completions"] = "auto"
    """Which endpoint the model is served on; ``auto`` guesses chat from the model name
    (gpt-3.5/4, *chat*, *instruct*, ...), which decides ``--prompt-style auto``."""
    concurrency: int = 8
    """Requests in flight at once, per server."""
    max_retries: int = 8
    """Retries per request on 408/409/429/5xx, timeouts and connection errors (on any server)."""
    timeout: float = 600.0
    """Seconds before a request is abandoned (and retried)."""
    backoff_base: float = 1.0
    """First backoff in seconds; doubles each retry (full jitter)."""
    backoff_max: float = 60.0
    """Longest backoff in seconds."""
    rest_after: int = 3
    """Several servers: failures in a row after which a server is rested."""
    rest_seconds: float = 30.0
    """Several servers: how long a failing server gets no requests."""
    n_per_request: int = 0
    """Samples per request (0: all ``n`` in one request)."""
    batch_hint: int = 1024
    """Prompts per ``generate`` call the pipeline sends (answers are saved as they arrive)."""
    extra_body: str = ""
    """Extra fields of every request's JSON body, a JSON object: a server's own sampling settings
    (llama.cpp's server: ``{"top_k": 0, "min_p": 0, "repeat_penalty": 1.0}`` samples as the
    ``llamacpp`` backend does; vLLM's ``top_k``, ...)."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if self.max_retries < 0 or self.n_per_request < 0 or self.timeout <= 0:
            raise ValueError("max_retries and n_per_request must be >= 0, timeout > 0")
        if self.backoff_base < 0 or self.backoff_max < 0:
            raise ValueError("backoff must be >= 0")
        if self.rest_after < 1 or self.rest_seconds < 0:
            raise ValueError("rest_after must be >= 1, rest_seconds >= 0")
        read_base_urls(self.base_url, self.base_url_file)  # a bad URL or file is refused here
        json_object_option(self.extra_body, "extra_body")  # and a malformed extra_body


@dataclass(kw_only=True, eq=False)
class _Server:
    """One endpoint and its health (guarded by the dispatch's lock)."""

    index: int
    label: str
    client: Any
    failures_in_row: int = 0
    rest_until: float = 0.0


@dataclass(kw_only=True, eq=False)
class _Job:
    """One request: samples ``first .. first + n - 1`` of prompt ``prompt`` (chunk ``chunk``)."""

    prompt: int
    chunk: int
    first: int
    n: int
    attempt: int = 0
    failed_on: set[int] = field(default_factory=set)


class _Retryable(Exception):
    """A failed request worth retrying (429, 5xx, timeout, dropped connection, a malformed answer)."""

    def __init__(self, kind: str, retry_after: float | None, error: Exception) -> None:
        super().__init__(kind)
        self.kind = kind
        self.retry_after = retry_after
        self.error = error


class OpenAIBackend(Backend):
    """One or several OpenAI-compatible HTTP servers."""

    name = "openai"
    Options = OpenAIOptions
    capabilities = Capabilities(needs_model=True, needs_server=True, requires=("openai",), weights="none")
    runtime_options = frozenset(
        {"base_url", "base_url_file", "api_key_env", "concurrency", "max_retries", "timeout", "backoff_base",
         "backoff_max", "rest_after", "rest_seconds", "batch_hint"}
    )

    def __init__(self, *, model: str, options: OpenAIOptions) -> None:
        super().__init__(model=model, options=options)
        self.stats = RequestStats()
        self._servers: list[_Server] | None = None
        self._told: dict[str, float] = {}
        self._told_lock = threading.Lock()
        self._extra_body = json_object_option(options.extra_body, "extra_body") if options.extra_body else None

    def request_record(self) -> dict[str, Any]:
        return self.stats.to_json()

    def request_summary(self) -> str | None:
        return self.stats.summary()

    def tell(self, key: str, message: str, *, every: float = 5.0) -> None:
        """Pass ``message`` to :attr:`notify`, at most once every ``every`` seconds per ``key``."""
        notify = self.notify
        if notify is None:
            return
        now = time.monotonic()
        with self._told_lock:
            if now - self._told.get(key, float("-inf")) < every:
                return
            self._told[key] = now
        notify(message)

    @property
    def is_chat(self) -> bool:
        if self.options.endpoint != "auto":
            return bool(self.options.endpoint == "chat")
        m = self.model.lower()
        return any(h in m for h in _CHAT_HINTS)

    @property
    def batch_hint(self) -> int:
        return int(self.options.batch_hint)

    def servers(self) -> list[_Server]:
        """One client per server (built on first use)."""
        if self._servers is None:
            try:
                import openai
            except ModuleNotFoundError:
                raise TestgenError("the openai backend needs the openai package: pip install 'testgen[openai]'") from None
            key = os.environ.get(self.options.api_key_env) or "EMPTY"
            urls: list[str | None] = [*read_base_urls(self.options.base_url, self.options.base_url_file)]
            urls = urls or [os.environ.get("OPENAI_BASE_URL") or None]  # none given: the client's default
            self._servers = [
                _Server(index=k, label=url or "server",
                        client=openai.OpenAI(base_url=url, api_key=key, max_retries=0, timeout=self.options.timeout))
                for k, url in enumerate(urls)
            ]
        return self._servers

    def close(self) -> None:
        if self._servers is not None:
            for s in self._servers:
                s.client.close()
            self._servers = None

    # one HTTP request, no retries
    def _send(self, server: _Server, prompt: Prompt, sampling: Sampling, n: int, first: int) -> list[Generation]:
        """Samples ``first .. first + n - 1`` (relative to the prompt's offset) in one request;
        raises :class:`_Retryable` for an error worth retrying, ``RunFailure`` for the others."""
        import openai

        common: dict[str, Any] = {
            "model": self.model,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "n": n,
        }
        if sampling.seed is not None:
            # distinct seeds for the chunks of one prompt (and for a resumed run's later samples)
            common["seed"] = sampling.seed + prompt.sample_offset + first
        if sampling.stop:
            common["stop"] = list(sampling.stop[:_MAX_STOP])
        if self._extra_body is not None:
            common["extra_body"] = self._extra_body
        client = server.client
        try:
            if prompt.messages is not None:
                resp = client.chat.completions.create(messages=[m.to_json() for m in prompt.messages], **common)
            else:
                resp = client.completions.create(prompt=prompt.text, **common)
            texts = choices_of(resp, chat=prompt.messages is not None)
        except (openai.APITimeoutError, openai.APIConnectionError, openai.APIStatusError) as exc:
            kind, retry_after = classify(exc)
            if kind is None:
                self.stats.count(None)
                raise RunFailure(f"openai backend: {server.label}: {describe(exc)}{advice(exc)}") from exc
            raise _Retryable(kind, retry_after, exc) from exc
        except (openai.APIResponseValidationError, ValueError) as exc:  # ValueError: JSONDecodeError
            why = MalformedAnswer(f"the answer is not a completion ({type(exc).__name__}: {str(exc)[:120]})")
            raise _Retryable("malformed", None, why) from exc
        except MalformedAnswer as exc:
            raise _Retryable("malformed", None, exc) from exc
        self.stats.count(None)
        self.stats.answered(server.label)
        if len(texts) != n:
            raise RunFailure(
                f"openai backend: asked for n={n} choices, the server returned {len(texts)}"
                " (if it does not support n, use -o n_per_request=1)"
            )
        empty = sum(1 for text, _ in texts if not text)
        if empty:
            with self.stats.lock:
                self.stats.empty_completions += empty
                total = self.stats.empty_completions
            self.tell("empty", f"openai backend: {server.label}: {total:,} empty completion(s) so far (null or "
                               "empty text: no tests in them; kept, and counted in requests.jsonl)")
        usage = None
        if getattr(resp, "usage", None) is not None:
            u = resp.usage
            usage = {
                "prompt_tokens": int(u.prompt_tokens or 0),
                "completion_tokens": int(u.completion_tokens or 0),
                "total_tokens": int(u.total_tokens or 0),
                "choices": n,
            }
        out = []
        for text, reason in texts:
            cut, stopped = cut_at_stop(text or "", sampling.stop)
            out.append(Generation(text=cut, finish_reason="stop" if stopped else reason, usage=usage))
        return out

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after the ``attempt``-th failure (0-based): full jitter, ``Retry-After`` honoured."""
        o: OpenAIOptions = self.options
        delay: float = min(o.backoff_max, o.backoff_base * 2.0**attempt) * random.random()
        if retry_after is not None:
            delay = max(delay, min(retry_after, o.backoff_max))
        return delay

    def generate(
        self, prompts: Sequence[Prompt], sampling: Sampling, *, on_result: OnResult | None = None
    ) -> list[list[Generation]]:
        per = self.options.n_per_request or sampling.n
        starts = list(range(0, sampling.n, per))
        chunks = [min(per, sampling.n - s) for s in starts]
        jobs = [_Job(prompt=i, chunk=c, first=starts[c], n=chunks[c]) for i in range(len(prompts)) for c in range(len(chunks))]
        results: list[list[Generation] | None] = [None] * len(prompts)
        if not jobs:
            return []
        parts: list[list[list[Generation] | None]] = [[None] * len(chunks) for _ in prompts]
        left = [len(chunks)] * len(prompts)
        dispatch = _Dispatch(self, prompts, sampling, jobs)
        dispatch.start()
        failure: BaseException | None = None
        try:
            for job, answer in dispatch.answers():
                if isinstance(answer, BaseException):
                    if failure is None:
                        failure = answer
                        dispatch.stop()  # no new requests; those in flight are still delivered
                    continue
                parts[job.prompt][job.chunk] = answer
                left[job.prompt] -= 1
                if left[job.prompt] == 0:
                    gens = [g for part in parts[job.prompt] for g in (part or [])]
                    results[job.prompt] = gens
                    if on_result is not None:
                        on_result(job.prompt, gens)
        except BaseException:
            # Ctrl-C, or a failure in on_result: no new requests; those in flight are discarded
            dispatch.stop()
            raise
        if failure is not None:
            raise failure
        return [r or [] for r in results]


class _Dispatch:
    """The requests of one ``generate`` call, spread over the servers' worker threads."""

    def __init__(self, backend: OpenAIBackend, prompts: Sequence[Prompt], sampling: Sampling, jobs: list[_Job]) -> None:
        self.backend = backend
        self.prompts = prompts
        self.sampling = sampling
        self.servers = backend.servers()
        self.pending: deque[_Job] = deque(jobs)
        self.total = self.unfinished = len(jobs)
        self.cond = threading.Condition()
        self.stopped = threading.Event()
        self.out: queue.Queue[tuple[_Job, list[Generation] | BaseException]] = queue.Queue()
        per_server = min(backend.options.concurrency, len(jobs))
        self.threads = [
            threading.Thread(target=self._work, args=(s,), name=f"openai-{s.index}-{k}", daemon=True)
            for s in self.servers
            for k in range(per_server)
        ]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def stop(self) -> None:
        self.stopped.set()
        with self.cond:
            self.cond.notify_all()

    def answers(self) -> Iterator[tuple[_Job, list[Generation] | BaseException]]:
        """(job, generations or the exception that ended it) as they come; ends when every job is
        answered, or, after :meth:`stop`, when the requests in flight have come back."""
        received = 0
        while received < self.total:
            try:
                item = self.out.get(timeout=0.1)
            except queue.Empty:
                if self.stopped.is_set() and not any(t.is_alive() for t in self.threads) and self.out.empty():
                    return
                continue
            received += 1
            yield item

    # --- worker side -------------------------------------------------------------------------

    def _usable(self, now: float) -> set[int]:
        return {s.index for s in self.servers if s.rest_until <= now}

    def _take(self, server: _Server) -> _Job | None:
        """The next request for ``server``: the first queued one that has not failed on it (or
        that failed on every usable server); None when there is nothing left to do."""
        with self.cond:
            while True:
                if self.stopped.is_set() or self.unfinished == 0:
                    return None
                now = time.monotonic()
                if server.rest_until <= now and self.pending:
                    usable = self._usable(now)
                    for job in self.pending:
                        if server.index not in job.failed_on or usable <= job.failed_on:
                            self.pending.remove(job)
                            return job
                wait = 0.1 if server.rest_until <= now else min(0.1, server.rest_until - now)
                self.cond.wait(wait)

    def _finish(self, job: _Job, answer: list[Generation] | BaseException) -> None:
        with self.cond:
            self.unfinished -= 1
            if self.unfinished == 0:  # idle workers may go
                self.cond.notify_all()
        self.out.put((job, answer))

    def _work(self, server: _Server) -> None:
        backend = self.backend
        opts = backend.options
        while True:
            job = self._take(server)
            if job is None:
                return
            while True:  # tries of this job on this server (more than one only when no other server can take it)
                try:
                    gens = backend._send(server, self.prompts[job.prompt], self.sampling, job.n, job.first)
                except _Retryable as r:
                    if job.attempt >= opts.max_retries:
                        backend.stats.count(None)
                        self._finish(job, RunFailure(
                            f"openai backend: {server.label}: {describe(r.error)}, still after {opts.max_retries} "
                            f"retries{advice(r.error)}"))
                        break
                    backend.stats.count(r.kind)
                    delay = backend.backoff(job.attempt, r.retry_after)
                    job.attempt += 1
                    backend.tell(r.kind, f"openai backend: {server.label}: {describe(r.error)}; retrying "
                                         f"(try {job.attempt + 1} of {opts.max_retries + 1}, {backend.stats.retries:,} "
                                         f"retries so far) in {delay:.1f} s")
                    with self.cond:
                        server.failures_in_row += 1
                        now = time.monotonic()
                        others = self._usable(now) - {server.index}
                        if others and server.failures_in_row >= opts.rest_after and server.rest_until <= now:
                            server.rest_until = now + opts.rest_seconds
                            backend.stats.rests += 1
                        if others:  # another server takes it (this one backs off before its next request)
                            job.failed_on.add(server.index)
                            self.pending.appendleft(job)
                            backend.stats.handed_over += 1
                            self.cond.notify_all()
                    if self.stopped.wait(delay):
                        return
                    if others:
                        break
                    continue  # no other server can take it: retry here, as with a single server
                except BaseException as exc:  # a non-retryable answer (HTTP 400, wrong n, ...) or a bug
                    self._finish(job, exc)
                    break
                with self.cond:
                    server.failures_in_row = 0
                self._finish(job, gens)
                break
