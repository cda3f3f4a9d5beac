"""Results of ``run_code``: :class:`Execution`, :class:`Result`, :class:`ExecutionError`,
:class:`CodeContextInfo`, and the decoding of a RunCode stream (no I/O here).

``Result.data`` maps MIME types to values as Jupyter does, with one difference: binary
images (``image/png``, ``image/jpeg``) are the raw ``bytes``, not base64 text.
``_repr_mimebundle_`` encodes them in base64 for Jupyter, so a result renders natively.
``application/json`` is the parsed value; every other type is ``str``.
"""

from __future__ import annotations

import base64
import codecs
import datetime as _dt
import html
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._errors import SandpodError
from .v1 import code_pb2

__all__ = [
    "CodeContextInfo",
    "CodeContextLost",
    "CodeRunError",
    "Execution",
    "ExecutionDecoder",
    "ExecutionError",
    "Result",
]

#: MIME types whose values are bytes (base64 in a Jupyter bundle).
BINARY_MIMES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def _decode_value(mime: str, raw: bytes) -> Any:
    if mime in BINARY_MIMES:
        return raw
    text = raw.decode("utf-8", "replace")
    if mime == "application/json":
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


@dataclass(frozen=True)
class Result:
    """One rich result: a MIME bundle (``data``), as Jupyter shows it.

    ``is_main_result`` is true for the value of the cell's last expression (``Out[n]``)
    and false for ``display()`` calls and matplotlib figures. ``truncated`` says some
    representations were dropped for size (2 MiB per result, 16 MiB per cell).
    """

    data: Mapping[str, Any]
    is_main_result: bool = False
    truncated: bool = False

    @classmethod
    def from_pb(cls, pb: code_pb2.CodeResult) -> Result:
        data = {mime: _decode_value(mime, raw) for mime, raw in pb.data.items()}
        return cls(data=data, is_main_result=pb.is_main_result, truncated=pb.truncated)

    @property
    def formats(self) -> list[str]:
        """The MIME types present."""
        return sorted(self.data)

    @property
    def text(self) -> str | None:
        """``text/plain``: the ``repr`` of the value."""
        return self.data.get("text/plain")

    @property
    def html(self) -> str | None:
        return self.data.get("text/html")

    @property
    def markdown(self) -> str | None:
        return self.data.get("text/markdown")

    @property
    def svg(self) -> str | None:
        return self.data.get("image/svg+xml")

    @property
    def png(self) -> bytes | None:
        """``image/png`` as raw PNG bytes (a matplotlib figure, ``_repr_png_``)."""
        return self.data.get("image/png")

    @property
    def jpeg(self) -> bytes | None:
        return self.data.get("image/jpeg")

    @property
    def json(self) -> Any:
        """``application/json``, parsed."""
        return self.data.get("application/json")

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> dict[str, Any]:  # Jupyter's protocol
        out: dict[str, Any] = {}
        for mime, value in self.data.items():
            if (include and mime not in include) or (exclude and mime in exclude):
                continue
            if isinstance(value, bytes):
                value = base64.b64encode(value).decode()
            out[mime] = value
        return out

    def __repr__(self) -> str:
        kind = "main" if self.is_main_result else "display"
        text = self.text if self.text is not None else ""
        if len(text) > 60:
            text = text[:57] + "..."
        return f"Result({kind}, formats={self.formats}, text={text!r})"


@dataclass(frozen=True)
class ExecutionError:
    """The exception a cell raised: ``name`` (its class, e.g. ``ZeroDivisionError``),
    ``value`` (its message) and the formatted ``traceback``. ``KeyboardInterrupt`` after
    a timeout; ``ContextDied`` when the interpreter exited or was killed."""

    name: str
    value: str
    traceback: str

    def __str__(self) -> str:
        return f"{self.name}: {self.value}"


@dataclass(frozen=True)
class CodeContextInfo:
    """A code context: a long-lived interpreter in the sandbox."""

    id: str
    language: str
    cwd: str
    create_time: _dt.datetime | None
    execution_count: int
    busy: bool

    @classmethod
    def from_pb(cls, pb: code_pb2.CodeContext) -> CodeContextInfo:
        created = None
        if pb.HasField("create_time"):
            created = pb.create_time.ToDatetime(tzinfo=_dt.timezone.utc)
        return cls(
            id=pb.id,
            language=pb.language,
            cwd=pb.cwd,
            create_time=created,
            execution_count=pb.execution_count,
            busy=pb.busy,
        )


@dataclass
class Execution:
    """What ``run_code`` returns: output, results and error of one cell.

    ``text`` is the ``text/plain`` of the cell's last expression (``None`` if the cell
    ends with a statement or the value is ``None``). ``raise_for_error()`` raises
    :class:`sandpod.CodeRunError` (or :class:`sandpod.CodeContextLost`) if the cell
    failed, and returns the execution otherwise.
    """

    stdout: str = ""
    stderr: str = ""
    results: list[Result] = field(default_factory=list)
    error: ExecutionError | None = None
    context_id: str = ""
    execution_count: int = 0
    duration: float = 0.0
    timed_out: bool = False
    context_lost: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False

    @property
    def text(self) -> str | None:
        for r in self.results:
            if r.is_main_result:
                return r.text
        return None

    @property
    def ok(self) -> bool:
        return self.error is None

    def raise_for_error(self) -> Execution:
        if self.error is not None:
            cls = CodeContextLost if self.context_lost else CodeRunError
            raise cls(self)
        return self

    def __repr__(self) -> str:
        parts = [f"context={self.context_id!r}", f"count={self.execution_count}"]
        if self.text is not None:
            text = self.text if len(self.text) <= 60 else self.text[:57] + "..."
            parts.append(f"text={text!r}")
        if self.results:
            parts.append(f"results={len(self.results)}")
        if self.error is not None:
            parts.append(f"error={self.error.name}")
        if self.timed_out:
            parts.append("timed_out")
        if self.context_lost:
            parts.append("context_lost")
        return f"Execution({', '.join(parts)})"

    def _repr_html_(self) -> str:
        out = []
        if self.stdout:
            out.append(f"<pre>{html.escape(self.stdout)}</pre>")
        if self.stderr:
            out.append(f'<pre style="color:#b00">{html.escape(self.stderr)}</pre>')
        for r in self.results:
            if r.html is not None:
                out.append(r.html)
            elif r.png is not None:
                b64 = base64.b64encode(r.png).decode()
                out.append(f'<img src="data:image/png;base64,{b64}"/>')
            elif r.svg is not None:
                out.append(r.svg)
            elif r.text is not None:
                out.append(f"<pre>{html.escape(r.text)}</pre>")
        if self.error is not None:
            tb = self.error.traceback or str(self.error)
            out.append(f'<pre style="color:#b00">{html.escape(tb)}</pre>')
        return "\n".join(out) or "<pre>(no output)</pre>"


class ExecutionDecoder:
    """Builds an :class:`Execution` from RunCode responses, calling the callbacks."""

    def __init__(
        self,
        on_stdout: Callable[[str], object] | None = None,
        on_stderr: Callable[[str], object] | None = None,
        on_result: Callable[[Result], object] | None = None,
    ) -> None:
        self.execution = Execution()
        self._out: list[str] = []
        self._err: list[str] = []
        # Incremental decoders: a UTF-8 character split across chunks stays whole.
        self._dec = {
            "stdout": codecs.getincrementaldecoder("utf-8")("replace"),
            "stderr": codecs.getincrementaldecoder("utf-8")("replace"),
        }
        self._on = {"stdout": on_stdout, "stderr": on_stderr}
        self._on_result = on_result
        self.done = False

    def feed(self, resp: code_pb2.RunCodeResponse) -> bool:
        """Takes one response; returns True once the last (done) has come."""
        kind = resp.WhichOneof("msg")
        if kind in ("stdout", "stderr"):
            text = self._dec[kind].decode(getattr(resp, kind))
            (self._out if kind == "stdout" else self._err).append(text)
            cb = self._on[kind]
            if cb is not None and text:
                cb(text)
        elif kind == "result":
            r = Result.from_pb(resp.result)
            self.execution.results.append(r)
            if self._on_result is not None:
                self._on_result(r)
        elif kind == "error":
            e = resp.error
            self.execution.error = ExecutionError(e.name, e.value, e.traceback)
        elif kind == "done":
            d = resp.done
            ex = self.execution
            ex.context_id = d.context_id
            ex.execution_count = d.execution_count
            ex.duration = d.duration.seconds + d.duration.nanos / 1e9
            ex.timed_out = d.timed_out
            ex.context_lost = d.context_lost
            ex.stdout_truncated = d.stdout_truncated
            ex.stderr_truncated = d.stderr_truncated
            self._out.append(self._dec["stdout"].decode(b"", final=True))
            self._err.append(self._dec["stderr"].decode(b"", final=True))
            ex.stdout = "".join(self._out)
            ex.stderr = "".join(self._err)
            self.done = True
        return self.done


class CodeRunError(SandpodError):
    """Raised by ``Execution.raise_for_error()`` when the cell raised.

    Attributes:
        execution: the whole :class:`Execution` (output, results, error).
        name, value, traceback: the cell's exception (``execution.error``).
    """

    def __init__(self, execution: Execution) -> None:
        err = execution.error
        assert err is not None
        self.execution = execution
        self.name = err.name
        self.value = err.value
        self.traceback = err.traceback
        text = f"{err.name}: {err.value}"
        if err.traceback:
            text = f"{text}\n{err.traceback.rstrip()}"
        super().__init__(text)


class CodeContextLost(CodeRunError):
    """The cell's interpreter exited or was killed (``os._exit``, a crash, running out
    of memory, or a timeout it did not stop for): its state is gone. A new context can be
    made; the default one is made again by the next ``run_code`` without a context."""
