"""The control plane's own small PKI, made with the `openssl` command (Debian's, on every machine
here): a CA, kube-apiserver's serving certificate for 127.0.0.1 and localhost, the admin's client
certificate (group `system:masters`), and the service-account signing key. Private keys are written
0600 and never printed."""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import List

CURVE = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
DAYS = "3650"


class CertificateError(RuntimeError):
    """openssl failed; the message has its standard error."""


@dataclass(frozen=True)
class Pki:
    folder: Path

    def path(self, name: str) -> Path:
        return self.folder / name

    @property
    def ca_cert(self) -> Path:
        return self.path("ca.crt")


def _openssl(arguments: List[str]) -> None:
    done = subprocess.run(["openssl", *arguments], capture_output=True, text=True)
    if done.returncode != 0:
        raise CertificateError(f"openssl {arguments[0]} failed: {done.stderr.strip()}")


def _make_ca(pki: Pki) -> None:
    _openssl(["req", "-x509", *CURVE, "-nodes", "-keyout", str(pki.path("ca.key")),
              "-out", str(pki.ca_cert), "-days", DAYS, "-subj", "/CN=kube-manager control plane CA",
              "-addext", "basicConstraints=critical,CA:TRUE",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign"])


def _make_signed(pki: Pki, name: str, subject: str, extensions: List[str]) -> None:
    """`name`.key and `name`.crt, signed by the CA."""
    csr, ext = pki.path(f"{name}.csr"), pki.path(f"{name}.ext")
    _openssl(["req", "-new", *CURVE, "-nodes", "-keyout", str(pki.path(f"{name}.key")),
              "-out", str(csr), "-subj", subject])
    ext.write_text("\n".join(extensions) + "\n", encoding="ascii")
    _openssl(["x509", "-req", "-in", str(csr), "-CA", str(pki.ca_cert),
              "-CAkey", str(pki.path("ca.key")), "-set_serial", str(int.from_bytes(os.urandom(8), "big")),
              "-days", DAYS, "-extfile", str(ext), "-out", str(pki.path(f"{name}.crt"))])
    csr.unlink()
    ext.unlink()


def make_pki(folder: Path) -> Pki:
    """Everything kube-apiserver and the admin identity need, in `folder`."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    pki = Pki(folder)
    old_umask = os.umask(0o077)
    try:
        _make_ca(pki)
        _make_signed(pki, "apiserver", "/CN=kube-apiserver", [
            "basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature",
            "extendedKeyUsage=serverAuth", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        _make_signed(pki, "admin", "/O=system:masters/CN=control-plane-admin", [
            "basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature",
            "extendedKeyUsage=clientAuth"])
        _openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                  "-out", str(pki.path("service-account.key"))])
        _openssl(["pkey", "-in", str(pki.path("service-account.key")), "-pubout",
                  "-out", str(pki.path("service-account.pub"))])
    finally:
        os.umask(old_umask)
    os.chmod(pki.ca_cert, 0o644)
    return pki
