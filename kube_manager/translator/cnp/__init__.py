"""ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2) on Contrail: the Admin and Baseline tiers
of SPEC 13. `parse` reads a manifest (fail closed) into `model`'s values, `chain` turns one tier
into two ordered lists of items, `status` says what a policy emitted, `source` is the incremental
translator's policy source; `translator/exact/` writes the lists as rules."""
