"""kubeconfig files for the control plane's two identities, self-contained (certificates inline) so
that a file can be copied or read by any client: the admin's client certificate, and kube-manager's
ServiceAccount token."""
from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any, Dict

import yaml


def _inline(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode("ascii")


def kubeconfig(server: str, ca_cert: Path, user_name: str, user: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "control-plane",
                      "cluster": {"server": server, "certificate-authority-data": _inline(ca_cert)}}],
        "users": [{"name": user_name, "user": user}],
        "contexts": [{"name": user_name, "context": {"cluster": "control-plane", "user": user_name}}],
        "current-context": user_name,
    }


def admin_user(client_cert: Path, client_key: Path) -> Dict[str, Any]:
    return {"client-certificate-data": _inline(client_cert), "client-key-data": _inline(client_key)}


def write_private(path: Path, text: str) -> None:
    """Written 0600 from the start: these files hold a key or a token."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        stream.write(text)


def write_kubeconfig(path: Path, config: Dict[str, Any]) -> None:
    write_private(path, yaml.safe_dump(config, sort_keys=False))
