"""What lit.cfg.py puts in place of `hlo-opt` / `hlo-run`: `python -S -I lit_client.py SOCKET TOOL ARGS...`
has the fork server (`lit_server.py`) run `TOOL ARGS...` on this process's stdin, stdout and stderr, in
its working directory and environment, and exits as the tool did (its exit code, or killed by the same
signal). Without a server to connect to, it runs the installed tool itself (os.exec): the same test, only
the slower start. Only the standard library, and little of it: this process starts for every tool run.
"""

import json
import os
import signal
import socket
import struct
import sys

HEADER = struct.Struct("!I")


def main() -> None:
    path, tool, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    request = json.dumps({"tool": tool, "argv": [tool, *args], "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        os.execvp(tool, [tool, *args])
    socket.send_fds(conn, [HEADER.pack(len(request)) + request], [0, 1, 2])
    reply = b""
    while len(reply) < HEADER.size:
        more = conn.recv(HEADER.size - len(reply))
        if not more:
            sys.exit(f"{tool}: the lit fork server ({path}) closed the connection without the tool's exit status")
        reply += more
    (status,) = HEADER.unpack(reply)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        sys.exit(128 + sig)
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
