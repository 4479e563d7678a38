"""Explaining flows: why a pod may or may not reach another, on Kubernetes' terms and on Contrail's.

Kept beside the translator, not inside it, because it is a consumer of the translation: it evaluates
the objects the translator emits (`flow`, SPEC section 6) against a Kubernetes reference verdict
computed straight from the manifests (`k8s_semantics`, sharing no code with the translator), traces
which rules decided (`trace`), answers "what if this manifest changed" (`whatif`), and renders the
answer for a terminal (`text`). `explainer` puts them together for `explain` and the introspect page.
"""
