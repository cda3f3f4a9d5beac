"""The IPython extension: ``%load_ext sandpod`` gives the ``%%sandbox`` magic.

::

    %%sandbox                       # Python, in this session's "python" sandbox
    print(6 * 7)

    %%sandbox --shell               # a shell script, same sandbox
    ls -la && uname -a

    %%sandbox my-box --template python --ttl 3600
    ...                             # the sandbox named my-box: reconnected if it
                                    # exists (e.g. after a kernel restart), else created

    %sandbox                        # this session's sandboxes
    %sandbox delete my-box          # delete one (no name: all of the session's)

A cell without a name runs in one sandbox per template, claimed from the warm pool on
first use and kept for the session. A cell with a name runs in the sandbox of that name:
reconnected with ``Client.get`` if it exists (resumed when suspended), created cold with
that name otherwise. Sandboxes outlive the kernel (that is what makes reconnecting work);
``%sandbox delete`` or their shutdown time ends them.

The output streams into the cell as it comes (stdout and stderr apart), followed by a
status line with the exit code and duration. ``--check`` makes a non-zero exit raise
:class:`CommandFailed` (so a notebook run stops there); ``--out VAR`` keeps the
:class:`CommandResult` in the variable ``VAR``.

IPython is imported only when the extension is loaded, so the package does not need it.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any, NoReturn, TextIO

from ._client import Client, Sandbox
from ._errors import SandboxNotFound
from ._models import CommandResult, Output, Phase

__all__ = [
    "CellOptions",
    "MagicUsageError",
    "SandboxSession",
    "load_ipython_extension",
    "parse_cell_args",
    "parse_line_args",
    "status_line",
    "unload_ipython_extension",
]

DEFAULT_TEMPLATE = "python"


class MagicUsageError(ValueError):
    """Bad arguments to ``%%sandbox`` (shown as IPython's UsageError in a notebook)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise MagicUsageError(f"{self.prog}: {message}\n{self.format_usage().strip()}")

    def print_help(self, file: IO[str] | None = None) -> None:
        """--help: the help comes back in the MagicUsageError of exit() instead."""

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        # after --help: stop without leaving the kernel
        raise MagicUsageError(message or self.format_help())


def _positive_seconds(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text!r}")
    return value or None  # 0: no limit


def _env_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _cell_parser() -> _Parser:
    p = _Parser(
        prog="%%sandbox",
        description="Run the cell in a sandpod sandbox (Python by default).",
        add_help=True,
    )
    p.add_argument(
        "name",
        nargs="?",
        help="the sandbox's name: reconnect to it, or create it with this name "
        "(default: this session's sandbox of the template, claimed from the warm pool)",
    )
    p.add_argument("-t", "--template", default=None, help="template (default: python)")
    p.add_argument("--shell", action="store_true", help="run the cell as a shell script")
    p.add_argument(
        "--python",
        default="python3",
        metavar="CMD",
        help="the interpreter for Python cells (default: python3)",
    )
    p.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=argparse.SUPPRESS,
        metavar="SECONDS",
        help="kill the cell's process after this long (default: the client's, 60 s; 0: none)",
    )
    p.add_argument(
        "--ttl",
        type=_positive_seconds,
        default=None,
        metavar="SECONDS",
        help="shutdown time of a sandbox this cell claims or creates (default: the template's)",
    )
    p.add_argument(
        "-e",
        "--env",
        type=_env_pair,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an environment variable for the cell (repeatable)",
    )
    p.add_argument("--cwd", default=None, help="working directory, relative to the sandbox root")
    p.add_argument(
        "--check", action="store_true", help="raise CommandFailed when the cell exits non-zero"
    )
    p.add_argument("--out", default=None, metavar="VAR", help="store the CommandResult in VAR")
    p.add_argument("-q", "--quiet", action="store_true", help="no status line after the output")
    return p


@dataclass(frozen=True)
class CellOptions:
    """The parsed arguments of one ``%%sandbox`` line."""

    name: str | None = None
    template: str | None = None
    shell: bool = False
    python: str = "python3"
    timeout: float | None = None
    has_timeout: bool = False  # False: the client's default
    ttl: float | None = None
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    check: bool = False
    out: str | None = None
    quiet: bool = False

    @property
    def key(self) -> str:
        """Which of the session's sandboxes the cell runs in."""
        return self.name or f"@{self.template or DEFAULT_TEMPLATE}"

    def command(self) -> list[str]:
        """The argv that runs the cell's source, fed on stdin."""
        if self.shell:
            return ["/bin/sh", "-s"]
        return [*shlex.split(self.python), "-"]


def parse_cell_args(line: str) -> CellOptions:
    """Parses the arguments of ``%%sandbox``; raises :class:`MagicUsageError`."""
    try:
        argv = shlex.split(line)
    except ValueError as err:
        raise MagicUsageError(f"%%sandbox: {err}") from None
    ns = _cell_parser().parse_args(argv)
    if ns.out is not None and not ns.out.isidentifier():
        raise MagicUsageError(f"%%sandbox: --out needs a variable name, got {ns.out!r}")
    if ns.shell and ns.python != "python3":
        raise MagicUsageError("%%sandbox: --shell and --python do not go together")
    if not ns.python.strip():
        raise MagicUsageError("%%sandbox: --python must not be empty")
    return CellOptions(
        name=ns.name,
        template=ns.template,
        shell=ns.shell,
        python=ns.python,
        timeout=getattr(ns, "timeout", None),
        has_timeout=hasattr(ns, "timeout"),
        ttl=ns.ttl,
        env=dict(ns.env),
        cwd=ns.cwd,
        check=ns.check,
        out=ns.out,
        quiet=ns.quiet,
    )


def parse_line_args(line: str) -> tuple[str, list[str]]:
    """``%sandbox [list]`` or ``%sandbox delete [NAME ...]``: (action, names)."""
    try:
        words = shlex.split(line)
    except ValueError as err:
        raise MagicUsageError(f"%sandbox: {err}") from None
    if not words or words == ["list"]:
        return "list", []
    if words[0] == "delete":
        return "delete", words[1:]
    raise MagicUsageError(
        f"%sandbox: unknown action {words[0]!r}; use `%sandbox [list]`, "
        "`%sandbox delete [NAME ...]`, or `%%sandbox` as a cell magic (see %%sandbox?)"
    )


def status_line(name: str, result: CommandResult) -> str:
    """The line shown after a cell's output: the sandbox, the exit code, the duration."""
    took = f"{result.duration:.2f} s"
    if result.timed_out:
        how = f"timed out after {took} (killed)"
    elif result.signal:
        how = f"killed by signal {result.signal} after {took}"
    else:
        how = f"exit code {result.exit_code} in {took}"
    notes = [f"{s} truncated" for s in ("stdout", "stderr") if getattr(result, f"{s}_truncated")]
    tail = f" ({', '.join(notes)})" if notes else ""
    return f"[sandbox {name}] {how}{tail}"


class SandboxSession:
    """The state behind the magic: one client and the session's sandboxes by key."""

    def __init__(self, client_factory: Callable[[], Client] = Client) -> None:
        self._client_factory = client_factory
        self._client: Client | None = None
        self.sandboxes: dict[str, Sandbox] = {}

    @property
    def client(self) -> Client:
        """Made on first use, so ``%env SANDPOD_ADDRESS=...`` before it still counts."""
        if self._client is None:
            self._client = self._client_factory()
        return self._client

    def close(self) -> None:
        """Closes the client; the sandboxes live on."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def sandbox(self, opts: CellOptions) -> tuple[Sandbox, str]:
        """The sandbox a cell runs in, and how it was found ("", "claimed", ...)."""
        sb = self.sandboxes.get(opts.key)
        if sb is not None:
            return sb, ""
        template = opts.template or DEFAULT_TEMPLATE
        if opts.name is None:
            sb = self.client.claim(template, ttl=opts.ttl, on_exit="keep")
            how = "claimed from the warm pool" if sb.warm else "claimed (cold start)"
        else:
            try:
                sb = self.client.get(opts.name, on_exit="keep")
                how = "reconnected"
                if sb.status in (Phase.SUSPENDED, Phase.PAUSED):
                    sb.resume()
                    how = "reconnected and resumed"
            except SandboxNotFound:
                sb = self.client.create(template, name=opts.name, ttl=opts.ttl, on_exit="keep")
                how = "created"
        self.sandboxes[opts.key] = sb
        return sb, how

    def run_cell(
        self,
        opts: CellOptions,
        source: str,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> CommandResult:
        """Runs ``source`` as the options say, streaming its output to stdout/stderr."""
        out = stdout or sys.stdout
        err = stderr or sys.stderr
        sb, how = self.sandbox(opts)
        if how:
            print(f"[sandbox {sb.name}] {how}", file=out, flush=True)

        def forward(chunk: Output) -> None:
            stream = out if chunk.stream == "stdout" else err
            stream.write(chunk.text)
            stream.flush()

        kwargs: dict[str, Any] = {}
        if opts.has_timeout:
            kwargs["timeout"] = opts.timeout
        try:
            result = sb.run(
                opts.command(),
                stdin=source,
                env=opts.env or None,
                cwd=opts.cwd,
                on_output=forward,
                **kwargs,
            )
        except SandboxNotFound:
            # Deleted behind the session's back (shutdown time, another client): forget
            # it, so the next run of the cell gets a fresh one. Nothing was run.
            self.sandboxes.pop(opts.key, None)
            raise
        if not opts.quiet:
            if (result.stdout and not result.stdout.endswith("\n")) or (
                result.stderr and not result.stderr.endswith("\n")
            ):
                print(file=out)
            print(status_line(sb.name, result), file=out if result.ok else err, flush=True)
        return result

    def list_lines(self) -> list[str]:
        """One line per sandbox of the session: key, name, phase (as last reported)."""
        if not self.sandboxes:
            return ["no sandboxes in this session yet: run a %%sandbox cell"]
        lines = []
        for key, sb in self.sandboxes.items():
            label = f"(default for {key[1:]})" if key.startswith("@") else ""
            lines.append(f"{sb.name}  {sb.status}  {label}".rstrip())
        return lines

    def delete(self, names: list[str]) -> list[str]:
        """Deletes the named sandboxes of the session (all when ``names`` is empty)."""
        deleted: list[str] = []
        if names:
            keys = [k for k, sb in self.sandboxes.items() if sb.name in names or k in names]
            known = {self.sandboxes[k].name for k in keys} | set(keys)
            for name in sorted(set(names) - known):  # not the session's: delete it anyway
                self.client.get(name, on_exit="keep").delete()
                deleted.append(name)
        else:
            keys = list(self.sandboxes)
        for key in keys:
            sb = self.sandboxes.pop(key)
            with contextlib.suppress(SandboxNotFound):
                sb.delete()
            deleted.append(sb.name)
        return deleted


_SESSION_ATTR = "_sandpod_session"


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext sandpod``: registers ``%%sandbox`` (cell) and ``%sandbox`` (line)."""
    from IPython.core.error import UsageError

    session = getattr(ipython, _SESSION_ATTR, None)
    if session is None:
        session = SandboxSession()
        setattr(ipython, _SESSION_ATTR, session)

    def sandbox(line: str, cell: str | None = None) -> None:
        try:
            if cell is None:
                action, names = parse_line_args(line)
                if action == "list":
                    print("\n".join(session.list_lines()))
                else:
                    for name in session.delete(names):
                        print(f"[sandbox {name}] deleted")
                return
            opts = parse_cell_args(line)
        except MagicUsageError as err:
            raise UsageError(str(err)) from None
        result = session.run_cell(opts, cell)
        if opts.out:
            ipython.user_ns[opts.out] = result
        if opts.check:
            result.check()

    sandbox.__doc__ = _cell_parser().format_help() + "\n" + (__doc__ or "")
    ipython.register_magic_function(sandbox, magic_kind="line_cell", magic_name="sandbox")


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext sandpod``: closes the client (the sandboxes live on)."""
    session = getattr(ipython, _SESSION_ATTR, None)
    if session is not None:
        session.close()
        delattr(ipython, _SESSION_ATTR)
