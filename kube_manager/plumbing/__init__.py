"""Small mechanisms with no knowledge of Kubernetes or Contrail: structured log fields (`kvlog`),
the garbage collector's policy (`gcpolicy`) and packed records (`packed`)."""
