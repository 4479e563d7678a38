"""The config API client's write gate (leader election fencing): every write is checked right
before it is sent, retries included, and a refusal sends nothing; reads never ask the gate. The
server counts writes by User-Agent, which carries the instance's `agent`."""
from __future__ import annotations

from typing import List

import pytest

from vnc_client.client import VncClient
from vnc_client.transport import USER_AGENT
from vnc_client.errors import WriteRefused
from simulators.vnc_api.runner import BackgroundServer

NOTE = {"key_value_pair": [{"key": "k", "value": "v"}]}
TAG = {"fq_name": ["label=web"], "tag_type_name": "label", "tag_value": "web"}


class Gate:
    def __init__(self) -> None:
        self.open = True
        self.asked: List[bool] = []

    def __call__(self) -> None:
        self.asked.append(self.open)
        if not self.open:
            raise WriteRefused("not the leader")


def test_writes_pass_an_open_gate_and_are_counted_by_agent(server: BackgroundServer) -> None:
    gate = Gate()
    client = VncClient([server.host], server.port, write_gate=gate, agent="node-a_1")
    created = client.create("tag", TAG)
    client.update("tag", created["uuid"], {"annotations": NOTE})
    assert client.read("tag", created["uuid"])["annotations"] == NOTE
    assert client.list("tag") and client.fqname_to_id("tag", ["label=web"]) == created["uuid"]
    client.delete("tag", created["uuid"])
    assert gate.asked == [True, True, True]                  # reads and read-only POSTs never ask
    assert server.app.counters.writes_by_agent() == {f"{USER_AGENT} node-a_1": 3}


def test_a_closed_gate_refuses_every_kind_of_write_before_sending(server: BackgroundServer) -> None:
    gate = Gate()
    client = VncClient([server.host], server.port, write_gate=gate, agent="node-b_2")
    uuid = client.create("tag", TAG)["uuid"]
    server.app.counters.reset()
    gate.open = False
    for write in (lambda: client.create("tag", {**TAG, "fq_name": ["label=db"], "tag_value": "db"}),
                  lambda: client.update("tag", uuid, {"annotations": NOTE}),
                  lambda: client.delete("tag", uuid),
                  lambda: client.set_tag("tag", uuid, "label", None)):
        with pytest.raises(WriteRefused):
            write()
    with pytest.raises(WriteRefused):
        client.ref_update("firewall-policy", uuid, "firewall-rule", ref_fq_name=["x"])
    assert server.app.counters.writes() == 0
    assert client.read("tag", uuid)["fq_name"] == ["label=web"]  # reads still work
