"""Leader election over a `coordination.k8s.io/v1` Lease (SPEC section 12): exactly one of the
kube-managers running beside Contrail's three controllers writes to the config API.

- `lock`: the Lease as a lock record, read, created and replaced through the official client with
  resourceVersion preconditions;
- `elector`: client-go's leaderelection algorithm over that lock, as greenlets;
- `gate`: the write gate the config API client checks before every write (fencing).
"""
