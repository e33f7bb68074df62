"""Serve a built site on 127.0.0.1 with the standard library's ``http.server``."""

from __future__ import annotations

import functools
import http.server
from pathlib import Path

__all__ = ["make_server", "serve"]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Static files; request lines are not logged (errors still are)."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib name)
        if args and str(args[1] if len(args) > 1 else "").startswith(("4", "5")):
            super().log_message(format, *args)


def make_server(root: str | Path, port: int = 8000) -> http.server.ThreadingHTTPServer:
    """A server for ``root`` bound to 127.0.0.1 (``port`` 0: any free port)."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)


def serve(root: str | Path, port: int = 8000) -> None:
    """Serve ``root`` until interrupted (Ctrl-C)."""
    server = make_server(root, port)
    host, bound = server.server_address[:2]
    print(f"serving {root} at http://{host}:{bound}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
