"""The client reads an answer's head itself (`HeaderLines`, not the `email` package): status,
headers in any case, the body by length, in chunks or to the end, keep-alive or not, and what
`http.client` refuses, over a socket that sends exactly the bytes of each case."""
from __future__ import annotations

import http.client
import socket
import threading
from typing import Iterator, List

import pytest

from vnc_client.headerlines import MAX_HEADERS, MAX_LINE
from vnc_client.wire import WireFailure, WirePool

TIMEOUT = (5.0, 5.0)


class RawServer:
    """Answers each request read (up to its blank line) with the next of `answers`, bytes as given;
    after the last one it closes the connection. Counts the connections accepted."""

    def __init__(self, answers: List[bytes]) -> None:
        self.answers = list(answers)
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.origin = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while self.answers:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            with connection:
                reader = connection.makefile("rb")
                while self.answers:
                    while reader.readline() not in (b"\r\n", b""):
                        pass
                    answer = self.answers.pop(0)
                    connection.sendall(answer)
                    if b"close" in answer.lower() or b"HTTP/1.0" in answer or not self.answers:
                        break

    def close(self) -> None:
        self._listener.close()


@pytest.fixture
def raw() -> Iterator[List[RawServer]]:
    made: List[RawServer] = []
    yield made
    for server in made:
        server.close()


def pool_for(raw: List[RawServer], *answers: bytes) -> WirePool:
    server = RawServer(list(answers))
    raw.append(server)
    return WirePool(server.origin, 2, TIMEOUT, verify=True)


@pytest.mark.parametrize("answer, status, content, header, value", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}", 200, b"{}",
     "content-type", "application/json"),
    (b"HTTP/1.1 201 Created\r\ncontent-LENGTH: 3\r\nX-Folded: a\r\n b\r\n\r\nabc", 201, b"abc", "X-FOLDED", "a b"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", 200, b"abcde",
     "transfer-encoding", "Chunked"),
    (b"HTTP/1.1 100 Continue\r\nX-Skipped: 1\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 1\r\n\r\nx", 404, b"x",
     "x-skipped", None),
    (b"HTTP/1.1 204 No Content\r\n\r\n", 204, b"", "content-length", None),
    (b"HTTP/1.0 200 OK\r\n\r\nto the end", 200, b"to the end", "connection", None),
])
def test_an_answer_is_read_whole_with_its_headers_by_name_in_any_case(raw, answer, status, content, header, value):
    got = pool_for(raw, answer).request("GET", "/", None, {})
    assert (got.status, got.content, got.headers.get(header)) == (status, content, value)


@pytest.mark.parametrize("first, reused", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", True),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", True),
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", False),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", False),  # HTTP/1.0 without keep-alive
])
def test_a_connection_is_kept_for_the_next_request_only_when_the_answer_leaves_it_open(raw, first, reused):
    pool = pool_for(raw, first, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    pool.request("GET", "/", None, {})
    assert pool.request("GET", "/", None, {}).content == b"ok"
    assert raw[0].connections == (1 if reused else 2)


@pytest.mark.parametrize("head", [
    b"X: " + b"a" * MAX_LINE + b"\r\n",
    b"".join(b"X-%d: 1\r\n" % n for n in range(MAX_HEADERS + 1)),
    b"no colon here\r\n",
])
def test_a_head_http_client_would_refuse_is_a_transport_failure(raw, head):
    pool = pool_for(raw, b"HTTP/1.1 200 OK\r\n" + head + b"Content-Length: 0\r\n\r\n")
    with pytest.raises(WireFailure):
        pool.request("GET", "/", None, {})


def test_the_email_parser_reads_no_answer(raw, monkeypatch):
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("http.client.parse_headers was called")

    monkeypatch.setattr(http.client, "parse_headers", refuse)
    assert pool_for(raw, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}").request("GET", "/", None, {}).content == b"{}"
