"""A Python client for the evidence ledger.

    from evidence_ledger import Emitter, Dashboard, receipts

Emitter sends receipts in batches from a background thread and retries
with the same receipt_id until the ledger has them; Dashboard reads step
outcomes and watches changes (state_name(step.state) gives "unknown", ...).
The gRPC stubs are in the wheel (evidence_ledger._generated, made at build
from the ledger's protos), or made in the source tree by
clients/python/generate.sh; scripts/dev-certs.sh makes certificates for
trying TLS. `python -m evidence_ledger.conformance` is the client's runner of
the conformance suite (clients/conformance/PROTOCOL.md).
"""
from evidence_ledger import receipts
from evidence_ledger.dashboard import Dashboard, state_name
from evidence_ledger.emitter import BufferFull, Emitter, Result
from evidence_ledger.shards import ShardedDashboard, ShardedEmitter, ShardMap

__all__ = ["BufferFull", "Dashboard", "Emitter", "Result", "ShardMap", "ShardedDashboard", "ShardedEmitter",
           "receipts", "state_name"]
