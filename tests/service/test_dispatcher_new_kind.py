"""A kind the product does not know goes from watch events to the translator and the errors page
through one handler and one translator source, with no product file edited."""
from __future__ import annotations

from kube_manager.records.db import Database
from kube_manager.service.dispatcher import EventDispatcher
from kube_manager.translator import ClusterTranslator
from tests.support.toy_kind import KINDS_WITH_TOYS, TOO_BIG, TOY, TOYS, ToySource, toy


def test_a_new_kind_is_one_handler_and_one_source() -> None:
    db, translator, source = Database(), ClusterTranslator(), ToySource()
    translator.add_kind(source)
    dispatcher = EventDispatcher(db, translator, kinds=KINDS_WITH_TOYS)
    dispatcher.on_event(TOYS.name, "ADDED", toy("held", 1))  # held until every list is in
    assert source.sizes == {}
    for resource in KINDS_WITH_TOYS.names():
        dispatcher.on_event(resource, "LISTED", {"resourceVersion": "1"})
    assert source.sizes == {"held": 1}
    dispatcher.on_event(TOYS.name, "ADDED", toy("big", 12))
    dispatcher.on_event(TOYS.name, "ADDED", toy("bad", None))
    assert [(e["kind"], e["name"], e["reason"]) for e in db.errors] == [
        (TOY, "bad", "spec.size: None is not an integer"), (TOY, "big", TOO_BIG)]
    dispatcher.on_event(TOYS.name, "DELETED", toy("bad", None))
    dispatcher.on_event(TOYS.name, "DELETED", toy("big", 12))
    assert source.sizes == {"held": 1} and db.errors == []
