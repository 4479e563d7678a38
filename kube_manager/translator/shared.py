"""The objects policies share: tags and address groups, counted by reference (SPEC 2, 3).

Two policies naming the same label, namespace, selector or ipBlock use one tag or address group;
it exists while some policy (or, for identity tags, some namespace) refers to it. The exact mode's
rules count here too, for the tags and the address groups they add: one count per object. A tag's origin
decides which pods carry it, so referencing or releasing one marks pods for re-tagging: a selector
tag's members at once, a namespace label's pods at the next flush (`Marks.origins`). A pod label's
tag goes only on the pods of the scopes its endpoints select in (SPEC 2), counted here too; a scope
that comes or goes is marked (`Marks.scopes`) for `podtags` to re-tag its pods.
"""
from __future__ import annotations

from typing import Any, Collection, Dict, FrozenSet, Mapping, Optional, Protocol, Sequence, Tuple

from .bodies import ADDRESS_GROUP, TAG, BodyFactory, FqName
from .cidr import IpBlock, Network
from .marks import Marks
from .membership import SelectorMembership
from .model import SelectorDef
from .scope_tags import POD_LABEL, LabelOrigin, ScopedLabel, TagOrigin
from .store import DesiredObjects

Label = Tuple[str, str]


class SharedUse(Protocol):
    """What a rendering uses of the shared objects: a NetworkPolicy's, or a tier of
    ClusterNetworkPolicies."""

    @property
    def tags(self) -> Mapping[str, TagOrigin]: ...

    @property
    def address_groups(self) -> Mapping[FqName, IpBlock]: ...

    @property
    def scoped_labels(self) -> Collection[ScopedLabel]: ...


class SharedObjects:
    """Reference counts of tags, address groups and pod label scopes, with what they stand for."""

    def __init__(self, store: DesiredObjects, bodies: BodyFactory, membership: SelectorMembership,
                 marks: Marks) -> None:
        self._store = store
        self._bodies = bodies
        self._membership = membership
        self._marks = marks
        self._tag_refs: Dict[str, int] = {}
        self.origins: Dict[str, TagOrigin] = {}  # tag -> the label or selector it stands for
        # Referenced label tags by their (key, value), pod labels and namespace labels apart.
        self.pod_label_tags: Dict[Label, str] = {}
        self.namespace_label_tags: Dict[Label, str] = {}
        # Where the endpoints naming each pod label select (SPEC 2): namespaces and namespace label
        # sets (the empty set: every namespace), counted over the policies' renderings.
        self._label_namespaces: Dict[Label, Dict[str, int]] = {}
        self._label_selectors: Dict[Label, Dict[FrozenSet[Label], int]] = {}
        self._address_group_refs: Dict[FqName, int] = {}

    def apply(self, old: Optional[SharedUse], new: Optional[SharedUse]) -> bool:
        """Move one policy's references from `old` to `new`, the new before the old are released
        (make before break); whether its set of tags or address groups changed."""
        if old is None:  # a new policy (every one of a bulk load): nothing to compare or release
            return new is not None and self._ref_all(new)
        old_tags = old.tags
        new_tags = new.tags if new is not None else {}
        old_groups = old.address_groups
        new_groups = new.address_groups if new is not None else {}
        for tag, origin in new_tags.items():
            if tag not in old_tags:
                self.ref_tag(tag, origin)
        for fq_name, block in new_groups.items():
            if fq_name not in old_groups:
                self.ref_address_group(fq_name, block.prefixes)
        old_scoped = old.scoped_labels
        new_scoped = new.scoped_labels if new is not None else ()
        if old_scoped != new_scoped:
            for scoped in new_scoped:
                self._ref_scope(scoped, 1)
            for scoped in old_scoped:
                self._ref_scope(scoped, -1)
        for tag in old_tags:
            if tag not in new_tags:
                self.unref_tag(tag)
        for fq_name in old_groups:
            if fq_name not in new_groups:
                self.unref_address_group(fq_name)
        return old_tags.keys() != new_tags.keys() or old_groups.keys() != new_groups.keys()

    def _ref_all(self, new: SharedUse) -> bool:
        """`apply(None, new)`: a reference to each tag, address group and scope of `new`."""
        refs = self._tag_refs
        for tag, origin in new.tags.items():
            count = refs.get(tag, 0)
            if count:  # (inline: most tags are named by many policies)
                refs[tag] = count + 1
            else:
                self.ref_tag(tag, origin)
        for fq_name, block in new.address_groups.items():
            self.ref_address_group(fq_name, block.prefixes)
        for scoped in new.scoped_labels:
            self._ref_scope(scoped, 1)
        return bool(new.tags or new.address_groups)

    def ref_tag(self, tag: str, origin: Optional[TagOrigin]) -> None:
        """One more user of `tag`; `origin` None for identity tags, which no label decides."""
        count = self._tag_refs.get(tag, 0)
        self._tag_refs[tag] = count + 1
        if count:
            return
        self._store.put(TAG, (tag,), self._bodies.tag(tag))
        if origin is not None:
            self.origins[tag] = origin
            if isinstance(origin, SelectorDef):
                self._marks.mark_pods(self._membership.activate(tag, origin))
            else:
                self._label_tags(origin)[origin[1:]] = tag
                if origin[0] != POD_LABEL:  # a pod label's pods are marked by its scopes
                    self._marks.origins.append(origin)

    def unref_tag(self, tag: str) -> None:
        count = self._tag_refs[tag] - 1
        if count:
            self._tag_refs[tag] = count
            return
        del self._tag_refs[tag]
        self._store.drop(TAG, (tag,))
        origin = self.origins.pop(tag, None)
        if isinstance(origin, SelectorDef):
            self._marks.mark_pods(self._membership.retire(tag))
        elif origin is not None:
            del self._label_tags(origin)[origin[1:]]
            if origin[0] != POD_LABEL:
                self._marks.origins.append(origin)

    def in_scope(self, pair: Label, namespace: str, namespace_labels: FrozenSet[Label]) -> bool:
        """Some endpoint naming the pod label `pair` can select a pod of `namespace` (SPEC 2)."""
        namespaces = self._label_namespaces.get(pair)
        if namespaces is not None and namespace in namespaces:
            return True
        return any(labels <= namespace_labels for labels in self._label_selectors.get(pair, ()))

    def _label_tags(self, origin: LabelOrigin) -> Dict[Label, str]:
        return self.pod_label_tags if origin[0] == POD_LABEL else self.namespace_label_tags

    def _ref_scope(self, scoped: ScopedLabel, delta: int) -> None:
        """Count one more (+1) or one fewer (-1) endpoint naming a pod label in a scope; the pods
        of the scope are re-tagged when the scope comes or goes."""
        key, value, scope = scoped
        table: Dict[Any, Dict[Any, int]] = (
            self._label_namespaces if isinstance(scope, str) else self._label_selectors)
        counts = table.get((key, value))
        if counts is None:
            counts = table[(key, value)] = {}
        count = counts.get(scope, 0) + delta
        if count:
            counts[scope] = count
        else:
            del counts[scope]
            if not counts:
                del table[(key, value)]
        if count == (1 if delta > 0 else 0):
            self._marks.scopes.append(scoped)

    def ref_address_group(self, fq_name: FqName, prefixes: Sequence[Network]) -> None:
        """One more user of an address group: a NetworkPolicy naming an ipBlock, or an exact-mode
        rule naming networks no ipBlock names."""
        count = self._address_group_refs.get(fq_name, 0)
        self._address_group_refs[fq_name] = count + 1
        if not count:
            self._store.put(ADDRESS_GROUP, fq_name, self._bodies.address_group(fq_name, prefixes))

    def unref_address_group(self, fq_name: FqName) -> None:
        count = self._address_group_refs[fq_name] - 1
        if count:
            self._address_group_refs[fq_name] = count
        else:
            del self._address_group_refs[fq_name]
            self._store.drop(ADDRESS_GROUP, fq_name)
