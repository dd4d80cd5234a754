"""What the ``openai`` backend counts and says of its requests (:class:`RequestStats`), reading an
answer's choices (:class:`MalformedAnswer` for one that is not a completion), and the advice that
ends the message of a request that failed for good; kept apart from the requests' dispatch.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RequestStats", "MalformedAnswer", "choices_of", "advice", "classify", "describe"]


@dataclass(kw_only=True)
class RequestStats:
    """What the backend did (not frozen: updated as requests run)."""

    requests: int = 0
    """HTTP requests sent (including retries)."""
    retries: int = 0
    """Requests that were retried."""
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    """Retried errors by kind (``"429"``, ``"500"``, ``"timeout"``, ``"connection"``,
    ``"malformed"``)."""
    empty_completions: int = 0
    """Choices whose text was null or empty (kept: they hold no tests)."""
    answered_by: dict[str, int] = field(default_factory=dict)
    """Answered requests per server (base URL; ``"server"`` for the default one)."""
    handed_over: int = 0
    """Failed requests sent back to the queue for another server."""
    rests: int = 0
    """Times a server was rested after failing ``rest_after`` times in a row."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, kind: str | None) -> None:
        with self.lock:
            self.requests += 1
            if kind is not None:
                self.retries += 1
                self.errors_by_kind[kind] = self.errors_by_kind.get(kind, 0) + 1

    def answered(self, server: str) -> None:
        with self.lock:
            self.answered_by[server] = self.answered_by.get(server, 0) + 1

    def to_json(self) -> dict[str, Any]:
        """The counts, as recorded in a run directory's ``requests.jsonl``."""
        with self.lock:
            return {"requests": self.requests, "retries": self.retries, "errors_by_kind": dict(self.errors_by_kind),
                    "empty_completions": self.empty_completions, "answered_by": dict(self.answered_by),
                    "handed_over": self.handed_over, "rests": self.rests}

    def summary(self) -> str | None:
        """One line: requests, retries by kind, empty completions (``None`` when there were
        neither retries nor empty completions: nothing worth a line)."""
        with self.lock:
            if not self.retries and not self.empty_completions:
                return None
            line = f"openai backend: {self.requests:,} requests"
            if self.retries:
                kinds = ", ".join(f"{k}: {v}" for k, v in sorted(self.errors_by_kind.items()))
                line += f", {self.retries:,} retried ({kinds})"
            if self.empty_completions:
                line += f", {self.empty_completions:,} empty completions (no tests in them)"
            return line


class MalformedAnswer(Exception):
    """A status-200 answer that is not a completion (HTML, a body cut short, no ``choices``)."""


def choices_of(resp: Any, *, chat: bool) -> list[tuple[str | None, str | None]]:
    """(text or None, finish reason) of each choice, in index order; raises :class:`MalformedAnswer`
    for an answer that is not a completion (a proxy's HTML page parses as a string)."""
    choices = getattr(resp, "choices", None)
    if not isinstance(choices, list):
        what = "an HTML page" if isinstance(resp, str) and "<html" in resp[:500].lower() else (
            f"{type(resp).__name__} without a 'choices' list")
        raise MalformedAnswer(f"the answer is not a completion: {what}")
    out: list[tuple[str | None, str | None]] = []
    for c in choices if chat else sorted(choices, key=lambda c: getattr(c, "index", 0) or 0):
        text = getattr(getattr(c, "message", None), "content", None) if chat else getattr(c, "text", None)
        if text is not None and not isinstance(text, str):
            raise MalformedAnswer(f"the answer is not a completion: a choice's text is {type(text).__name__}")
        out.append((text, getattr(c, "finish_reason", None)))
    return out


def advice(exc: Exception) -> str:
    """What to do about a request that failed for good, as the end of its one-line message."""
    import openai

    status = getattr(exc, "status_code", None)
    if isinstance(exc, MalformedAnswer):
        tip = "is --base-url the server's API (ending in /v1), not a web page or a proxy? see the server's log"
    elif isinstance(exc, openai.APITimeoutError):
        tip = "a slow server: raise -o timeout=SECONDS or lower -o concurrency"
    elif isinstance(exc, openai.APIConnectionError):
        tip = "is the server running at --base-url?"
    elif status in (401, 403):
        tip = "check the API key (-o api_key_env names its variable, default OPENAI_API_KEY)"
    elif status == 404:
        tip = "check --model (the server's model id) and --base-url (ending in /v1)"
    elif status == 429:
        tip = "rate limited: lower -o concurrency or raise -o max_retries"
    elif status is not None and status >= 500:
        tip = "the server fails: see its log, or raise -o max_retries"
    elif status in (400, 422):
        tip = "the server refused the request: check --max-tokens against its context length, and -o n_per_request=1"
    else:
        return ""
    return f" ({tip}; answers so far are kept: the same command resumes)"


def classify(exc: Exception) -> tuple[str | None, float | None]:
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


def describe(exc: Exception) -> str:
    """An error as one line: ``HTTP <status>: <message>`` where the server answered."""
    status = getattr(exc, "status_code", None)
    msg = getattr(exc, "message", None) or str(exc)
    return f"HTTP {status}: {msg}" if status else msg
