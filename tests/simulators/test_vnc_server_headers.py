"""The embedded config API reads a request's headers itself (`HeaderLines`, not the `email`
package): what pywsgi asks of them, the limits http.client keeps, and requests over a real socket."""
from __future__ import annotations

import io
import socket

import pytest

from vnc_client.headerlines import MAX_HEADERS, MAX_LINE, HeaderLines


def read(raw: bytes) -> HeaderLines:
    return HeaderLines(io.BytesIO(raw + b"POST / HTTP/1.1\r\n"))  # what follows is never read


@pytest.mark.parametrize("raw, name, value", [
    (b"Content-Type: application/json\r\n\r\n", "content-type", "application/json"),
    (b"content-length:  12 \r\n\r\n", "Content-Length", "12"),
    (b"X-A: 1\r\nX-A: 2\r\n\r\n", "x-a", "1"),  # the first, as email.message's get
    (b"X-Long: one\r\n  two\r\n\r\n", "X-Long", "one two"),  # a folded line continues the value
    (b"Host: h\n\n", "host", "h"),  # bare line feeds
    (b"Host: h\r\n\r\n", "connection", None),
])
def test_a_header_is_found_by_name_in_any_case(raw, name, value):
    headers = read(raw)
    assert headers.status == "" and headers.get(name) == value and headers.getheader(name) == value


@pytest.mark.parametrize("raw, status", [
    (b"X: " + b"a" * MAX_LINE + b"\r\n\r\n", "Line too long"),
    (b"".join(b"X-%d: 1\r\n" % n for n in range(MAX_HEADERS + 1)) + b"\r\n", "Too many headers"),
    (b"no colon here\r\n\r\n", "Invalid header line"),
    (b"Bad Name : 1\r\n\r\n", "Invalid header line"),
])
def test_what_http_client_refuses_is_a_refusal(raw, status):
    assert read(raw).status == status


def test_every_value_and_every_header_in_order():
    headers = read(b"Set-Cookie: a\r\nX: 1\r\nset-cookie: b\r\n\r\n")
    assert headers.get_all("SET-COOKIE") == ["a", "b"] and headers.get_all("none") is None
    assert headers.items() == [("set-cookie", "a"), ("x", "1"), ("set-cookie", "b")]


def test_the_lines_pywsgi_turns_into_the_environ_and_a_delete():
    headers = read(b"Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n"
                   b"X-Folded: a\r\n b\r\n\r\n")
    assert headers.typeheader == "text/plain"
    del headers["content-length"]
    assert headers.get("Content-Length") is None
    assert list(headers.headers) == ["Content-Type: text/plain\r\n", "Transfer-Encoding: chunked\r\n",
                                     "X-Folded: a\r\n", " b\r\n"]


def exchange(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    return answer


def test_over_a_socket_headers_in_any_case_work_and_an_oversized_line_is_400(server):
    body = b'{"type": "project", "fq_name": ["default-domain", "default-project"]}'
    ok = exchange(server.port, b"POST /fqname-to-id HTTP/1.1\r\nhost: x\r\ncontent-TYPE: application/json\r\n"
                               b"CONTENT-length: %d\r\n\r\n%s" % (len(body), body))
    assert ok.startswith(b"HTTP/1.1 200 "), ok  # the body was read by its length: the lookup answered
    assert exchange(server.port, b"GET / HTTP/1.1\r\nX: " + b"a" * MAX_LINE + b"\r\n\r\n").startswith(
        b"HTTP/1.1 400")
