"""The embedded in-memory Contrail config API server (tests, demo mode, benchmarks)."""
