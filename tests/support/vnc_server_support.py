"""Builders and an HTTP helper shared by the embedded config API tests.

Each test gets a fresh server in its own thread (the `server` fixture of conftest.py) and a plain
`requests` session on it (`http`, an `Http`), so the tests exercise the real HTTP path exactly as a
client does.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import requests


PM = ["default-policy-management"]
PROJECT = ["default-domain", "default-project"]


class Http:
    """A thin `requests` wrapper: raw responses, plus helpers that assert success."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.session = requests.Session()

    def get(self, path: str, **params: Any) -> requests.Response:
        return self.session.get(self.url + path, params=params, timeout=10)

    def post(self, path: str, body: Any) -> requests.Response:
        return self.session.post(self.url + path, json=body, timeout=10)

    def put(self, path: str, body: Any) -> requests.Response:
        return self.session.put(self.url + path, json=body, timeout=10)

    def delete(self, path: str) -> requests.Response:
        return self.session.delete(self.url + path, timeout=10)

    def create(self, obj_type: str, body: Dict[str, Any]) -> Dict[str, Any]:
        response = self.post(f"/{obj_type}s", {obj_type: body})
        assert response.status_code == 200, response.text
        return response.json()[obj_type]

    def read(self, obj_type: str, uuid: str, **params: Any) -> Dict[str, Any]:
        response = self.get(f"/{obj_type}/{uuid}", **params)
        assert response.status_code == 200, response.text
        return response.json()[obj_type]

    def action(self, path: str, body: Dict[str, Any]) -> Dict[str, Any]:
        response = self.post(path, body)
        assert response.status_code == 200, response.text
        return response.json()


def expect_error(response: requests.Response, status: int, *fragments: str) -> None:
    """The response is a plain-text error with `status` whose text contains every fragment."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["Content-Type"].startswith("text/plain")
    for fragment in fragments:
        assert fragment in response.text, (fragment, response.text)


def tag_body(tag_type: str, value: str, parent: Optional[List[str]] = None) -> Dict[str, Any]:
    body: Dict[str, Any] = {"fq_name": (parent or []) + [f"{tag_type}={value}"], "tag_type_name": tag_type,
                            "tag_value": value}
    if parent:
        body["parent_type"] = "project"
    return body


def rule_body(name: str, endpoint_1: Optional[Dict[str, Any]] = None, endpoint_2: Optional[Dict[str, Any]] = None,
              service: Optional[Dict[str, Any]] = None, **extra: Any) -> Dict[str, Any]:
    """A global pass rule `any > any`, tcp 80, unless overridden."""
    body = {
        "fq_name": PM + [name], "parent_type": "policy-management",
        "action_list": {"simple_action": "pass"}, "direction": ">",
        "endpoint_1": endpoint_1 if endpoint_1 is not None else {"any": True},
        "endpoint_2": endpoint_2 if endpoint_2 is not None else {"any": True},
        "service": service if service is not None else {"protocol": "tcp", "dst_ports": {"start_port": 80,
                                                                                          "end_port": 80}},
        "match_tags": {"tag_list": []},
    }
    body.update(extra)
    return body


def group_body(name: str, *cidrs: str) -> Dict[str, Any]:
    subnets = [{"ip_prefix": c.split("/")[0], "ip_prefix_len": int(c.split("/")[1])} for c in cidrs]
    return {"fq_name": PM + [name], "parent_type": "policy-management",
            "address_group_prefix": {"subnet": subnets}}


def make_workload(http: Http, name: str) -> Dict[str, str]:
    """A virtual network, a virtual machine and its VMI (parent project, refs to both)."""
    vn = http.create("virtual-network", {"fq_name": PROJECT + [f"{name}-vn"], "parent_type": "project"})
    vm = http.create("virtual-machine", {"fq_name": [f"{name}-vm"]})
    vmi = http.create("virtual-machine-interface", {
        "fq_name": PROJECT + [f"{name}-vmi"], "parent_type": "project",
        "virtual_network_refs": [{"to": vn["fq_name"]}], "virtual_machine_refs": [{"to": vm["fq_name"]}]})
    return {"vn": vn["uuid"], "vm": vm["uuid"], "vmi": vmi["uuid"]}


