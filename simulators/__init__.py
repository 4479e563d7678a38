"""Simulators of kube-manager's neighbours, for tests, benchmarks and demo mode; never the product.

- `kube_api`: an emulated Kubernetes API server (list, watch, bookmarks, Leases) that the real
  `kubernetes` client talks to over HTTP (`kubernetes_api_server = emulated`).
- `cni`: an emulated CNI that creates each pod's VM and VMI in the config API (`emulated_cni`).
- `vnc_api`: an embedded in-memory Contrail config API server (`vnc-server`, `embedded_vnc`).

They live apart from the product so that the daemon's path against a real cluster never imports them:
only the commands and daemon branches that need one import it, lazily. The product never imports
from here at module level (tests/architecture/test_import_rules.py keeps it so).
"""
