"""Kubernetes-exact enforcement (SPEC 14): the objects that make one first-match evaluation of the
APS give the conjunction of the source's egress chain and the destination's ingress chain.
`items` is the algebra (ends, services, conjunction), `emit` writes items as rules, `isolation`
keeps the isolation tags on pods, `pairs` the NetworkPolicy pair rules (written while the pods
`realised` finds match their ends), `source` plugs them into the incremental translator."""
