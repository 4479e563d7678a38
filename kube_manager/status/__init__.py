"""The status room: what became of what Kubernetes said, written into the records downstream.

`StatusBook` (book.py) is fed by the event dispatcher (which objects each event touched, then the
translator's change report) and by the reconciler's progress (protocol.py's `SyncProgress`), and is
the one writer of the records' status parts and of `db.errors`; policies.py keeps the policies'
objects and states, and tells `PolicyStatusListener`s of each change from one place.
"""
