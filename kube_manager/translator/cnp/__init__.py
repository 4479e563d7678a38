"""ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2) on Contrail: the Admin and Baseline tiers
of SPEC 13. `parse` reads a manifest (fail closed), `algebra` subtracts rules exactly, `render` turns
one tier into objects, `source` is the incremental translator's policy source."""
