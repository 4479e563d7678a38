"""The emulated API server's refusals, shared by the object store and the Lease store."""
from __future__ import annotations

from typing import Any, Dict


class ApiError(Exception):
    """A request the API server refuses; rendered as a `Status` object with `code`."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message

    def status(self) -> Dict[str, Any]:
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}
