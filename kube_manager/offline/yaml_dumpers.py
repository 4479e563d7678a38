"""PyYAML's dumpers for `translate -o yaml` (`serialize.yaml_bytes`), in a module of their own so
that PyYAML is imported only when YAML is asked for.
"""
from __future__ import annotations

from typing import Any, Dict, Tuple

import yaml


class _PlainDumper(yaml.SafeDumper):
    """Bodies share sub-objects; YAML must repeat them rather than print anchors and aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_STR, _INT, _BOOL, _NULL = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "bool", "null"))
_SEQ, _MAP = "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"


class _FastPlainDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """_PlainDumper with libyaml's emitter, and a lean representer for JSON data.

    libyaml only emits; building PyYAML's node graph in Python was most of the time (figures in
    docs/operations.md, "Measurements behind the code"). The graph built here is the one SafeRepresenter builds
    for dicts, lists, strings, integers, booleans and None under `default_flow_style=False` (same
    tags, values and styles; a fresh node per occurrence, so no anchors), and the implicit-tag
    resolution of a scalar is computed once per distinct value, the same keys and values recurring
    hundreds of thousands of times.
    """

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def represent(self, data: Any) -> None:
        self._resolved: Dict[Tuple[str, Tuple[bool, bool]], str] = {}
        super().represent(data)

    def represent_data(self, data: Any) -> yaml.Node:
        kind = type(data)
        if kind is str:
            return yaml.ScalarNode(_STR, data)
        if kind is dict:
            node = self.represent_data
            return yaml.MappingNode(_MAP, [(node(k), node(v)) for k, v in data.items()], flow_style=False)
        if kind is list:
            return yaml.SequenceNode(_SEQ, [self.represent_data(item) for item in data], flow_style=False)
        if kind is bool:
            return yaml.ScalarNode(_BOOL, "true" if data else "false")
        if kind is int:
            return yaml.ScalarNode(_INT, str(data))
        if data is None:
            return yaml.ScalarNode(_NULL, "null")
        return super().represent_data(data)

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is not yaml.ScalarNode:
            return super().resolve(kind, value, implicit)
        key = (value, implicit)
        tag = self._resolved.get(key)
        if tag is None:
            tag = self._resolved[key] = super().resolve(kind, value, implicit)
        return tag


def dump(data: Any, plain_strings: bool) -> bytes:
    """`data` in block style without aliases, keys in their order: through libyaml's emitter when
    `plain_strings` (every string printable ASCII, no empty key), else PyYAML's own."""
    return yaml.dump(data, Dumper=_FastPlainDumper if plain_strings else _PlainDumper, sort_keys=False,
                     default_flow_style=False, encoding="utf-8")
