"""Fixtures for the flow, explain and conformance tests: manifest builders, the e2e-style cluster
(namespaces x, y, z with pods a, b, c) and the NetworkPolicy cases taken from the upstream suite."""
