"""Two daemons elect one writer through a real `coordination.k8s.io/v1` Lease (SPEC 12), as the
restricted identity: one leads and writes, the other stands by; a stopped leader hands over within
about one retry period, a killed one is succeeded within the lease duration and two retry periods;
the real server refuses none of their Lease requests."""
from __future__ import annotations

import signal
import time
from typing import Any, Dict, Iterator, List

import pytest

from tests.support.builders import HTTP_8080, allow_from, namespace, pod, policy
from tests.support.control_plane_support import RealKube
from tests.support.leader_support import SHORT, Candidate, log_time, parse_time
from tests.support.real_cluster import RealCluster, client_errors, unique
from tests.support.waiting import wait_until

CONVERGE = 60.0
LEASE_NAMESPACE = "kube-system"  # the namespace etc/rbac.yaml's leader Role holds in


@pytest.fixture
def cluster(real_kube: RealKube) -> Iterator[RealCluster]:
    made = RealCluster(real_kube)
    yield made
    made.close()


class RealElection:
    def __init__(self, cluster: RealCluster) -> None:
        self.cluster = cluster
        self.name = unique("lease")
        self.candidates: List[Candidate] = []

    def start(self, count: int) -> List[Candidate]:
        keys = {"leader_elect": "true", "leader_elect_name": self.name,
                "leader_elect_lease_duration": str(SHORT.lease), "leader_elect_renew_deadline": str(SHORT.renew),
                "leader_elect_retry_period": str(SHORT.retry)}
        started = [Candidate(self.cluster.start_daemon(**keys)) for _ in range(count)]
        self.candidates += started
        return started

    def lease(self) -> Dict[str, Any]:
        spec: Dict[str, Any] = self.cluster.read("leases", LEASE_NAMESPACE, self.name)["spec"]
        return spec

    def single_leader(self, among: List[Candidate]) -> Candidate:
        def settled() -> Any:
            leaders = [c for c in among if c.alive() and c.status()["is_leader"]]
            try:
                holder = self.lease().get("holderIdentity")
            except AssertionError:  # not created yet
                return None
            return leaders[0] if len(leaders) == 1 and leaders[0].identity == holder else None
        leader: Candidate = wait_until(settled, "a single leader holding the real Lease", CONVERGE)
        return leader

    def takeover_by(self, candidate: Candidate) -> float:
        wait_until(lambda: self.lease().get("holderIdentity") == candidate.identity
                   and candidate.status()["is_leader"], f"{candidate.identity} taking over", CONVERGE)
        return parse_time(self.lease()["acquireTime"])


def test_one_writer_handover_on_stop_and_failover_on_kill(cluster: RealCluster) -> None:
    ns = unique("shop")
    cluster.apply(namespace(ns, team="shop"), pod(ns, "web", "10.1.0.1", app="web", ports=HTTP_8080),
                  pod(ns, "api", "10.1.0.2", app="api", ports=HTTP_8080))
    election = RealElection(cluster)
    first, second, third = election.start(3)
    leader = election.single_leader([first, second, third])
    cluster.wait_converged(CONVERGE)
    standbys = [c for c in (first, second, third) if c is not leader]
    wait_until(lambda: all(c.status()["leader"] == leader.identity for c in standbys), "the standbys seeing it")
    assert all(c.process.metric("kube_manager_leader_is_leader") == 0 for c in standbys)
    # handover: SIGTERM releases the Lease, a standby takes it within about one retry period
    assert leader.process.stop() == 0
    released_at = log_time(leader.process.wait_log("lease released"))
    successor = election.single_leader(standbys)
    assert election.takeover_by(successor) - released_at <= 2 * SHORT.retry
    assert election.lease()["leaseTransitions"] == 1
    cluster.apply(policy(ns, "api-from-web", allow_from("web", "api", 8080)))
    cluster.wait_converged(CONVERGE)
    # failover: SIGKILL leaves the Lease held; the last standby takes it once it expires
    last = next(c for c in standbys if c is not successor)
    killed_at = time.time()
    successor.process.proc.send_signal(signal.SIGKILL)
    successor.process.proc.wait(10)
    assert election.takeover_by(last) - killed_at <= SHORT.lease + 2 * SHORT.retry
    assert election.lease()["leaseTransitions"] == 2
    cluster.apply(policy(ns, "web-from-api", allow_from("api", "web", 80)))
    cluster.wait_converged(CONVERGE)
    assert last.process.stop() == 0
    # Candidates racing for the Lease: the losers' 409 is optimistic concurrency doing its work
    # (client-go's candidates meet it too); any other 4xx is a request the real server refused.
    refused = [line for c in (leader, successor, last) for line in client_errors(c.process.log())
               if not ("lease attempt failed" in line and "409 Conflict" in line)]
    assert refused == []
