"""`tools/control-plane`: a real kube-apiserver and etcd, built from the Go module proxy at the
versions pinned in `go/go.mod` (and the ClusterNetworkPolicy CRD's source in `crd/go.mod`), cached
per machine outside the repository, run on loopback for the `realkube` tests and for a person who
wants to try the daemon against a real API server (SPEC 16; docs/operations.md).
"""
