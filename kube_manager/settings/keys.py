"""INI keys derived from the settings tree, so that no table runs parallel to it.

A field that operators may set is declared with `setting(...)`: its INI key and section (as SPEC
section 9 and the original contrail-kube-manager spell them), the parser of its text, and its
documentation. `derive` walks the tree of dataclasses and collects those fields into the one table
the loader, the command line, the sample-file test and the introspect page read. A field declared
with plain `field(...)` is a setting with a default that no file sets (kopf's settings are all
like that); it is documented where it is declared.
"""
from __future__ import annotations

import functools
import typing
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any, Callable, Dict, Optional, Tuple

_METADATA = "kube_manager.settings.ini"


@dataclass(frozen=True)
class IniKey:
    """Where a setting lives in the INI file and how its text becomes a value."""

    name: str                       # the INI key, e.g. `vnc_endpoint_port`
    section: str                    # DEFAULTS, KUBERNETES, VNC or AUTH
    parse: Callable[[str], Any]     # text -> value; raises ValueError with the reason
    doc: str                        # why the setting exists and its unit; the flag's help
    secret: bool = False            # never on the command line, in a repr, a page or a log line
    path: Tuple[str, ...] = ()      # attribute path in the tree, e.g. ("vnc", "port"); set by derive
    short_flag: str = ""            # the spelling the offline commands use for the same choice

    @property
    def exposed(self) -> bool:
        """Shown on the introspect page: nothing of AUTH (who logs in where), no secret."""
        return not self.secret and self.section != "AUTH"

    @property
    def where(self) -> str:
        """How error messages name the key: `[VNC] vnc_endpoint_port`."""
        return f"[{self.section}] {self.name}"

    @property
    def flag(self) -> str:
        """The command-line flag that overrides the file: `--vnc-endpoint-port` (or the offline
        commands' spelling of the same choice, `--semantics`, when the key has one)."""
        return self.short_flag or self.long_flag

    @property
    def long_flag(self) -> str:
        """The flag spelt after the key, accepted as well."""
        return "--" + self.name.replace("_", "-")

    @property
    def flags(self) -> Tuple[str, ...]:
        return (self.short_flag, self.long_flag) if self.short_flag else (self.long_flag,)


def setting(key: str, section: str, parse: Callable[[str], Any], doc: str, default: Any = None, *,
            default_factory: Optional[Callable[[], Any]] = None, secret: bool = False,
            short_flag: str = "") -> Any:
    """A dataclass field that the INI file and the command line set (see the module docstring).

    A secret field is left out of the dataclass's repr, so printing the settings never shows it.
    `short_flag`: the daemon's flag when the offline commands already spell the same choice so.
    """
    metadata = {_METADATA: IniKey(key, section, parse, doc, secret, short_flag=short_flag)}
    if default_factory is not None:
        return field(default_factory=default_factory, repr=not secret, metadata=metadata)
    return field(default=default, repr=not secret, metadata=metadata)


def derive(root: type) -> Dict[str, IniKey]:
    """Every INI key of the tree under `root`, by key name, each with its attribute path."""
    keys: Dict[str, IniKey] = {}

    def walk(cls: type, path: Tuple[str, ...]) -> None:
        hints = typing.get_type_hints(cls)
        for item in fields(cls):
            key = item.metadata.get(_METADATA)
            if key is not None:
                if key.name in keys:
                    raise TypeError(f"INI key {key.name} declared twice in the settings tree")
                keys[key.name] = replace(key, path=path + (item.name,))
            elif is_dataclass(hints[item.name]):
                walk(hints[item.name], path + (item.name,))

    walk(root, ())
    return keys


def get(root: Any, key: IniKey) -> Any:
    """The value of `key` in the tree `root`."""
    return functools.reduce(getattr, key.path, root)


def assign(root: Any, key: IniKey, value: Any) -> None:
    """Set `key` in the tree `root` to `value`."""
    setattr(functools.reduce(getattr, key.path[:-1], root), key.path[-1], value)
