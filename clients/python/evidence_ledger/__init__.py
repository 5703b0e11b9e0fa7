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

Without credentials a client dials plain text only to a loopback address
(127.0.0.0/8, ::1, localhost) or a unix socket. Any other target, or any
shard's address in a ShardMap, is refused before anything is dialed, with a
ValueError:

    address "10.0.0.5:7420" is not a loopback address: give TLS options (CA, certificate and key), or ask for plain text explicitly with insecure=True

insecure=True is that explicit request.
"""
from evidence_ledger import receipts
from evidence_ledger.dashboard import Dashboard, state_name
from evidence_ledger.emitter import BufferFull, ConfigurationError, Emitter, Result
from evidence_ledger.shards import ShardedDashboard, ShardedEmitter, ShardMap

__all__ = ["BufferFull", "ConfigurationError", "Dashboard", "Emitter", "Result", "ShardMap", "ShardedDashboard",
           "ShardedEmitter", "receipts", "state_name"]
