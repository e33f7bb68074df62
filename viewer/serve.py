"""Serve a built site with the standard library's ``http.server`` (127.0.0.1 by default).

Only the site's own files are served: no directory listings (a folder without
``index.html`` is a 404), and no path that resolves outside the site folder (a link in it).
"""

from __future__ import annotations

import errno
import functools
import http.server
import os
from pathlib import Path

from harness.api.errors import UsageError

__all__ = ["make_server", "serve"]


class _SiteHandler(http.server.SimpleHTTPRequestHandler):
    """Static files of one folder; request lines are not logged (errors still are)."""

    def list_directory(self, path: str | os.PathLike[str]) -> None:
        """No directory listings: a folder without ``index.html`` is not found."""
        self.send_error(404, "Not found")
        return None

    def send_head(self) -> object:
        """As the standard handler, except that a path resolving outside the folder is a 404."""
        top = Path(self.directory).resolve()
        if not Path(self.translate_path(self.path)).resolve().is_relative_to(top):
            self.send_error(404, "Not found")
            return None
        return super().send_head()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib name)
        if args and str(args[1] if len(args) > 1 else "").startswith(("4", "5")):
            super().log_message(format, *args)


def make_server(
    root: str | Path, port: int = 8000, host: str = "127.0.0.1"
) -> http.server.ThreadingHTTPServer:
    """A server for ``root`` bound to ``host`` (``port`` 0: any free port).

    Raises:
        UsageError: The port is taken or the address cannot be bound here.
    """
    handler = functools.partial(_SiteHandler, directory=str(root))
    try:
        return http.server.ThreadingHTTPServer((host, port), handler)
    except OSError as err:
        if err.errno == errno.EADDRINUSE:
            raise UsageError(
                f"--port {port} is already in use on {host}",
                hint="give another --port, or --port 0 for any free one",
            ) from None
        raise UsageError(
            f"cannot serve on {host}:{port} ({err.strerror or err})",
            hint="give an address of this machine as --host (default 127.0.0.1)",
        ) from None


def serve(server: http.server.HTTPServer, root: str | Path) -> None:
    """Serve ``root`` with ``server`` (:func:`make_server`) until interrupted (Ctrl-C)."""
    host, port = server.server_address[:2]
    print(f"serving {root} at http://{host}:{port}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
