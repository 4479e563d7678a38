"""The Contrail config API REST client and the schema table; a library that imports
nothing from kube_manager or introspect (tests/architecture/test_import_rules.py)."""
