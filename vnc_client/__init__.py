"""The Contrail config API REST client, its typed objects and an embedded in-memory server."""
