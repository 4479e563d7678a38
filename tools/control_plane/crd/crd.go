//go:build tools

// Package crd only pins sigs.k8s.io/network-policy-api: tools/control-plane reads the
// ClusterNetworkPolicy CRD manifest it publishes from the module cache.
package crd

import _ "sigs.k8s.io/network-policy-api/apis/v1alpha2"
