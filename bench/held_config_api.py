"""A config API that already holds exactly the desired state, served from memory: the daemon's
steady state at any size in minutes.

A daemon restarted against a config API that holds everything it wants lists every object
(`db.actual` and the reconciler's indexes filled from the listing, the same representation a cold
start leaves: `compare.kept` of each body) and writes nothing. `HeldConfigApi` answers those
listings from the translator's desired state, each body copied through JSON as a server's answer
is decoded (fresh strings and lists, a fresh "uuid", a tag's "tag_id"), and each pod's VMI carrying
the pod's tags; there is no HTTP and no server process. Any other call (a write, a read) is
counted in `unexpected` and answered with an error: a steady state that needs one is not steady.

At XLarge (538,000 objects) this takes minutes where a cold start against the embedded server
takes an hour, and the bench's process holds only the daemon's state (with `SyntheticStream`, not
the bench's input either).
"""
from __future__ import annotations

import uuid as uuidlib
from itertools import islice
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence

import orjson

from kube_manager.records.db import Database
from vnc_client.errors import VncError

VMI = "virtual-machine-interface"
VN_PREFIX = ["default-domain", "default-project"]


class HeldConfigApi:
    """Listings of what `db` desires and of one tagged VMI per pod; see the module docstring."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self.unexpected: List[str] = []
        self.listings = 0

    def list_pages(self, obj_type: str, page_limit: Optional[int], *, detail: bool = False,
                   fields: Optional[Sequence[str]] = None, exclude_hrefs: bool = False) -> Iterator[List[Dict[str, Any]]]:
        """As `VncClient.list_pages` answers (no hrefs are made up, asked for or not): each page
        made when it is asked for, as a server renders it, so that only the pages the daemon holds
        are in memory."""
        if obj_type == VMI:
            answers: Iterator[Dict[str, Any]] = (self._vmi(record) for record in self._db.pods.values()
                                                 if not record.host_network)
        else:
            wanted = None if detail or fields is None else {"fq_name", "annotations", *fields}
            answers = (self._answer(obj_type, body, wanted) for body in self._db.desired.get(obj_type, {}).values())
        while True:
            self.listings += 1
            page = list(islice(answers, page_limit))
            yield page
            if page_limit is None or len(page) < page_limit:
                return
            del page

    @staticmethod
    def _answer(obj_type: str, body: Mapping[str, Any], wanted: "Optional[set[str]]") -> Dict[str, Any]:
        shown = body if wanted is None else {k: v for k, v in body.items() if k in wanted}
        answer: Dict[str, Any] = orjson.loads(orjson.dumps(shown))
        answer["uuid"] = str(uuidlib.uuid4())
        if obj_type == "tag":
            answer["tag_id"] = f"0x{uuidlib.uuid4().int & 0xFFFFFFFF:08x}"
        return answer

    @staticmethod
    def _vmi(record: Any) -> Dict[str, Any]:
        name = f"{record.name}__{record.uid}"
        return {"uuid": str(uuidlib.uuid4()), "fq_name": VN_PREFIX + [name],
                "virtual_machine_refs": [{"to": [name], "uuid": record.uid}],
                "tag_refs": [{"to": tag.split(":"), "uuid": str(uuidlib.uuid4())} for tag in record.tags]}

    def __getattr__(self, name: str) -> Any:
        """Every other call of the client (create, update, read, set_tags, ...): refused, noted."""
        if name.startswith("_"):
            raise AttributeError(name)

        def refused(*args: Any, **kwargs: Any) -> Any:
            self.unexpected.append(f"{name}{args[:2]}")
            raise VncError(f"the held config API answers listings only, not {name}")
        return refused
