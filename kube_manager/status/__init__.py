"""Status in Kubernetes (SPEC 15): Events about policies and ClusterNetworkPolicy conditions, said
by the leader from what the policies' records hold (`verdicts` what to say, `recorder` the Events'
aggregation, `outbox` the queue and its greenlet, `publisher` the differences and the terms)."""
