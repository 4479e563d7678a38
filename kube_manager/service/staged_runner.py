"""The staged runs (SPEC 17): what each staged policy would change, computed off the event path.

A greenlet beside the watchers. It looks at `db.generation` (bumped by the event dispatcher at each
change of a Kubernetes record) every `debounce` seconds and starts a run once the cluster has been
quiet for one interval (or has kept changing for `max_delay`), and only while some policy is
staged. A run computes in a forked child (`plumbing/forked.py`: the records as they were at the
fork, their manifests read there, `explain/staged_flows.py`), so that the loop goes on handling
events and writes meanwhile on the other core, with no lock shared with the computation; the
result replaces `db.staged` in the loop. A run has a time budget: past it, the report says "too
large to compute" with what it found (and a child that does not answer soon after is killed).

Each pod, namespace or policy change starts a new run (the flows of every staged policy may move
with any of them); a staged policy's generation seen for the first time is announced by a `Normal`
`Staged` Event (through `announce`, which says whether it was said: only a leader records Events,
so a standby announces when it leads).

Metrics, on the daemon's registry: `kube_manager_staged_policies` (how many are staged) and
`kube_manager_staged_run_seconds` (each run's duration).
"""
from __future__ import annotations

import logging
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import gevent
import gevent.event
from prometheus_client import CollectorRegistry, Gauge, Histogram

from kube_manager.plumbing.forked import in_child
from kube_manager.plumbing.kvlog import kv
from kube_manager.records.db import Database, PolicyRecord, StagedRecord
from kube_manager.translator import ClusterTranslator
from kube_manager.translator.staged_policies import StagedKey

log = logging.getLogger(__name__)

DEBOUNCE = 2.0  # seconds of quiet before a run (the setting staged_run_debounce)
MAX_DELAY = 20.0  # seconds: a cluster that keeps changing gets a run at least this often
BUDGET = 30.0  # seconds a run may take before it reports what it found as too large to compute (staged_run_budget)
RUN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

Snapshot = Callable[[], Mapping[str, Any]]  # the records' manifests, by kind
Announce = Callable[[PolicyRecord, str], bool]  # (the policy's record, the note): said?
# (the snapshot to take, the staged policies, the deadline) -> their reports
Compute = Callable[[Snapshot, List[StagedKey], float], List[Dict[str, Any]]]
GRACE = 10.0  # seconds past the budget before a run's child is killed (its last pair, its output)
NICE = 19  # the child's niceness: the daemon, and the config API beside it, get the CPU first


def compute_reports(objects: Mapping[str, Any], keys: List[StagedKey], cluster_name: str, semantics: str,
                    deadline: float) -> List[Dict[str, Any]]:
    """Each staged policy's report (StagedFlows.to_dict()), in the order of `keys`, the time left
    until `deadline` shared among the policies not computed yet."""
    from kube_manager.explain.staged_flows import StagedRun  # the evaluator: loaded only when some policy is staged

    run = StagedRun(objects, cluster_name, semantics)
    run.prepare()  # the state as enforced, every policy's share: before the time is shared out
    reports = []
    for i, key in enumerate(keys):
        # Each policy its share of what is left: a ClusterNetworkPolicy over every pair of a
        # large cluster cannot starve the NetworkPolicies after it.
        share = (deadline - time.monotonic()) / (len(keys) - i)
        reports.append(run.flows(key, time.monotonic() + share).to_dict())
    return reports


class StagedRunner:
    """See the module docstring."""

    def __init__(self, db: Database, translator: ClusterTranslator, snapshot: Snapshot, announce: Announce,
                 registry: CollectorRegistry, *, debounce: float = DEBOUNCE, max_delay: float = MAX_DELAY,
                 budget: float = BUDGET, compute: Optional[Compute] = None,
                 stop: Optional[gevent.event.Event] = None) -> None:
        """`stop`: set when the daemon stops (the greenlet then ends at its next tick)."""
        self._db = db
        self._stop = stop if stop is not None else gevent.event.Event()
        self._translator = translator
        self._snapshot = snapshot
        self._announce = announce
        self._debounce = debounce
        self._max_delay = max_delay
        self._budget = budget
        cluster_name, semantics = translator.cluster_name, translator.semantics
        self._compute: Compute = compute or (lambda snapshot, keys, deadline: in_child(
            lambda: compute_reports(snapshot(), keys, cluster_name, semantics, deadline), budget + GRACE, NICE))
        self._announced: Dict[StagedKey, Tuple[str, int]] = {}  # (uid, generation) whose Event was said
        self._identity: Dict[StagedKey, Tuple[str, int]] = {}  # (uid, generation) of the last run's report
        self.staged_gauge = Gauge("kube_manager_staged_policies", "Policies staged (SPEC 17): translated, not written",
                                  registry=registry)
        self.run_seconds = Histogram("kube_manager_staged_run_seconds",
                                     "Duration of each run computing what the staged policies would change",
                                     buckets=RUN_BUCKETS, registry=registry)

    def run(self) -> None:
        """The greenlet: a run after each quiet interval that follows a change, until stopped."""
        done = -1  # the generation the last run saw
        first_change: Optional[float] = None  # when a change since that run was first seen
        last_seen = -1
        while not self._stop.wait(self._debounce):
            self._say_pending()
            generation = self._db.generation
            if generation == done:
                continue
            now = time.monotonic()
            if first_change is None:
                first_change, last_seen = now, generation
                self._mark_computing()
                continue
            if generation != last_seen and now - first_change < self._max_delay:
                last_seen = generation  # still changing: wait for a quiet interval
                continue
            done, first_change = generation, None
            self.run_once()

    def run_once(self) -> None:
        """One run over the cluster as it is now (the tests call it directly)."""
        staged = self._translator.staged()
        self.staged_gauge.set(len(staged))
        keys = [(p.kind, p.namespace, p.name) for p in staged]
        for key in set(self._db.staged).difference(keys):
            del self._db.staged[key]
            self._announced.pop(key, None)
            self._identity.pop(key, None)
        if not keys:
            return
        generations = {(p.kind, p.namespace, p.name): (p.uid, p.generation) for p in staged}
        started = time.monotonic()
        try:
            reports = self._compute(self._snapshot, keys, started + self._budget)
        except TimeoutError:  # the child did not answer, even past the budget: it was killed
            from kube_manager.explain.staged_flows import StagedFlows
            reports = [StagedFlows(key, complete=False).to_dict() for key in keys]
        except Exception:  # a bug must not end the greenlet: the next change tries again
            log.exception("staged run failed", extra=kv(staged=len(keys)))
            return
        seconds = time.monotonic() - started
        self.run_seconds.observe(seconds)
        log.info("staged run", extra=kv(staged=len(keys), seconds=round(seconds, 3),
                                        complete=all(r["complete"] for r in reports)))
        still = {(p.kind, p.namespace, p.name) for p in self._translator.staged()}  # the loop went on meanwhile
        for key, report in zip(keys, reports):
            if key not in still:
                continue  # promoted or deleted during the run
            record = self._db.staged.get(key)
            if record is None:
                record = self._db.staged[key] = StagedRecord(*key)
            record.generation = generations[key][1]
            self._identity[key] = generations[key]
            record.report, record.computed_at, record.seconds, record.computing = report, time.time(), seconds, False
            self._say(key, generations[key], report["note"])

    def _mark_computing(self) -> None:
        for record in self._db.staged.values():
            record.computing = True

    def _say_pending(self) -> None:
        """The Events not said yet (a standby's runs, said once it leads)."""
        for key, record in self._db.staged.items():
            if record.report and self._announced.get(key) != self._identity.get(key):
                self._say(key, self._identity[key], record.report["note"])

    def _say(self, key: StagedKey, identity: Tuple[str, int], note: str) -> None:
        """The Staged Event, once per generation of the policy."""
        if self._announced.get(key) == identity:
            return
        kind, namespace, name = key
        policy = (self._db.network_policies.get((namespace, name)) if kind == "NetworkPolicy"
                  else self._db.cluster_network_policies.get(name))
        if policy is not None and self._announce(policy, note):
            self._announced[key] = identity

