"""The daemon's settings: one tree of documented dataclasses, loaded from the INI file and the
command line (SPEC section 9).

- `tree`: one dataclass per concern (cluster, kubernetes, watch, election, vnc, auth, reconciler,
  introspect, health, log, emulation), each field documented where it is declared;
- `root`: `OperatorSettings`, the root of the tree, and `KEYS`, the INI keys derived from it;
- `keys`: how a field declares its INI key (`setting`) and how the keys are derived (`derive`);
- `values`: the parsers of the keys' text;
- `loading`: the file and the command line -> `OperatorSettings` (`load_settings`, `add_arguments`).
"""
from .keys import IniKey
from .loading import DEFAULT_CONFIG_FILE, add_arguments, load_settings
from .root import KEYS, SECTIONS, OperatorSettings, Origin
from .tree import (AuthSettings, ClusterSettings, EmulationSettings, HealthSettings, IntrospectSettings,
                   KubernetesSettings, LeaderElectionSettings, LogSettings, ReconcilerSettings, VncSettings,
                   WatchSettings)
from .values import EMBEDDED, EMULATED, ConfigError, parse_log_level

__all__ = [
    "AuthSettings", "ClusterSettings", "ConfigError", "DEFAULT_CONFIG_FILE", "EMBEDDED", "EMULATED",
    "EmulationSettings", "HealthSettings", "IniKey", "IntrospectSettings", "KEYS", "KubernetesSettings",
    "LeaderElectionSettings", "LogSettings", "OperatorSettings", "Origin", "ReconcilerSettings", "SECTIONS",
    "VncSettings", "WatchSettings", "add_arguments", "load_settings", "parse_log_level",
]
