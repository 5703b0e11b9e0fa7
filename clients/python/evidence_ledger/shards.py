"""Routing by the shard map (deploy/README.md): a team's receipts and
queries go to its shard, each shard its own log with origin
<base>/shard-<n>.

    shard_map = ShardMap.load("/etc/ledger/shard-map.json")
    emitter = ShardedEmitter(shard_map, credentials)
    emitter.emit(receipt)            # to shard_map.address_for(receipt.team)

A team pinned under "teams" goes to that shard; any other team to shard
FNV-1a-64(team) mod (number of shards), as ledgerctl computes it
(cmd/shard_map.h).
"""
import json
from typing import Any, Dict, List, Mapping, Optional

import grpc

from evidence_ledger.dashboard import Dashboard
from evidence_ledger.emitter import _FOREVER, Emitter, Receipt, Result, plain_text_refusal


def fnv1a64(text: str) -> int:
    h = 14695981039346656037
    for byte in text.encode():
        h = ((h ^ byte) * 1099511628211) % (1 << 64)
    return h


class ShardMap:
    def __init__(self, doc: Mapping[str, Any]):
        if doc.get("version") != 1:
            raise ValueError("shard map: version: must be 1")
        shards = sorted(doc.get("shards") or [], key=lambda s: s.get("shard", -1))
        if not shards or [s.get("shard") for s in shards] != list(range(len(shards))):
            raise ValueError("shard map: shards: numbered 0 to n-1, each once")
        self.addresses: List[str] = [s["address"] for s in shards]
        self.teams: Dict[str, int] = dict(doc.get("teams") or {})
        for team, n in self.teams.items():
            if not isinstance(n, int) or not 0 <= n < len(shards):
                raise ValueError("shard map: teams.%s: not a shard of this map" % team)

    @classmethod
    def load(cls, path: str) -> "ShardMap":
        with open(path) as f:
            return cls(json.load(f))

    def shard_for(self, team: str) -> int:
        return self.teams.get(team, fnv1a64(team) % len(self.addresses))

    def address_for(self, team: str) -> str:
        return self.addresses[self.shard_for(team)]


def _check_plain_text(shard_map: ShardMap, credentials: Optional[grpc.ChannelCredentials], insecure: bool) -> None:
    """Every shard's address checked as an Emitter or a Dashboard checks its target, before any shard is
    dialed: ValueError naming the first refused."""
    for n, address in enumerate(shard_map.addresses):
        refusal = plain_text_refusal(address, credentials, insecure)
        if refusal:
            raise ValueError("shard %d: %s" % (n, refusal))


class ShardedEmitter:
    """An Emitter per shard; emit() routes by the receipt's team."""

    def __init__(self, shard_map: ShardMap, credentials: Optional[grpc.ChannelCredentials] = None,
                 **emitter_options: Any):
        """ValueError, before any shard is dialed, for plain text to a shard that is not a loopback address,
        unless insecure=True."""
        _check_plain_text(shard_map, credentials, emitter_options.get("insecure", False))
        self.shard_map = shard_map
        self.emitters = [Emitter(address, credentials, **emitter_options) for address in shard_map.addresses]

    def emit(self, receipt: Receipt) -> None:
        self.emitters[self.shard_map.shard_for(receipt.team)].emit(receipt)

    def flush(self, timeout: Optional[float] = _FOREVER) -> bool:  # type: ignore[assignment]
        """Each shard's Emitter.flush(timeout), one after the other."""
        return all([e.flush(timeout) for e in self.emitters])

    def close(self, timeout: Optional[float] = _FOREVER) -> bool:  # type: ignore[assignment]
        """Each shard's Emitter.close(timeout); their unsettled receipts are in `unsettled`."""
        return all([e.close(timeout) for e in self.emitters])

    @property
    def unsettled(self) -> List[Receipt]:
        return [r for e in self.emitters for r in e.unsettled]

    @property
    def callback_errors(self) -> int:
        return sum(e.callback_errors for e in self.emitters)

    @property
    def refused(self) -> List[Result]:
        return [r for e in self.emitters for r in e.refused]

    @property
    def acknowledged(self) -> int:
        return sum(e.acknowledged for e in self.emitters)

    def __enter__(self) -> "ShardedEmitter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ShardedDashboard:
    """Dashboard calls routed to the team's shard."""

    def __init__(self, shard_map: ShardMap, credentials: Optional[grpc.ChannelCredentials] = None,
                 **options: Any):
        _check_plain_text(shard_map, credentials, options.get("insecure", False))
        self.shard_map = shard_map
        self.dashboards = [Dashboard(address, credentials, **options) for address in shard_map.addresses]

    def for_team(self, team: str) -> Dashboard:
        return self.dashboards[self.shard_map.shard_for(team)]

    def close(self) -> None:
        for d in self.dashboards:
            d.close()
