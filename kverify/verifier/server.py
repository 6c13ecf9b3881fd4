"""The check server: one process that has imported the checkers forks a child per command.

A cold ``kverify check`` spends about half its time starting (Python, numpy, z3, the checkers'
modules) on a small kernel. ``kverify serve`` pays that once; with ``KVERIFY_SERVER`` naming its
socket, the ``kverify`` command hands its arguments, working directory, environment and standard
streams to the server and exits with the status the server's child returns. The child is a fork
of a process that has only imported modules, so every served command starts from the same state,
and (``fresh_heap``) from the state a cold command reaches after parsing its arguments: the same
modules imported in the same order, the garbage collector's automatic runs off. Served and cold
reports are the same, term for term (tests/test_server.py).

Only this module's client side runs in the ``kverify`` command before the checkers load: it
imports nothing but the standard library. A server whose kverify files changed after it started
answers ``stale`` and stops; the command then runs in its own process.
"""
from __future__ import annotations

import json
import os
import socket
import struct
import sys

#: what a checking command imports before its work starts, cold or served (the modules every check
#: of the zoo loads; the rest, such as networkx or the mbarrier checker, load where a check needs
#: them, at the same point in both)
PRELOAD = ("kverify.verifier.check", "kverify.verifier.races.smt", "kverify.verifier.races.symmetry",
           "kverify.verifier.races.atomics", "kverify.verifier.races.extents", "kverify.verifier.assertions",
           "kverify.symbolic.executor", "kverify.semantics.ir.structure", "kverify.semantics.ir.blocking_wait",
           "kverify.semantics.ir.grid_barrier", "kverify.semantics.ir.cuda", "numpy.random", "subprocess", "signal",
           "threading")
#: the commands that run checkers (the others need no preloading)
CHECKING = frozenset({"check", "run", "equiv", "audit", "gate", "validate"})
_HEADER = struct.Struct("!I")


def default_socket() -> str:
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    return os.path.join(base, f"kverify-{os.getuid()}.sock")


def preload() -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)


def fresh_heap(command: str | None) -> None:
    """Where a checking command's work starts, cold or in a server's child: the checkers'
    modules imported (``PRELOAD``), everything alive now moved out of the collector's reach, and
    the collector's automatic runs off for the rest of the command (objects are freed by their
    reference counts; cycles wait for the process's end). z3 numbers new terms with the numbers
    of freed ones, so a collection at another moment renumbers the terms that follow, and a
    budgeted query's work changes with the numbering. The moments depended on the allocations
    before them: what the process did before the check (a server's start), and whether a module
    imported during the check had its bytecode cached (compiling it allocates): the first run
    after an edit asked z3 other numberings than the next. Disabled, nothing moves them; peak
    memory of the zoo's largest checks grows by 0.5-3 %."""
    import gc

    if command in CHECKING:
        preload()
    gc.freeze()
    gc.collect()
    gc.disable()


def _fingerprint() -> tuple:
    """The kverify files this process runs (path, size, modification time): a server started
    before an edit or a reinstall would run the old code."""
    import kverify

    root = os.path.dirname(os.path.abspath(kverify.__file__))
    out = []
    for f in kverify.source_files((".py", ".lark")):
        path = os.path.join(root, f)
        st = os.stat(path)
        out.append((path, st.st_size, st.st_mtime_ns))
    return tuple(out)


# ---------------------------------------------------------------- client (the kverify command)

def client(path: str, argv: list[str]) -> int | None:
    """Runs ``kverify ARGV`` in the server at ``path``; its exit status, or None when no server
    answers there (or it runs older code): the caller then runs the command itself."""
    if not hasattr(socket, "SO_PEERCRED"):  # not Linux: no server (kverify serve refuses to start)
        return None
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError:
        s.close()
        return None
    _, uid, _ = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    if uid != os.getuid():  # the environment goes there: only to a server of this user
        s.close()
        print(f"kverify: the socket {path} belongs to another user's process; this command runs on its own",
              file=sys.stderr)
        return None
    msg = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    fds, opened = [], []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:  # a closed standard stream: the child gets /dev/null
            opened.append(os.open(os.devnull, os.O_RDWR))
            fds.append(opened[-1])
    with s:
        data = _HEADER.pack(len(msg)) + msg
        try:
            sent = socket.send_fds(s, [data], fds)
            s.sendall(data[sent:])  # what a signal cut short, if anything
        except OSError:
            return None
        finally:
            for fd in opened:
                os.close(fd)
        f = s.makefile("r")
        pid, interrupted = None, False
        while True:
            if pid and interrupted:  # Ctrl-C: the command stops as a cold one would
                interrupted = False
                try:
                    os.kill(pid, 2)
                except OSError:
                    pass
            try:
                line = f.readline()
            except KeyboardInterrupt:
                interrupted = True
                continue
            except OSError:
                line = ""
            if not line:
                print(f"kverify: the check server at {path} ended the command without an exit status "
                      f"(no verdict)", file=sys.stderr)
                return 3
            reply = json.loads(line)
            if "pid" in reply:
                pid = reply["pid"]
            elif reply.get("stale"):
                print(f"kverify: the check server at {path} ran older kverify files and stopped; this "
                      f"command runs on its own", file=sys.stderr)
                return None
            elif "rc" in reply:
                return reply["rc"]


# ---------------------------------------------------------------- server

def serve(path: str, main, stop: bool = False, detach: bool = False) -> int:
    """``kverify serve``: listen on ``path`` until SIGTERM or SIGINT (``--stop`` asks the server
    there to stop; ``--detach`` starts it in the background and returns once it listens); each
    command runs as ``main()`` (the command line's) runs it. Only processes of this user may
    connect (the socket is 0600 and each peer's uid is checked), and a client hands its
    environment only to a server of its own user."""
    import signal

    if not hasattr(socket, "SO_PEERCRED") or not hasattr(socket, "send_fds"):
        print(f"{path}:0:0: kverify serve needs Linux (Unix sockets that pass file descriptors and name "
              f"their peer's user)", file=sys.stderr)
        return 2
    if stop:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            msg = json.dumps({"stop": True}).encode()
            s.sendall(_HEADER.pack(len(msg)) + msg)
            stopped = s.recv(1) == b"1"
        except OSError:
            stopped = None
        if not stopped:
            print(f"kverify: no check server of this user at {path}", file=sys.stderr)
            return 2
        print(f"kverify: the check server at {path} stopped", file=sys.stderr)
        return 0
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
        probe.close()
        print(f"{path}:0:0: a check server already listens there", file=sys.stderr)
        return 2
    except FileNotFoundError:
        pass
    except OSError:  # left by a server that died: take it over
        try:
            os.unlink(path)
        except OSError:
            pass
    if detach:
        return _detach(path)
    preload()
    stamp = _fingerprint()
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        ls.bind(path)
    except OSError as e:
        print(f"{path}:0:0: cannot listen here: {e.strerror}", file=sys.stderr)
        return 2
    finally:
        os.umask(old)
    ls.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel

    def _stop(*_):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, _stop)
    print(f"kverify: check server on {path} (pid {os.getpid()}); commands run here with "
          f"KVERIFY_SERVER={path}", file=sys.stderr, flush=True)
    try:
        while True:
            try:
                conn, _ = ls.accept()
            except InterruptedError:
                continue
            if os.fork() == 0:
                try:
                    ls.close()
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    signal.signal(signal.SIGINT, signal.default_int_handler)
                    _child(conn, stamp, main)
                finally:
                    os._exit(3)
            conn.close()
    except (SystemExit, KeyboardInterrupt):
        return 0
    finally:
        ls.close()
        try:
            os.unlink(path)
        except OSError:
            pass


def _detach(path: str) -> int:
    """The server in a process of its own session (it outlives this one and the terminal), its
    standard streams on /dev/null; once it listens, ``export KVERIFY_SERVER=PATH`` on stdout (for a
    shell's ``eval``)."""
    import subprocess
    import tempfile
    import time

    with tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen([sys.executable, "-m", "kverify", "serve", "--socket", path], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        while True:
            if p.poll() is not None:
                err.seek(0)
                sys.stderr.write(err.read())
                return p.returncode or 2
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(path)
                break
            except OSError:
                time.sleep(0.02)
            finally:
                s.close()
    print(f"kverify: check server on {path} (pid {p.pid})", file=sys.stderr)
    print(f"export KVERIFY_SERVER={path}")
    return 0


def _recv(conn) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    while len(data) < _HEADER.size or len(data) < _HEADER.size + _HEADER.unpack_from(data)[0]:
        more = conn.recv(1 << 16)
        if not more:
            raise ConnectionError("request cut short")
        data += more
    return json.loads(data[_HEADER.size:_HEADER.size + _HEADER.unpack_from(data)[0]]), fds


def _child(conn, stamp, main) -> None:
    """One command in a fork of the server: the client's streams, directory and environment,
    then ``kverify ARGV`` as the command line runs it; its status goes back to the client."""
    import io
    import threading

    _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    if uid != os.getuid():
        return
    req, fds = _recv(conn)
    send = lambda obj: conn.sendall((json.dumps(obj) + "\n").encode())  # noqa: E731
    if req.get("stop"):
        conn.sendall(b"1")
        os.kill(os.getppid(), 15)
        return
    if _fingerprint() != stamp:
        send({"stale": True})
        os.kill(os.getppid(), 15)
        return
    try:  # one line per command on the server's own stderr, before it becomes the client's
        print(f"kverify serve: pid {os.getpid()}: kverify {' '.join(req['argv'])}", file=sys.stderr, flush=True)
    except OSError:
        pass
    for want, fd in zip((0, 1, 2), fds):
        os.dup2(fd, want)
        os.close(fd)
    os.chdir(req["cwd"])
    # the module search path a cold ``python -m kverify`` in the client's directory has: that
    # directory first, then the client's PYTHONPATH (a reference module imported from the
    # server's start directory instead gave another report)
    mine = [x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x]
    theirs = [os.path.abspath(x) for x in req["env"].get("PYTHONPATH", "").split(os.pathsep) if x]
    sys.path[:] = [req["cwd"], *theirs, *(x for x in sys.path[1:] if x not in mine and os.path.abspath(x) not in mine)]
    env = dict(req["env"])
    env["PYTHONHASHSEED"] = os.environ.get("PYTHONHASHSEED", "0")  # the server's, which this process has
    os.environ.clear()
    os.environ.update(env)
    enc = sys.stdout.encoding
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding=enc)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=enc, line_buffering=os.isatty(1))
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding=enc, errors="backslashreplace",
                                  line_buffering=True)
    sys.argv = ["kverify", *req["argv"]]
    send({"pid": os.getpid()})

    def watch():  # the client went away (killed, timed out): so does its command
        try:
            conn.recv(1)
        finally:
            os._exit(3)

    threading.Thread(target=watch, daemon=True).start()
    try:
        rc = main()
    except SystemExit as e:  # argparse: --help, a usage error
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except KeyboardInterrupt:  # between main's own handler and here
        rc = 130
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except OSError:
            pass
    send({"rc": rc})
    os._exit(0)
