"""Every kind goes through one surface of the translator (`upsert`, `delete`, `reject`, `status_of`,
`errors`): a kind the product does not know plugs in as one source (its hook in the registry of
kinds), and behaves as the others."""
from __future__ import annotations

import pytest

from kube_manager.registry import SOURCE, KindError
from kube_manager.translator import ClusterTranslator, translate
from kube_manager.translator.kind_source import KindTable
from tests.support.builders import namespace, pod
from tests.support.toy_kind import TOO_BIG, TOY, kinds_with_toys, toy


def translator_with_toys() -> tuple:
    translator = ClusterTranslator(kinds=kinds_with_toys()[0])
    return translator, translator._kinds[TOY]


def test_a_new_kind_is_read_rejected_and_cleared_like_the_others() -> None:
    translator, source = translator_with_toys()
    translator.upsert(TOY, toy("small", 3))
    translator.upsert(TOY, toy("big", 11))
    assert source.sizes == {"small": 3, "big": 11}
    translator.upsert(TOY, toy("small", "three"))  # unreadable: replaces its earlier state
    translator.flush()
    assert source.sizes == {"big": 11}
    assert translator.errors() == [
        {"kind": TOY, "namespace": "", "name": "big", "reason": TOO_BIG},
        {"kind": TOY, "namespace": "", "name": "small", "reason": "spec.size: 'three' is not an integer"}]
    assert translator.status_of(TOY, "", "small").errors == ("spec.size: 'three' is not an integer",)
    translator.upsert(TOY, toy("small", 4))  # readable again: its rejection goes
    assert [e["name"] for e in translator.errors()] == ["big"] and source.sizes["small"] == 4
    translator.reject(TOY, "", "small", ZeroDivisionError("a handler bug"))
    assert "small" not in source.sizes
    assert translator.errors()[-1]["reason"] == "internal error: ZeroDivisionError: a handler bug"
    translator.delete(TOY, "", "small")
    translator.delete(TOY, "", "big")
    assert translator.errors() == [] and source.sizes == {}


def test_the_kinds_of_the_product_keep_their_order_and_a_new_one_comes_after() -> None:
    translator, _ = translator_with_toys()
    assert translator.kinds() == ("Namespace", "Pod", "NetworkPolicy", "ClusterNetworkPolicy", TOY)


@pytest.mark.parametrize("call", [
    lambda t: t.upsert("Gateway", {"metadata": {"name": "g"}}),
    lambda t: t.delete("Gateway", "", "g"),
    lambda t: t.reject("Gateway", "", "g", ValueError("x")),
    lambda t: t.status_of("Gateway", "", "g"),
])
def test_a_kind_without_a_source_is_an_error_never_another_kinds(call) -> None:
    translator = ClusterTranslator()
    with pytest.raises(KeyError, match="no translator source for kind 'Gateway'"):
        call(translator)
    translator.flush()
    assert translator.errors() == []


def test_translate_refuses_a_kind_it_does_not_read() -> None:
    with pytest.raises(KeyError, match="'Gateway'"):
        translate({"Namespace": [namespace("a")], "Gateway": [{}]})


def test_translate_applies_the_kinds_in_the_translators_order_whatever_the_mapping_says() -> None:
    objects = {"Pod": [pod("a", "web", "10.0.0.1", app="web")], "Namespace": [namespace("a", team="x")]}
    ordered = {"Namespace": objects["Namespace"], "Pod": objects["Pod"]}
    assert translate(objects).to_dict() == translate(ordered).to_dict()


class Gateways:
    kind = "Gateway"


def test_a_kind_has_one_source() -> None:
    with pytest.raises(ValueError, match="kind Gateway has two translator sources"):
        KindTable([Gateways(), Gateways()])  # type: ignore[list-item]


def test_a_kind_without_a_translator_source_hook_fails_when_the_translator_is_built() -> None:
    kinds, _ = kinds_with_toys()
    del kinds[TOY].hooks[SOURCE]
    with pytest.raises(KindError, match="kind Toy is registered without a translator source hook"):
        ClusterTranslator(kinds=kinds)
