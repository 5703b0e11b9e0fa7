"""Emitter: sends receipts to the ledger in batches, from a background thread.

    emitter = Emitter("ledger:7420")
    emitter.emit(receipts.model_call(team="team-a", run_id="r1", step_id="s1", ...))
    emitter.close()          # flushes: returns once every receipt is settled

Guarantees:
  - A receipt is settled when the ledger acknowledged it (appended, or
    already there: a retry answered as a duplicate) or refused it for good
    (INVALID_ARGUMENT, PERMISSION_DENIED, ALREADY_EXISTS, ...). Refusals go
    to `on_result` and to `refused`; nothing is dropped silently.
  - UNAVAILABLE, RESOURCE_EXHAUSTED and DEADLINE_EXCEEDED, for a whole
    request or for single receipts, are retried with the same receipt_id
    after an exponential back-off with jitter: the ledger appends a
    (team, receipt_id) once, so retries never make duplicates. Receipt ids
    are unique per team only; ids starting with "ledger." are the ledger's
    and refused at emit.
  - The buffer is bounded (`max_buffer` receipts not yet settled): emit
    blocks until there is room (`block=True`, up to `timeout` seconds) or
    raises BufferFull.
  - close(timeout) that could not flush in time returns False and leaves
    the receipts it could not settle in `unsettled`, for the caller to keep.
"""
import collections
import random
import threading
import time

import grpc

from evidence_ledger import stubs

_RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.DEADLINE_EXCEEDED}
_CODES = {c.value[0]: c for c in grpc.StatusCode}


class BufferFull(Exception):
    """emit() found the buffer full (and was told not to wait, or waited in vain)."""


Result = collections.namedtuple("Result", "receipt_id code message seq duplicate")
# Receipt ids the ledger keeps for itself (CONTRACT section 3).
LEDGER_ID_PREFIX = "ledger."
"""How the ledger settled a receipt: code is a grpc.StatusCode (OK when appended)."""


class Emitter:
    def __init__(self, target, credentials=None, *, batch_size=200, linger=0.02, max_buffer=10000, block=True,
                 timeout=30.0, rpc_timeout=10.0, max_backoff=5.0, on_result=None, channel_options=()):
        """`target` is HOST:PORT; `credentials` a grpc.ChannelCredentials (TLS) or None (plain text)."""
        self._channel = (grpc.secure_channel(target, credentials, channel_options) if credentials
                         else grpc.insecure_channel(target, channel_options))
        self._stub = stubs.ledger_grpc.LedgerServiceStub(self._channel)
        self._batch_size = min(batch_size, 1000)
        self._linger = linger
        self._max_buffer = max_buffer
        self._block = block
        self._timeout = timeout
        self._rpc_timeout = rpc_timeout
        self._max_backoff = max_backoff
        self._on_result = on_result
        self._cv = threading.Condition()
        self._queue = collections.deque()  # receipts not yet sent (or sent and to be retried)
        self._unsettled = 0                # queued + in flight
        self._closed = False
        self._stop = False
        self.unsettled = []  # after close: receipts never settled
        self.acknowledged = 0
        self.duplicates = 0
        self.retries = 0
        self.refused = []  # Results of receipts the ledger refused for good
        self._thread = threading.Thread(target=self._run, name="evidence-ledger-emitter", daemon=True)
        self._thread.start()

    def emit(self, receipt):
        """Queues a receipt (a receipt_pb2.Receipt with its receipt_id set)."""
        if not receipt.receipt_id:
            raise ValueError("receipt_id: required (retries rely on it)")
        if receipt.receipt_id.startswith(LEDGER_ID_PREFIX):
            raise ValueError("receipt_id: '%s' is in the ledger's namespace: ids starting with '%s' are "
                             "written by the ledger only" % (receipt.receipt_id, LEDGER_ID_PREFIX))
        deadline = time.monotonic() + self._timeout
        with self._cv:
            if self._closed:
                raise RuntimeError("emitter is closed")
            while self._unsettled >= self._max_buffer:
                left = deadline - time.monotonic()
                if not self._block or left <= 0:
                    raise BufferFull("%d receipts are not settled yet (max_buffer)" % self._unsettled)
                self._cv.wait(left)
            self._queue.append(receipt)
            self._unsettled += 1
            self._cv.notify_all()

    def flush(self, timeout=None):
        """Waits until every receipt emitted so far is settled. False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            while self._unsettled > 0:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cv.wait(left)
        return True

    def close(self, timeout=None):
        """Flushes, then stops the thread and closes the channel. False if the
        flush timed out; the receipts not settled are then in `unsettled`."""
        flushed = self.flush(timeout)
        with self._cv:
            self._closed = True
            self._stop = True
            self._cv.notify_all()
        self._thread.join()
        self._channel.close()
        with self._cv:
            self.unsettled = list(self._queue)
            self._queue.clear()
        return flushed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _settle(self, receipt, result):
        with self._cv:
            self._unsettled -= 1
            if result.code == grpc.StatusCode.OK:
                self.acknowledged += 1
                self.duplicates += 1 if result.duplicate else 0
            else:
                self.refused.append(result)
            self._cv.notify_all()
        if self._on_result:
            self._on_result(receipt, result)

    def _take(self):
        with self._cv:
            while not self._queue and not self._closed:
                self._cv.wait()
            if not self._queue or self._stop:
                return None
            if len(self._queue) < self._batch_size and self._linger > 0:
                self._cv.wait(self._linger)  # let a batch fill
            batch = []
            while self._queue and len(batch) < self._batch_size:
                batch.append(self._queue.popleft())
            return batch

    def _run(self):
        backoff = 0.05
        while True:
            batch = self._take()
            if batch is None:
                return
            try:
                response = self._stub.Append(stubs.ledger.AppendRequest(receipts=batch), timeout=self._rpc_timeout)
            except grpc.RpcError as e:
                if e.code() in _RETRYABLE:
                    self._requeue(batch)
                    self._pause(backoff)
                    backoff = min(backoff * 2, self._max_backoff)
                    continue
                for r in batch:
                    self._settle(r, Result(r.receipt_id, e.code(), e.details(), 0, False))
                continue
            retry = []
            for r, res in zip(batch, response.results):
                code = _CODES.get(res.code, grpc.StatusCode.UNKNOWN)
                if code in _RETRYABLE:
                    retry.append(r)
                else:
                    self._settle(r, Result(r.receipt_id, code, res.message, res.seq, res.duplicate))
            if retry:
                self._requeue(retry)
                self._pause(backoff)
                backoff = min(backoff * 2, self._max_backoff)
            else:
                backoff = 0.05

    def _pause(self, backoff):
        """Sleeps for the back-off with jitter, or until close stops the thread."""
        with self._cv:
            if not self._stop:
                self._cv.wait(backoff * (0.5 + random.random()))

    def _requeue(self, batch):
        with self._cv:
            self.retries += len(batch)
            self._queue.extendleft(reversed(batch))  # first again, in order
