"""The ``openai`` backend: any OpenAI-compatible server (OpenAI, vLLM's ``vllm serve``, TGI, ...).

Chat prompts go to ``/chat/completions``, completion prompts to ``/completions``. Requests run
in a thread pool (``concurrency``); each prompt's ``n`` samples are asked for in one request
(``n_per_request`` splits them for servers that cap ``n``). The openai client's own retries are
switched off: this backend retries 408/409/429/5xx responses, timeouts and connection errors
itself, with exponential backoff and full jitter (honouring ``Retry-After``), and counts them
in :attr:`OpenAIBackend.stats`. Answers are handed to the pipeline as each prompt completes, so
a kill loses only the requests in flight; a request that still fails after ``max_retries``
stops the run (after the requests in flight have been delivered) with the server's message.

The API key is read from the environment variable named by ``api_key_env`` (default
``OPENAI_API_KEY``); it may be unset or empty for a local server.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Literal

from evaluation.errors import RunFailure, TestgenError
from testgen.backends.base import Backend, Generation, OnResult, Prompt, Sampling, cut_at_stop

__all__ = ["OpenAIBackend", "OpenAIOptions", "RequestStats"]

_CHAT_HINTS = ("gpt-3.5", "gpt-4", "gpt-5", "chat", "instruct", "-it", "o1", "o3", "o4", "claude", "qwen2.5-coder")
_MAX_STOP = 4  # the OpenAI API accepts at most 4 stop sequences; the rest are applied here


@dataclass(frozen=True, kw_only=True)
class OpenAIOptions:
    """Options of the ``openai`` backend."""

    base_url: str | None = None
    """Server base URL, e.g. ``http://localhost:8000/v1`` (``None``: ``$OPENAI_BASE_URL`` or OpenAI)."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key (unset or empty is fine for local servers)."""
    endpoint: Literal["auto", "chat", "completions"] = "auto"
    """Which endpoint the model is served on; ``auto`` guesses chat from the model name
    (gpt-3.5/4, *chat*, *instruct*, ...), which decides ``--prompt-style auto``."""
    concurrency: int = 8
    """Requests in flight at once."""
    max_retries: int = 8
    """Retries per request on 408/409/429/5xx, timeouts and connection errors."""
    timeout: float = 600.0
    """Seconds before a request is abandoned (and retried)."""
    backoff_base: float = 1.0
    """First backoff in seconds; doubles each retry (full jitter)."""
    backoff_max: float = 60.0
    """Longest backoff in seconds."""
    n_per_request: int = 0
    """Samples per request (0: all ``n`` in one request)."""
    batch_hint: int = 1024
    """Prompts per ``generate`` call the pipeline sends (answers are saved as they arrive)."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if self.max_retries < 0 or self.n_per_request < 0 or self.timeout <= 0:
            raise ValueError("max_retries and n_per_request must be >= 0, timeout > 0")
        if self.backoff_base < 0 or self.backoff_max < 0:
            raise ValueError("backoff must be >= 0")


@dataclass(kw_only=True)
class RequestStats:
    """What the backend did (not frozen: updated as requests run)."""

    requests: int = 0
    """HTTP requests sent (including retries)."""
    retries: int = 0
    """Requests that were retried."""
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    """Retried errors by kind (``"429"``, ``"500"``, ``"timeout"``, ``"connection"``)."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, kind: str | None) -> None:
        with self.lock:
            self.requests += 1
            if kind is not None:
                self.retries += 1
                self.errors_by_kind[kind] = self.errors_by_kind.get(kind, 0) + 1


class OpenAIBackend(Backend):
    """An OpenAI-compatible HTTP server."""

    name = "openai"
    Options = OpenAIOptions
    runtime_options = frozenset(
        {"base_url", "api_key_env", "concurrency", "max_retries", "timeout", "backoff_base", "backoff_max", "batch_hint"}
    )

    def __init__(self, *, model: str, options: OpenAIOptions) -> None:
        super().__init__(model=model, options=options)
        self.stats = RequestStats()
        self._client: Any = None

    @property
    def is_chat(self) -> bool:
        if self.options.endpoint != "auto":
            return bool(self.options.endpoint == "chat")
        m = self.model.lower()
        return any(h in m for h in _CHAT_HINTS)

    @property
    def batch_hint(self) -> int:
        return int(self.options.batch_hint)

    def client(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ModuleNotFoundError:
                raise TestgenError("the openai backend needs the openai package: pip install 'testgen[openai]'") from None
            self._client = openai.OpenAI(
                base_url=self.options.base_url or os.environ.get("OPENAI_BASE_URL") or None,
                api_key=os.environ.get(self.options.api_key_env) or "EMPTY",
                max_retries=0,
                timeout=self.options.timeout,
            )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # one request, with our own retries
    def _request(self, prompt: Prompt, sampling: Sampling, n: int, first: int = 0) -> list[Generation]:
        """Samples ``first .. first + n - 1`` (relative to the prompt's offset) in one request."""
        import openai

        client = self.client()
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
        attempt = 0
        while True:
            try:
                if prompt.messages is not None:
                    resp = client.chat.completions.create(messages=[m.to_json() for m in prompt.messages], **common)
                    texts = [(c.message.content or "", c.finish_reason) for c in resp.choices]
                else:
                    resp = client.completions.create(prompt=prompt.text, **common)
                    texts = [(c.text or "", c.finish_reason) for c in sorted(resp.choices, key=lambda c: c.index)]
                self.stats.count(None)
                break
            except (openai.APITimeoutError, openai.APIConnectionError, openai.APIStatusError) as exc:
                kind, retry_after = _classify(exc)
                if kind is None or attempt >= self.options.max_retries:
                    self.stats.count(None)
                    raise RunFailure(f"openai backend: {self.options.base_url or 'server'}: {_describe(exc)}") from exc
                self.stats.count(kind)
                delay = min(self.options.backoff_max, self.options.backoff_base * (2**attempt)) * random.random()
                if retry_after is not None:
                    delay = max(delay, min(retry_after, self.options.backoff_max))
                time.sleep(delay)
                attempt += 1
        if len(texts) != n:
            raise RunFailure(
                f"openai backend: asked for n={n} choices, the server returned {len(texts)}"
                " (if it does not support n, use -o n_per_request=1)"
            )
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
            cut, stopped = cut_at_stop(text, sampling.stop)
            out.append(Generation(text=cut, finish_reason="stop" if stopped else reason, usage=usage))
        return out

    def generate(
        self, prompts: Sequence[Prompt], sampling: Sampling, *, on_result: OnResult | None = None
    ) -> list[list[Generation]]:
        per = self.options.n_per_request or sampling.n
        starts = list(range(0, sampling.n, per))
        chunks = [min(per, sampling.n - s) for s in starts]
        results: list[list[list[Generation]] | None] = [None] * len(prompts)
        parts: list[list[list[Generation] | None]] = [[None] * len(chunks) for _ in prompts]
        left = [len(chunks)] * len(prompts)
        with ThreadPoolExecutor(max_workers=self.options.concurrency, thread_name_prefix="openai") as pool:
            futures: dict[Future[list[Generation]], tuple[int, int]] = {}
            for i, prompt in enumerate(prompts):
                for c, k in enumerate(chunks):
                    futures[pool.submit(self._request, prompt, sampling, k, starts[c])] = (i, c)
            pending = set(futures)
            try:
                self._collect(futures, pending, parts, left, results, on_result)
            except BaseException:
                # Ctrl-C, or a failure in on_result: drop the queued requests instead of
                # waiting for all of them (those in flight finish and are discarded)
                for p in pending:
                    p.cancel()
                raise
        return [r[0] if r else [] for r in results]

    @staticmethod
    def _collect(
        futures: dict[Future[list[Generation]], tuple[int, int]],
        pending: set[Future[list[Generation]]],
        parts: list[list[list[Generation] | None]],
        left: list[int],
        results: list[list[list[Generation]] | None],
        on_result: OnResult | None,
    ) -> None:
        failure: BaseException | None = None
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                i, c = futures[fut]
                if fut.cancelled():
                    continue
                exc = fut.exception()
                if exc is not None:
                    if failure is None:
                        failure = exc
                        for p in pending:
                            p.cancel()
                    continue
                parts[i][c] = fut.result()
                left[i] -= 1
                if left[i] == 0:
                    gens = [g for part in parts[i] for g in (part or [])]
                    results[i] = [gens]
                    if on_result is not None:
                        on_result(i, gens)
        if failure is not None:
            raise failure


def _classify(exc: Exception) -> tuple[str | None, float | None]:
    """(retry kind or None when not retryable, Retry-After seconds)."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "timeout", None
    if isinstance(exc, openai.APIConnectionError):
        return "connection", None
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retry_after = None
        try:
            header = exc.response.headers.get("retry-after")
            retry_after = float(header) if header is not None else None
        except (AttributeError, ValueError):
            retry_after = None
        if status in (408, 409, 429) or status >= 500:
            return str(status), retry_after
    return None, None


def _describe(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    msg = getattr(exc, "message", None) or str(exc)
    return f"HTTP {status}: {msg}" if status else msg
