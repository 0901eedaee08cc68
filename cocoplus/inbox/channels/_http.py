"""HTTP for the phone channels, on the standard library's http.client: one request and its answer, or one
response read line by line, and in both cases a connection another thread can cut at once (`Exchange.close`),
which is how a listener stops within a second while it waits on a long poll or a stream.

Every URL is checked before anything is sent (`checked`): http or https only, and plain HTTP only to a loopback
address unless the caller allows it, since what the channels send carries tokens.  What is said about a URL in
an error names its host and port only: paths hold bot tokens and topics hold capabilities.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass

from cocoplus.inbox.channels.common import ChannelError

USER_AGENT = "cocoplus-inbox"
ERRORS = (OSError, http.client.HTTPException)  # what an exchange raises when it fails


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def checked(url: str, what: str, insecure_http: bool = False) -> urllib.parse.SplitResult:
    """`url` split, or ChannelError: not http(s), no host, or plain HTTP to another machine without leave."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ChannelError(f"{what} must be an http:// or https:// URL with a host")
    if parts.username or parts.password:
        raise ChannelError(f"{what} must not hold credentials (give the token as a token)")
    if parts.scheme == "http" and not loopback(parts.hostname) and not insecure_http:
        raise ChannelError(
            f"{what} is plain HTTP to {parts.hostname}: tokens would cross the network in clear; "
            "use https:// (or allow plain HTTP explicitly)"
        )
    return parts


def base_url(parts: urllib.parse.SplitResult) -> str:
    """The URL as given, without a trailing slash, query or fragment."""
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def where(parts: urllib.parse.SplitResult) -> str:
    """The host and port of a URL, the only part of it an error may show."""
    return parts.netloc.rpartition("@")[2]


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes


class Exchange:
    """One connection to `base` (a checked URL): `request` for an answer, `stream` for its lines; `close` may be
    called from any thread and cuts whatever is under way."""

    def __init__(self, base: urllib.parse.SplitResult, timeout: float) -> None:
        self.base = base
        self.timeout = timeout
        self._lock = threading.Lock()
        self._conn: http.client.HTTPConnection | None = None
        self._closed = False

    def _connect(self) -> http.client.HTTPConnection:
        host, port = self.base.hostname or "", self.base.port
        conn: http.client.HTTPConnection
        if self.base.scheme == "https":
            conn = http.client.HTTPSConnection(host, port, timeout=self.timeout, context=ssl.create_default_context())
        else:
            conn = http.client.HTTPConnection(host, port, timeout=self.timeout)
        with self._lock:
            if self._closed:
                raise ConnectionAbortedError("stopped")
            self._conn = conn
        return conn

    def _send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> http.client.HTTPResponse:
        conn = self._connect()
        all_headers = {"User-Agent": USER_AGENT, **headers}
        conn.request(method, path, body=body, headers=all_headers)
        return conn.getresponse()

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> Reply:
        try:
            response = self._send(method, path, body, headers or {})
            return Reply(response.status, response.read())
        finally:
            self.close()

    def stream(self, path: str, headers: dict[str, str], idle: float) -> tuple[int, Iterator[bytes] | bytes]:
        """GET `path`: (200, its lines as they come), or (status, the body of a refusal).  A line not completed
        within `idle` seconds raises TimeoutError."""
        response = self._send("GET", path, None, headers)
        if response.status != 200:
            try:
                return response.status, response.read()
            finally:
                self.close()
        conn = self._conn
        if conn is not None and conn.sock is not None:
            conn.sock.settimeout(idle)
        return 200, self._lines(response)

    def _lines(self, response: http.client.HTTPResponse) -> Iterator[bytes]:
        try:
            while True:
                line = response.readline(1 << 20)
                if not line:
                    return
                yield line
        finally:
            self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is None:
            return
        sock = conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        conn.close()


def failure(parts: urllib.parse.SplitResult, exc: BaseException) -> str:
    """A failed exchange as one line that names the server by host and port only."""
    if isinstance(exc, TimeoutError):
        return f"{where(parts)} did not answer in time"
    if isinstance(exc, ssl.SSLError):
        return f"{where(parts)}: TLS failed ({exc.reason or type(exc).__name__})"
    if isinstance(exc, ConnectionRefusedError):
        return f"{where(parts)} refused the connection"
    if isinstance(exc, socket.gaierror):
        return f"{where(parts)}: the name does not resolve"
    if isinstance(exc, http.client.IncompleteRead | http.client.RemoteDisconnected | ConnectionResetError):
        return f"{where(parts)} closed the connection"
    return f"{where(parts)}: {type(exc).__name__}: {exc}"
