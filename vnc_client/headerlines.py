"""An HTTP message's header lines, read without the `email` package, for both ends of the config
API's hot path: the client's answers (`wire`) and the embedded config API's requests.

`http.client` hands the header lines of every message to `email.parser`, which builds an email
message out of them: most of the CPU of reading a short answer, paid on every round trip (the
figures are in docs/operations.md, "One event, stage by stage"). The config API's messages carry a
handful of plain headers; reading them into (name, value) pairs costs a small part of that.
`http.client`'s limits are kept: a line longer than `MAX_LINE` or more than `MAX_HEADERS` lines is
refused, as is a line that is not `name: value`.
"""
from __future__ import annotations

from typing import BinaryIO, Iterator, List, Optional, Tuple

MAX_LINE = 65536
MAX_HEADERS = 100


class HeaderLines:
    """The header lines of one message, read from `rfile` up to the blank line that ends them.
    `status` is empty, or why the lines were refused (reading stops there). It offers what
    `http.client` and gevent's pywsgi read of a message: `get` (`getheader`), `get_all`, `items`,
    `typeheader`, `del` and the raw lines (`headers`, folded lines included)."""

    __slots__ = ("status", "_lines", "_fields")

    def __init__(self, rfile: BinaryIO) -> None:
        self.status = ""
        self._lines: List[str] = []
        self._fields: List[Tuple[str, str]] = []  # (name in lower case, value), in order
        while True:
            line = rfile.readline(MAX_LINE + 1)
            if len(line) > MAX_LINE:
                self.status = "Line too long"
                return
            if line in (b"\r\n", b"\n", b""):
                return
            if len(self._lines) == MAX_HEADERS:
                self.status = "Too many headers"
                return
            text = line.decode("iso-8859-1")
            if text[:1] in " \t" and self._fields:  # a folded line continues the last value
                name, value = self._fields[-1]
                self._fields[-1] = (name, f"{value} {text.strip()}")
            else:
                name, colon, value = text.partition(":")
                if not colon or not name or name != name.strip():
                    self.status = "Invalid header line"
                    return
                self._fields.append((name.lower(), value.strip()))
            self._lines.append(text)

    def get(self, name: str, default: Optional[str] = None) -> Optional[str]:
        """The first value of header `name` (any case), else `default`."""
        wanted = name.lower()
        return next((value for field, value in self._fields if field == wanted), default)

    getheader = get

    def get_all(self, name: str, failobj: Optional[List[str]] = None) -> Optional[List[str]]:
        """Every value of header `name` (any case) in order, else `failobj`."""
        wanted = name.lower()
        found = [value for field, value in self._fields if field == wanted]
        return found or failobj

    def items(self) -> List[Tuple[str, str]]:
        """(name in lower case, value) of every header, in order."""
        return list(self._fields)

    @property
    def typeheader(self) -> Optional[str]:
        return self.get("content-type")

    def __delitem__(self, name: str) -> None:
        wanted = name.lower()
        self._fields = [(field, value) for field, value in self._fields if field != wanted]
        self._lines = [line for line in self._lines if line.partition(":")[0].lower() != wanted]

    @property
    def headers(self) -> Iterator[str]:
        return iter(self._lines)
