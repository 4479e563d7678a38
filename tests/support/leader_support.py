"""Several `contrail-kube-manager run` processes against one emulated API server and one config API
(the e2e rig of `e2e_support`), with leader election on: who leads, who wrote what, and when.

Writes are counted by the config API server per User-Agent, which carries each daemon's election
identity, so a standby that wrote anything would show there whatever its own metrics said. Times
of takeover are read from the Lease itself (`acquireTime`, written by the new holder as its attempt
starts), so polling delays of the test do not enter the figures.
"""
from __future__ import annotations

import datetime
import signal
import time
import urllib.error
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from kube_manager.offline.manifests import Manifests
from tests.support.e2e_support import DaemonProcess, Environment
from tests.support.waiting import wait_until
from vnc_client.transport import USER_AGENT

NAMESPACE, LEASE = "kube-system", "contrail-kube-manager-k8s"
ANSWER_LIMIT = 60.0


@dataclass(frozen=True)
class Timings:
    lease: int
    renew: float
    retry: float

    def args(self) -> Tuple[str, ...]:
        return ("--leader-elect-lease-duration", str(self.lease), "--leader-elect-renew-deadline", str(self.renew),
                "--leader-elect-retry-period", str(self.retry))


SHORT = Timings(3, 2.0, 0.5)
DEFAULT = Timings(15, 10.0, 2.0)


def parse_time(text: str) -> float:
    """A Lease MicroTime as time.time()."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def log_time(line: str) -> float:
    """The time.time() a daemon log line was written (its first field)."""
    return parse_time(line.split(" ", 1)[0])


class Candidate:
    """One daemon process and what the test knows about it."""

    def __init__(self, process: DaemonProcess) -> None:
        self.process = process
        self._identity = ""

    @property
    def identity(self) -> str:
        if not self._identity:
            self._identity = self.status()["identity"]
        return self._identity

    @property
    def agent(self) -> str:
        return f"{USER_AGENT} {self.identity}"

    def status(self) -> Dict[str, Any]:
        """Its /Snh_LeaderElectionStatus, waiting while its introspect is too busy to answer (a start
        on a loaded machine); a daemon that does not answer for ANSWER_LIMIT seconds fails the test."""
        return wait_until(self._status_if_answering, "introspect answering", ANSWER_LIMIT)

    def _status_if_answering(self) -> Optional[Dict[str, Any]]:
        try:
            return self.process.get("/Snh_LeaderElectionStatus?format=json")
        except OSError:
            if not self.alive():
                raise AssertionError("daemon exited:\n" + "\n".join(self.process.log()[-30:])) from None
            return None

    def readiness_line(self) -> str:
        """The `leader-election` line of /readyz, whatever the verdict (the config API check is not
        this module's business)."""
        try:
            body = self.process.get("/readyz")
        except urllib.error.HTTPError as exc:
            body = exc.read().decode()
        return next((line for line in body.splitlines() if "leader-election" in line), "")

    def ready(self) -> bool:
        try:
            self.process.get("/readyz")
        except urllib.error.HTTPError:
            return False
        return True

    def alive(self) -> bool:
        return self.process.proc.poll() is None


class ElectionRig:
    """An `Environment` plus candidates started with the given election timings."""

    def __init__(self, manifests: Manifests, timings: Timings = SHORT) -> None:
        self.env = Environment(manifests)
        self.timings = timings
        self.candidates: List[Candidate] = []

    def start(self, count: int = 1) -> List[Candidate]:
        started = [Candidate(self.env.start_daemon(*self.timings.args())) for _ in range(count)]
        self.candidates.extend(started)
        for candidate in started:
            assert candidate.identity  # up and serving introspect
        return started

    def lease(self) -> Dict[str, Any]:
        return self.env.kube.call(lambda store: store.leases.get(NAMESPACE, LEASE))["spec"]

    def holder(self) -> str:
        return self.env.kube.call(lambda store: store.leases.holder(NAMESPACE, LEASE))

    def leaders(self) -> List[Candidate]:
        """The live candidates whose own status says they lead."""
        return [c for c in self.candidates if c.alive() and c.status()["is_leader"]]

    def wait_single_leader(self, among: Optional[List[Candidate]] = None, timeout: float = 30.0) -> Candidate:
        """Wait until exactly one live candidate leads and holds the Lease; that one."""
        def settled() -> Optional[Candidate]:
            leaders = self.leaders()
            if len(leaders) == 1 and leaders[0].identity == self.holder():
                if among is None or leaders[0] in among:
                    return leaders[0]
            return None
        return wait_until(settled, "a single leader", timeout)

    def writes(self) -> Dict[str, int]:
        return self.env.vnc.counters.writes_by_agent()

    def writes_of(self, candidate: Candidate) -> int:
        return self.writes().get(candidate.agent, 0)

    def last_write_of(self, candidate: Candidate) -> Optional[float]:
        return self.env.vnc.counters.last_write_by_agent().get(candidate.agent)

    def kill(self, candidate: Candidate) -> float:
        """SIGKILL; returns time.time() just before the signal."""
        killed_at = time.time()
        candidate.process.proc.send_signal(signal.SIGKILL)
        candidate.process.proc.wait(10)
        return killed_at

    def terminate(self, candidate: Candidate) -> float:
        """SIGTERM and wait for the clean exit; returns time.time() just before the signal."""
        sent_at = time.time()
        assert candidate.process.stop() == 0
        return sent_at

    def takeover_by(self, candidate: Candidate, timeout: float = 60.0) -> float:
        """Wait until `candidate` holds the Lease; time.time() when its winning attempt started."""
        wait_until(lambda: self.holder() == candidate.identity and candidate.status()["is_leader"],
                   f"{candidate.identity} taking over", timeout)
        return parse_time(self.lease()["acquireTime"])

    def close(self) -> None:
        self.env.close()
