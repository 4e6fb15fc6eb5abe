"""Runs a command that gets a signal when the process that started it dies, without a ``preexec_fn``.

``python -m inference_platform.parent_death <parent pid> <signal number> -- <command...>`` sets
``PR_SET_PDEATHSIG`` on itself and then ``exec``s the command, which keeps the setting (prctl(2): it is
cleared by fork, not by execve of a non-set-user-ID program).

Why not ``preexec_fn=die_with_parent()``: a ``preexec_fn`` makes CPython start the child with ``fork()``
instead of ``vfork()`` (Modules/_posixsubprocess.c), so the child runs every ``pthread_atfork`` handler of the
parent. grpcio 1.85's event engine registers such handlers; in a parent whose gRPC threads are polling, the
forked child aborts in them ("Epoll1Poller ... epoll_wait error: Bad file descriptor", SIGABRT) before it
reaches ``exec`` (grpc/grpc#43055). Without a ``preexec_fn`` CPython uses ``vfork()``, which runs no
handlers, and this launcher does the prctl after the exec.
"""

from __future__ import annotations

import os
import signal
import sys

from inference_platform.processes import set_parent_death_signal


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: python -m inference_platform.parent_death <parent pid> <signal> -- <command...>", file=sys.stderr)
        return 2
    parent, sig = int(argv[0]), signal.Signals(int(argv[1]))
    set_parent_death_signal(sig, parent)
    os.execvp(argv[3], argv[3:])
    return 127  # pragma: no cover - execvp returns only by raising


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
