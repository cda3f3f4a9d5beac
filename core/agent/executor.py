# sandpod code executor: one long-lived interpreter of a code context.
#
# The agent runs it as `python3 -c <this file>` as the sandbox's run-as user,
# and speaks to it over two pipes: requests on fd 3, replies on fd 4, each a
# 4-byte big-endian length and a JSON object. User output goes to fd 1 and 2,
# which the agent streams; after a cell the executor writes the cell's marker
# to both so the agent knows it has all of the cell's output. Everything here
# runs as the user, so nothing in it is trusted by the agent.
import ast
import base64
import io
import json
import linecache
import os
import signal
import struct
import sys
import traceback
import types

_REQ = os.fdopen(3, "rb", buffering=0)
_REP = os.fdopen(4, "wb", buffering=0)
os.set_inheritable(3, False)
os.set_inheritable(4, False)
_MAX_REQUEST = 4 << 20
_TEXT_MIMES = (
    "text/plain",
    "text/html",
    "text/markdown",
    "image/svg+xml",
    "text/latex",
    "application/javascript",
)
_REPRS = (
    ("_repr_html_", "text/html"),
    ("_repr_markdown_", "text/markdown"),
    ("_repr_svg_", "image/svg+xml"),
    ("_repr_png_", "image/png"),
    ("_repr_jpeg_", "image/jpeg"),
    ("_repr_latex_", "text/latex"),
    ("_repr_json_", "application/json"),
)


def _send(msg):
    b = json.dumps(msg, default=str).encode()
    _REP.write(struct.pack(">I", len(b)) + b)


def _read_exact(n):
    buf = b""
    while len(buf) < n:
        chunk = _REQ.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _recv():
    head = _read_exact(4)
    if head is None:
        return None
    (n,) = struct.unpack(">I", head)
    if n > _MAX_REQUEST:
        return None
    body = _read_exact(n)
    return None if body is None else json.loads(body)


def _encode(mime, value):
    """A representation as JSON-safe text: binary images in base64."""
    if isinstance(value, (bytes, bytearray)):
        if mime in _TEXT_MIMES:
            return value.decode("utf-8", "replace"), False
        return base64.b64encode(bytes(value)).decode(), True
    if mime == "application/json" and not isinstance(value, str):
        return json.dumps(value, default=str), False
    if mime.startswith("image/") and mime != "image/svg+xml":
        return value, True  # already base64 text, as Jupyter keeps it
    return str(value), False


def _bundle(obj):
    """The MIME bundle of an object, the way IPython builds one."""
    data = {}
    f = getattr(obj, "_repr_mimebundle_", None)
    if callable(f) and not isinstance(obj, type):
        try:
            got = f()
            if isinstance(got, tuple):
                got = got[0]
            if isinstance(got, dict):
                data.update(got)
        except Exception:
            pass
    for name, mime in _REPRS:
        if mime in data or isinstance(obj, type):
            continue
        f = getattr(obj, name, None)
        if not callable(f):
            continue
        try:
            got = f()
        except Exception:
            continue
        if isinstance(got, tuple):
            got = got[0]
        if got is not None:
            data[mime] = got
    if "text/plain" not in data:
        try:
            data["text/plain"] = repr(obj)
        except Exception as e:
            data["text/plain"] = "<repr failed: %s>" % type(e).__name__
    out, b64 = {}, []
    for mime, value in data.items():
        out[mime], isb64 = _encode(str(mime), value)
        if isb64:
            b64.append(mime)
    return out, b64


def _publish(obj, main=False):
    data, b64 = _bundle(obj)
    _flush()
    _send({"t": "result", "data": data, "b64": b64, "main": main})


def display(*objs, raw=False, **kwargs):
    """Shows objects as rich results (like IPython.display.display)."""
    for obj in objs:
        if raw and isinstance(obj, dict):
            out, b64 = {}, []
            for mime, value in obj.items():
                out[mime], isb64 = _encode(str(mime), value)
                if isb64:
                    b64.append(mime)
            _flush()
            _send({"t": "result", "data": out, "b64": b64, "main": False})
        else:
            _publish(obj)


class _Figures:
    """matplotlib support: the Agg backend, and open figures sent as PNG."""

    @staticmethod
    def setup():
        os.environ.setdefault("MPLBACKEND", "Agg")
        # Debian's matplotlib reads /etc/matplotlibrc, which a sandbox that sees only
        # the host's /usr lacks; the same file is in its data directory.
        debian = "/usr/share/matplotlib/mpl-data/matplotlibrc"
        if "MATPLOTLIBRC" not in os.environ and not os.path.exists("/etc/matplotlibrc"):
            if os.path.exists(debian):
                os.environ["MATPLOTLIBRC"] = debian

    @staticmethod
    def flush():
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        try:
            for num in plt.get_fignums():
                fig = plt.figure(num)
                buf = io.BytesIO()
                fig.savefig(buf, format="png", bbox_inches="tight")
                _flush()
                _send(
                    {
                        "t": "result",
                        "data": {
                            "image/png": base64.b64encode(buf.getvalue()).decode(),
                            "text/plain": repr(fig),
                        },
                        "b64": ["image/png"],
                        "main": False,
                    }
                )
            plt.close("all")
        except Exception:
            traceback.print_exc()


def _flush():
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            pass


class _Interrupts:
    """SIGINT (the agent's interrupt) raises KeyboardInterrupt only while a cell runs.

    Between cells it is ignored (SIG_IGN), so that an interrupt sent as a cell ends
    cannot hit the executor's own loop, whichever thread the kernel delivers it to
    (numpy's BLAS threads, say, do not block it). A handler the cell installs is kept
    for the next cell.
    """

    handler = signal.default_int_handler

    @classmethod
    def arm(cls):
        signal.signal(signal.SIGINT, cls.handler)

    @classmethod
    def disarm(cls):
        # An interrupt that arrived just before may still raise here: retry until the
        # handler is off (then nothing new can raise).
        while True:
            try:
                h = signal.getsignal(signal.SIGINT)
                if callable(h) or h == signal.SIG_DFL:
                    cls.handler = h
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                return
            except KeyboardInterrupt:
                continue


def _run(code, ns, count):
    name = "<cell-%d>" % count
    # Tracebacks show the cell's lines, as in IPython.
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    tree = ast.parse(code, name, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<cell-%d>" % count, "exec"), ns)
    if last is not None:
        value = eval(compile(last, "<cell-%d>" % count, "eval"), ns)
        if value is not None:
            ns["_"] = value
            _publish(value, main=True)


def _error(e):
    tb = e.__traceback__
    # Drop the executor's own frames: the user's traceback starts at the cell.
    while tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(e), e, tb))
    try:
        value = str(e)
    except Exception:
        value = "<str failed>"
    return {"t": "error", "name": type(e).__name__, "value": value, "traceback": text}


def _end(marker):
    """Writes the cell's marker after its output; returns the fds it reached."""
    _flush()
    marked = []
    for fd in (1, 2):
        try:
            os.write(fd, marker.encode())
            marked.append(fd)
        except OSError:
            pass
    return marked


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _Figures.setup()
    # Unbuffered text streams: output reaches the agent as it is printed.
    for name, fd in (("stdout", 1), ("stderr", 2)):
        raw = open(fd, "wb", buffering=0, closefd=False)
        setattr(sys, name, io.TextIOWrapper(raw, "utf-8", "replace", write_through=True))
    sys.argv = [""]
    import builtins

    builtins.display = display
    # The cells' namespace is a fresh __main__ (so pickle finds their classes); the
    # executor's functions keep their own globals.
    mod = types.ModuleType("__main__")
    mod.__dict__["display"] = display
    sys.modules["__main__"] = mod
    ns = mod.__dict__
    _send({"t": "ready", "python": sys.version.split()[0]})
    count = 0
    while True:
        req = _recv()
        if req is None:
            return
        count += 1
        reply = None
        try:
            _Interrupts.arm()
            _run(req["code"], ns, count)
            _Figures.flush()
        except BaseException as e:  # noqa: B036 - the cell's error, KeyboardInterrupt included
            _Interrupts.disarm()
            _Figures.flush()
            reply = _error(e)
            if isinstance(e, SystemExit):
                reply["value"] = "SystemExit(%s): the context keeps running" % e.code
        _Interrupts.disarm()
        marked = _end(req["marker"])
        if reply is not None:
            _send(reply)
        _send({"t": "done", "count": count, "marked": marked})


main()
