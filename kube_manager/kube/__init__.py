"""Kubernetes side: watchers on the official client and the emulated API server."""
