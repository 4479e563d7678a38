"""The emulated Kubernetes API server: `store` (objects, history, watches), `server` (the HTTP API on
gevent.pywsgi; `python -m simulators.kube_api.server -f DIR` serves manifests), `leases`
(coordination.k8s.io Leases) and `runner` (the server in the background, for blocking code)."""
