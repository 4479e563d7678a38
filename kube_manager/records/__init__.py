"""The in-memory records the introspect pages read: what Kubernetes told us, what we own in Contrail,
connection and leader status."""
