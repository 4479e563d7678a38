"""The real control plane itself (tools/control-plane, SPEC 16): it answers /readyz, reports the
pinned release, serves the ClusterNetworkPolicy CRD as v1alpha2 with its status subresource, keeps
etcd reachable for compaction, gives kube-manager's identity exactly the rules of etc/rbac.yaml, and
`down` leaves no process."""
from __future__ import annotations

import json
import ssl
import urllib.request
from pathlib import Path
from typing import Dict, FrozenSet, List, Set, Tuple

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.support.control_plane_support import (RealKube, compact_etcd, run_tool, start_real_kube,
                                                 stop_real_kube)
from tools.control_plane import local_processes
from tools.control_plane.bootstrap_objects import bound_service_account, rbac_manifests
from tools.control_plane.pins import BUILD_MODULE, KUBERNETES, required_version

CNP = ("policy.networking.k8s.io", "v1alpha2", "clusternetworkpolicies")
ALL_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


def _documented_rules() -> Dict[Tuple[str, str, str], Set[str]]:
    """(namespace, group, resource) -> verbs, from etc/rbac.yaml: the Role's namespace, or ''."""
    rules: Dict[Tuple[str, str, str], Set[str]] = {}
    for manifest in rbac_manifests():
        if manifest["kind"] not in ("ClusterRole", "Role"):
            continue
        namespace = manifest["metadata"].get("namespace", "")
        for rule in manifest["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    rules.setdefault((namespace, group, resource), set()).update(rule["verbs"])
    return rules


def test_readyz_answers_ok_to_a_client_that_verifies_the_ca(real_kube: RealKube) -> None:
    context = ssl.create_default_context(cafile=real_kube.env["CA_CERT"])
    with urllib.request.urlopen(real_kube.url + "/readyz", context=context, timeout=10) as answer:
        assert (answer.status, answer.read()) == (200, b"ok")


def test_version_is_the_pinned_release(real_kube: RealKube) -> None:
    pinned = required_version(BUILD_MODULE / "go.mod", KUBERNETES)
    version = client.VersionApi(real_kube.admin()).get_code()
    assert (version.git_version, version.major, version.minor) == (
        pinned, "1", pinned.split(".")[1])
    assert real_kube.env["KUBERNETES_VERSION"] == pinned


def test_cnp_crd_serves_v1alpha2_with_a_status_subresource(real_kube: RealKube) -> None:
    group, version, plural = CNP
    crd = client.ApiextensionsV1Api(real_kube.admin()).read_custom_resource_definition(
        f"{plural}.{group}")
    served = {v.name: v for v in crd.spec.versions if v.served}
    assert version in served and served[version].subresources.status is not None
    objects = client.CustomObjectsApi(real_kube.admin())
    body = {"apiVersion": f"{group}/{version}", "kind": "ClusterNetworkPolicy",
            "metadata": {"name": "control-plane-check"},
            "spec": {"tier": "Admin", "priority": 7,
                     "subject": {"namespaces": {"matchLabels": {"team": "a"}}},
                     "ingress": [{"action": "Deny", "name": "deny-all",
                                  "from": [{"namespaces": {"matchLabels": {}}}]}]}}
    created = objects.create_cluster_custom_object(group, version, plural, body)
    condition = {"type": "Accepted", "status": "True", "reason": "Synced", "message": "written",
                 "lastTransitionTime": "2026-01-01T00:00:00Z",
                 "observedGeneration": created["metadata"]["generation"]}
    created["status"] = {"conditions": [condition]}
    written = objects.replace_cluster_custom_object_status(group, version, plural,
                                                           "control-plane-check", created)
    assert written["status"]["conditions"] == [condition]
    assert written["metadata"]["generation"] == created["metadata"]["generation"]
    # The schema is enforced through /status too: a condition needs its message.
    written["status"]["conditions"] = [{k: v for k, v in condition.items() if k != "message"}]
    with pytest.raises(ApiException) as refused:
        objects.replace_cluster_custom_object_status(group, version, plural, "control-plane-check",
                                                     written)
    assert refused.value.status == 422
    objects.delete_cluster_custom_object(group, version, plural, "control-plane-check")


def _can(api: client.ApiClient, verb: str, namespace: str, group: str, resource: str) -> bool:
    resource_name, _, subresource = resource.partition("/")
    review = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
        resource_attributes=client.V1ResourceAttributes(
            verb=verb, namespace=namespace or None, group=group, resource=resource_name,
            subresource=subresource or None)))
    answer = client.AuthorizationV1Api(api).create_self_subject_access_review(review)
    return bool(answer.status.allowed)


def test_kube_manager_may_do_each_documented_verb_and_no_other(real_kube: RealKube) -> None:
    api = real_kube.kube_manager()
    wrong: List[str] = []
    for (namespace, group, resource), verbs in sorted(_documented_rules().items()):
        for verb in ALL_VERBS:
            if _can(api, verb, namespace, group, resource) != (verb in verbs):
                wrong.append(f"{verb} {group}/{resource} in {namespace or 'the cluster'}: "
                             f"{'allowed' if verb not in verbs else 'denied'}")
    # The leader Role holds in its namespace only.
    wrong += [f"{verb} leases in default: allowed" for verb in ("get", "create", "update")
              if _can(api, verb, "default", "coordination.k8s.io", "leases")]
    wrong += [f"{verb} {resource}: allowed" for verb, resource in (("get", "secrets"), ("create", "pods"))
              if _can(api, verb, "kube-system", "", resource)]
    assert not wrong


def _resource_rules(api: client.ApiClient, namespace: str) -> FrozenSet[Tuple[str, str, str, str]]:
    review = client.V1SelfSubjectRulesReview(spec=client.V1SelfSubjectRulesReviewSpec(namespace=namespace))
    status = client.AuthorizationV1Api(api).create_self_subject_rules_review(review).status
    assert not status.incomplete, status.evaluation_error
    return frozenset((group, resource, verb, name)
                     for rule in status.resource_rules for group in rule.api_groups or [""]
                     for resource in rule.resources or [] for verb in rule.verbs
                     for name in rule.resource_names or [""])


def _unbound_identity(real: RealKube) -> client.ApiClient:
    """A ServiceAccount bound to nothing: what every authenticated identity may do anyway."""
    namespace, _ = bound_service_account(rbac_manifests())
    core = client.CoreV1Api(real.admin())
    core.create_namespaced_service_account(namespace, client.V1ServiceAccount(
        metadata=client.V1ObjectMeta(name="unbound-for-rules-review")))
    token = core.create_namespaced_service_account_token(
        "unbound-for-rules-review", namespace,
        client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[])))
    configuration = client.Configuration()
    configuration.host = real.url
    configuration.ssl_ca_cert = real.env["CA_CERT"]
    configuration.api_key = {"BearerToken": token.status.token}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    return client.ApiClient(configuration)


def test_kube_manager_rules_are_exactly_the_documented_ones(real_kube: RealKube) -> None:
    baseline = _unbound_identity(real_kube)
    for namespace in ("kube-system", "default"):
        granted = _resource_rules(real_kube.kube_manager(), namespace) - _resource_rules(baseline, namespace)
        documented = {(group, resource, verb, "")
                      for (where, group, resource), verbs in _documented_rules().items()
                      if where in ("", namespace) for verb in verbs}
        assert granted == documented, namespace


def test_compacting_etcd_makes_older_resource_versions_gone(uncached_kube: RealKube) -> None:
    core = client.CoreV1Api(uncached_kube.admin())
    before = core.list_namespace().metadata.resource_version
    # Two writes: a watch from `before` starts at the revision after it, which must be gone too.
    for name in ("compaction-check-1", "compaction-check-2"):
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    assert compact_etcd(uncached_kube) > int(before) + 1
    with pytest.raises(ApiException) as gone:
        core.list_namespace(resource_version=before, resource_version_match="Exact")
    assert gone.value.status == 410
    watch = core.list_namespace(watch=True, resource_version=before, timeout_seconds=5,
                                _preload_content=False)
    first = json.loads(watch.readline())
    assert (first["type"], first["object"].get("code")) == ("ERROR", 410), first


def test_down_stops_every_process_it_started(tmp_path: Path, real_kube: RealKube) -> None:
    """A control plane of its own (the session's keeps running): up, status, down, status."""
    own = start_real_kube(tmp_path / "own", [])
    assert run_tool("status", "--dir", str(own.folder)).returncode == 0
    pids = {name: (int(own.env[f"{name}_PID"]), Path(own.env[f"{name}_BIN"]))
            for name in ("APISERVER", "ETCD")}
    assert all(local_processes.runs(pid, binary) for pid, binary in pids.values())
    stop_real_kube(own)
    assert not [name for name, (pid, binary) in pids.items() if local_processes.runs(pid, binary)]
    after = run_tool("status", "--dir", str(own.folder))
    assert after.returncode == 1 and after.stdout.count("not running") == 2
