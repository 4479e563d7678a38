"""The embedded in-memory Contrail config API server (tests, demo mode, benchmarks).

Entry points: `run_in_background()` (a server in its own thread, for tests and benchmarks),
`EmbeddedServer` (in the current gevent hub: `vnc-server` and the daemon's embedded mode) and
`ConfigApi` (the operations without HTTP). See `runner` for the threading model.
"""
from .api import ConfigApi
from .faults import ServerOptions
from .runner import BackgroundServer, EmbeddedServer, run_in_background

__all__ = ["BackgroundServer", "ConfigApi", "EmbeddedServer", "ServerOptions", "run_in_background"]
