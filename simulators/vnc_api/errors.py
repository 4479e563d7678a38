"""The one exception the embedded server's layers raise to end a request with an HTTP error.

The real contrail-api answers errors with a bare text body (bottle's `HTTPError.body`) and a status
code; clients (the official library included) branch on the status alone and show the text. Keeping a
single exception type with both lets every layer (store checks, validation, type hooks) fail in the
real server's words without knowing anything about HTTP plumbing.
"""
from __future__ import annotations

from pprint import pformat
from typing import Sequence


class ApiError(Exception):
    """An HTTP error answer: `status` and the plain-text `message` sent as the body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def __repr__(self) -> str:
        return f"ApiError({self.status}, {self.message!r})"


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def not_found(message: str) -> ApiError:
    return ApiError(404, message)


def conflict(message: str) -> ApiError:
    return ApiError(409, message)


def fq_repr(fq_name: Sequence[str]) -> str:
    """An fq_name as the real server prints it in messages (`pformat` of the list)."""
    return pformat(list(fq_name))


def unknown_id(what: str) -> str:
    """The text of the real server's NoIdError: `Unknown id: <what>`."""
    return f"Unknown id: {what}"
