"""The status room: what became of what Kubernetes said, written into the records downstream and
told back to Kubernetes (SPEC 15).

`StatusBook` (book.py) is fed by the event dispatcher (which objects each event touched, then the
translator's change report) and by the reconciler's progress (protocol.py's `SyncProgress`), and is
the one writer of the records' status parts and of `db.errors`; policies.py keeps the policies'
objects and states, and tells `PolicyStatusListener`s and `PolicyObserver`s of each settling from
one place (`PolicyBook._settle`).

Downstream of the book, the leader says it in Kubernetes: Events about policies and
ClusterNetworkPolicy conditions. `publisher` (a `PolicyObserver` registered with the book) keeps
the facts last heard and acts on the differences and the terms; `verdicts` decides what to say,
`recorder` aggregates the Events, `outbox` queues the writes and runs them in its greenlet.
"""
