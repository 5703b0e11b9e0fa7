"""A Python client for the evidence ledger.

    from evidence_ledger import Emitter, Dashboard, receipts

Emitter sends receipts in batches from a background thread and retries
with the same receipt_id until the ledger has them; Dashboard reads step
outcomes and watches changes (state_name(step.state) gives "unknown", ...).
Stubs come from clients/python/generate.sh; scripts/dev-certs.sh makes
certificates for trying TLS.
"""
from evidence_ledger import receipts  # noqa: F401
from evidence_ledger.dashboard import Dashboard, state_name  # noqa: F401
from evidence_ledger.emitter import BufferFull, Emitter, Result  # noqa: F401
from evidence_ledger.shards import ShardedDashboard, ShardedEmitter, ShardMap  # noqa: F401
