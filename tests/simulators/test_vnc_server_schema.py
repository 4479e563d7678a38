"""The embedded server's schema slice against the official library's generated schema (the oracle).

`vnc_api.gen` is generated from the real server's XSD: every property, ref, parent and complex-type
field the embedded server knows must exist there with the same type, so a request the embedded
server accepts is shaped as the real one expects.
"""
from __future__ import annotations

import pytest
from vnc_api.gen import resource_common, resource_xsd
from vnc_api.utils import CamelCase

from vnc_client.schema import RESOURCE_TYPES, SEQUENCED_REFS
from simulators.vnc_api.api import ConfigApi
from simulators.vnc_api.validation import COMPLEX_TYPES, PROPERTIES, FieldSpec

_XSD_KIND = {"string": "string", "integer": "integer", "boolean": "boolean"}


def vnc_class(obj_type: str):
    return getattr(resource_common, CamelCase(obj_type))


@pytest.mark.parametrize("obj_type", sorted(RESOURCE_TYPES))
def test_properties_match_the_real_schema(obj_type):
    cls = vnc_class(obj_type)
    assert set(PROPERTIES[obj_type]) == set(cls.prop_fields)
    for name, spec in PROPERTIES[obj_type].items():
        real = cls.prop_field_types[name]
        if spec.kind in ("string", "integer", "boolean"):
            assert not real["is_complex"] and real["xsd_type"] == spec.kind, name
            if spec.bounds:
                assert list(spec.bounds) == list(real["restrictions"]), name
            else:
                assert set(spec.enum) == set(real["restrictions"] or []), name
        else:
            assert real["is_complex"], name
            if spec.kind == "complex":
                assert real["xsd_type"] == spec.type_name, name


@pytest.mark.parametrize("obj_type", sorted(RESOURCE_TYPES))
def test_parents_refs_and_link_fields_exist_in_the_real_schema(obj_type):
    cls = vnc_class(obj_type)
    rt = RESOURCE_TYPES[obj_type]
    assert set(rt.parent_types) <= set(cls.parent_types)
    for ref_field, target in rt.ref_types.items():
        assert ref_field in cls.ref_fields
        real_target, attr_type = cls.ref_field_types[ref_field][:2]
        assert real_target == target
        expected_attr = "FirewallSequence" if (obj_type, ref_field) in SEQUENCED_REFS else "None"
        assert attr_type == expected_attr, ref_field
    assert ConfigApi().views.link_fields(obj_type) <= set(cls.backref_fields) | set(cls.children_fields)


@pytest.mark.parametrize("type_name", sorted(COMPLEX_TYPES))
def test_complex_types_match_the_real_schema(type_name):
    real = getattr(resource_xsd, type_name).attr_field_type_vals
    ours = COMPLEX_TYPES[type_name]
    assert set(ours) == set(real)
    for name, spec in ours.items():
        _assert_same_field(type_name, name, spec, real[name])


def _assert_same_field(type_name: str, name: str, spec: FieldSpec, real: dict) -> None:
    where = f"{type_name}.{name}"
    assert spec.is_list == bool(real["is_array"]), where
    if spec.kind == "opaque":
        assert real["is_complex"], where
    elif spec.kind == "complex":
        assert real["is_complex"] and real["attr_type"] == spec.type_name, where
    elif real["attr_type"] == "dateTime":
        assert spec.kind == "string", where
    else:
        assert _XSD_KIND[real["attr_type"]] == spec.kind, where
        restrictions = real["restrictions"]
        if spec.enum:
            assert set(spec.enum) == set(restrictions), where
        if spec.bounds:
            low, high = restrictions
            # Ports: the real schema allows -1; the embedded server deliberately starts at 0.
            assert spec.bounds == (max(low, 0), high), where
