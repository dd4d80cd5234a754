"""Tries to reach a local daemon: connects to the pathname unix socket ``__SOCKET__`` (a
listener the test opens outside the sandbox) and sends it the bytes of ``__FILE__``; also
through a datagram pair (``sendto`` a path) and an abstract socket. Returns what it managed."""
import socket


def _reach():
    done = []
    data = b"?"
    try:
        with open("__FILE__", "rb") as fh:
            data = fh.read()
    except OSError as exc:
        done.append(type(exc).__name__)
    for family, kind in ((socket.AF_UNIX, socket.SOCK_STREAM), (socket.AF_UNIX, socket.SOCK_DGRAM)):
        try:
            s = socket.socket(family, kind)
            s.connect("__SOCKET__")
            s.sendall(data)
            done.append("connected")
        except OSError as exc:
            done.append(type(exc).__name__)
    try:
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        a.sendto(data, "__SOCKET__")
        done.append("sent")
    except OSError as exc:
        done.append(type(exc).__name__)
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect("\0testgen-hostile-abstract")
        done.append("abstract")
    except OSError as exc:
        done.append(type(exc).__name__)
    return done


RESULT = _reach()


def add(x, y):
    return ["reached"] + RESULT if "connected" in RESULT or "sent" in RESULT else x - y + 1
