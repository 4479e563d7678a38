"""The read-only HTTP introspect server of kube-manager."""
