"""The root of the settings tree, and the INI key table derived from it."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Dict, List

from .keys import derive, get
from .tree import (AuthSettings, ClusterSettings, EmulationSettings, HealthSettings, IntrospectSettings,
                   KubernetesSettings, LeaderElectionSettings, LogSettings, ReconcilerSettings, StagedSettings,
                   VncSettings, WatchSettings)


@dataclass
class Origin:
    """Where the values came from and what loading found. Logging is not set up while the settings
    load (it depends on them), so the findings wait here until `log` is called."""

    files: List[str] = field(default_factory=list)          # the `-c` files, in the order read
    warnings: List[str] = field(default_factory=list)       # unknown or misplaced keys and sections
    ignored_keys: List[str] = field(default_factory=list)   # keys of the original not used here

    def log(self, logger: logging.Logger) -> None:
        """Log what loading found; called once logging is configured."""
        for warning in self.warnings:
            logger.warning("configuration: %s", warning)
        if self.ignored_keys:
            logger.info("configuration: ignoring settings of the original kube-manager not used "
                        "here: %s", ", ".join(self.ignored_keys))


@dataclass
class OperatorSettings:
    """Everything the daemon can be told, one branch per concern (see `tree`)."""

    cluster: ClusterSettings = field(default_factory=ClusterSettings)
    kubernetes: KubernetesSettings = field(default_factory=KubernetesSettings)
    emulation: EmulationSettings = field(default_factory=EmulationSettings)
    watch: WatchSettings = field(default_factory=WatchSettings)
    election: LeaderElectionSettings = field(default_factory=LeaderElectionSettings)
    health: HealthSettings = HealthSettings()   # frozen: one shared default is safe
    vnc: VncSettings = field(default_factory=VncSettings)
    auth: AuthSettings = field(default_factory=AuthSettings)
    reconciler: ReconcilerSettings = field(default_factory=ReconcilerSettings)
    introspect: IntrospectSettings = field(default_factory=IntrospectSettings)
    staged: StagedSettings = field(default_factory=StagedSettings)
    log: LogSettings = field(default_factory=LogSettings)
    origin: Origin = field(default_factory=Origin)

    @property
    def lease_name(self) -> str:
        return self.election.lease_name(self.cluster.name)

    def secrets(self) -> List[str]:
        """The secret values set, for log redaction."""
        return [get(self, key) for key in KEYS.values() if key.secret and get(self, key)]

    def public_view(self) -> Dict[str, Any]:
        """The settings safe to show on the introspect page, by INI key: nothing of AUTH, no secret."""
        view: Dict[str, Any] = {name: get(self, key) for name, key in KEYS.items() if key.exposed}
        view["log_level"] = self.log.level_name
        view["config_files"] = list(self.origin.files)
        return view


KEYS = derive(OperatorSettings)              # INI key name -> IniKey, in the tree's order
SECTIONS = frozenset(key.section for key in KEYS.values())
