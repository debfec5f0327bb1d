"""A fork server for the lit tests' tool processes: `hlo-opt` and `hlo-run` started ~470 times by lit spend
~0.3 of their ~0.35 CPU-s importing (Python, MLIR's bindings loading libLLVM, NumPy, the package). This process
imports the tools once; `lit_client.py` (what lit.cfg.py substitutes for a tool's name) sends it the command
line, working directory, environment and its stdin/stdout/stderr, and the server forks a child that takes
over those file descriptors and runs the tool's `main` as the console script does (`sys.exit(main())`; of
the interpreter's shutdown what a tool can observe: threads joined, atexit functions, streams flushed). The child's wait status goes back to the client, which exits with
it (or dies of the same signal), so `not`, pipes and redirections see the tool itself.

What a fresh process would do differently: modules are imported before the test's environment is set (no
module reads the environment at import: the tools read HLO_MLIR_* when they run), and the standard streams
were set up for the server's non-terminal streams (lit's are pipes and files too).

Run: `python lit_server.py SOCKET` prints `ready` on stdout once listening; it exits when its parent (lit)
does, removing SOCKET and its directory (when empty).
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import struct
import sys

TOOLS = {"hlo-opt": "hlo_mlir.tools.hlo_opt", "hlo-run": "hlo_mlir.tools.hlo_run"}
# Imported before forking as well: what most tool runs import lazily (passes, the lowering, the JIT).
PRELOAD = ("hlo_mlir.passes", "hlo_mlir.passes.convert_hlo_to_linalg", "hlo_mlir.passes.lower_to_llvm",
           "hlo_mlir.runtime.jit", "hlo_mlir.interpreter.evaluator")
HEADER = struct.Struct("!I")  # byte length of the JSON request that follows
MAX_REQUEST = 1 << 24


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """The request (argv, cwd, env) and the client's three standard file descriptors."""
    data, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    if len(data) < HEADER.size or len(fds) != 3:
        raise ValueError("malformed request")
    (size,) = HEADER.unpack_from(data)
    if size > MAX_REQUEST:
        raise ValueError("request too large")
    body = data[HEADER.size:]
    while len(body) < size:
        more = conn.recv(size - len(body))
        if not more:
            raise ValueError("truncated request")
        body += more
    return json.loads(body), fds


def _become(request: dict, fds: list[int]) -> None:
    """In the forked child: take over the client's streams, directory, environment and command line."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])


def serve(path: str) -> dict | None:
    """Accept clients until the parent exits (returns None); returns the request in each forked child."""
    for name in (*TOOLS.values(), *PRELOAD):
        __import__(name)
    from hlo_mlir.runtime import cache

    cache.key("")  # the compiler's identity: a digest of the sources as imported here, not as a later edit left them
    parent = os.getppid()
    # Stopped by SIGINT or SIGTERM even when started with them ignored (a background job of a shell without job
    # control inherits SIGINT ignored); the children get back the dispositions the server inherited.
    inherited = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that SIGCHLD writes to the wakeup pipe
    waiting: dict[int, socket.socket] = {}  # child pid -> its client's connection
    gc.freeze()  # the children's collections skip the preloaded objects (no copy-on-write of their pages)
    print("ready", flush=True)
    while os.getppid() == parent:
        readable, _, _ = select.select([listener, wake_r], [], [], 1.0)
        if wake_r in readable:
            os.read(wake_r, 4096)
        while waiting:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if not pid:
                break
            conn = waiting.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(HEADER.pack(status))
                except OSError:
                    pass  # the client is gone (killed): nobody to tell
                conn.close()
        if listener not in readable:
            continue
        conn, _ = listener.accept()
        conn.settimeout(30)  # a client sends its request at once
        try:
            request, fds = _receive(conn)
        except (OSError, ValueError) as e:
            print(f"lit_server: {e}", file=sys.stderr)
            conn.close()
            continue
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for sig, handler in inherited.items():
                signal.signal(sig, handler)
            for fd in (wake_r, wake_w):
                os.close(fd)
            for other in (listener, conn, *waiting.values()):
                other.close()
            _become(request, fds)
            return request
        for fd in fds:
            os.close(fd)
        waiting[pid] = conn
    return None


def main() -> None:
    path, server = sys.argv[1], os.getpid()
    sys.path[0] = os.path.dirname(sys.executable)  # as for the console scripts, not this file's directory
    try:
        request = serve(path)
    except KeyboardInterrupt:  # SIGINT or SIGTERM: asked to stop
        request = None
    finally:
        if os.getpid() == server:  # not in a child: remove the socket and its directory (lit.cfg.py made it)
            for remove, what in ((os.unlink, path), (os.rmdir, os.path.dirname(path))):
                try:
                    remove(what)
                except OSError:
                    pass
    if request is None:
        return
    try:
        code = sys.modules[TOOLS[request["tool"]]].main()
    except SystemExit as e:
        code = e.code
    os._exit(_shut_down(code))


def _shut_down(code: object) -> int:
    """What the interpreter's exit does that a tool's run can observe, without tearing down the modules (the
    bulk of a child's CPU time, all in memory that is dropped anyway): SystemExit's code, non-daemon threads
    joined, atexit functions, the standard streams flushed. Returns the exit code."""
    import atexit
    import threading

    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = 120  # as CPython exits when flushing stdout fails
    return code


if __name__ == "__main__":
    main()
