"""Kubernetes side: the watchers on the official client, the client factory and the resource table."""
