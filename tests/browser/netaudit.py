"""Run a Python module with every attempt to reach another host written to a file.

``python -m tests.browser.netaudit LOG -m MODULE ARGS...`` (or ``-c CODE``) installs an audit hook
(PEP 578), then runs ``python -m MODULE ARGS...`` in this process. The hook sees each
``socket.connect`` and each name lookup (``socket.getaddrinfo``, ``gethostbyname``...) the server
makes, whether or not the machine has a network, and appends those that leave this machine to LOG.
An offline machine therefore fails the check just as an online one does: the attempt is recorded
before it fails. (Sockets opened by C libraries without Python's socket module are not seen.)
"""

from __future__ import annotations

import ipaddress
import runpy
import socket
import sys
import threading
from pathlib import Path
from typing import Any

LOCAL_NAMES = frozenset({"", "localhost", "localhost.localdomain", "ip6-localhost"})
_LOOKUPS = ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex",
            "socket.gethostbyaddr", "socket.getnameinfo")


def is_local_host(host: Any) -> bool:
    """A loopback or unspecified address (binding a server), a local name, or no host at all."""
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    name = str(host).strip("[]").lower()
    if name in LOCAL_NAMES:
        return True
    try:
        ip = ipaddress.ip_address(name.split("%")[0])
    except ValueError:
        return False  # a host name: looking it up already leaves the machine
    return ip.is_loopback or ip.is_unspecified


def remote_target(event: str, args: tuple[Any, ...]) -> str | None:
    """``host:port`` when an audit event reaches (or looks up) another host, else None."""
    if event == "socket.connect":
        sock, address = args
        if getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6):
            return None  # a Unix socket, netlink...
        host, port = address[0], address[1]
        return None if is_local_host(host) else f"{host}:{port}"
    if event in _LOOKUPS:
        host = args[0] if args else None
        if event == "socket.getnameinfo":
            host = host[0] if isinstance(host, tuple) and host else host
        return None if is_local_host(host) else f"{host} ({event})"
    return None


def install(log_path: Path) -> None:
    lock = threading.Lock()

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if not event.startswith("socket."):
            return
        target = remote_target(event, args)
        if target is not None:
            with lock, log_path.open("a", encoding="utf-8") as log:
                log.write(f"{event} {target}\n")

    sys.addaudithook(hook)


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] not in ("-m", "-c"):
        raise SystemExit("usage: python -m tests.browser.netaudit LOG (-m MODULE | -c CODE) ...")
    log_path, how, target = Path(argv[0]), argv[1], argv[2]
    log_path.touch()
    install(log_path)
    if how == "-c":
        sys.argv = ["-c", *argv[3:]]
        exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})
        return
    sys.argv = [target, *argv[3:]]
    runpy.run_module(target, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
