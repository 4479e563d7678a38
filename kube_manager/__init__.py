"""kube-manager daemon: Kubernetes watches, in-memory DB, translator, reconciler, CLI."""
