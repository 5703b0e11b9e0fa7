"""Emitter: sends receipts to the ledger in batches, from a background thread.

    emitter = Emitter("ledger:7420")
    emitter.emit(receipts.model_call(team="team-a", run_id="r1", step_id="s1", ...))
    if not emitter.close():  # flushes, 30 s at most by default
        keep(emitter.unsettled)
    for result in emitter.refused:
        ...

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
  - flush() and close() wait DEFAULT_TIMEOUT seconds (30) unless told
    otherwise (timeout=None waits for good). close() that could not flush
    in time returns False and leaves the receipts it could not settle in
    `unsettled`, for the caller to keep.
  - `on_result(receipt, result)` is called on the emitter's thread once
    per receipt when it is settled. An exception it raises is logged (the
    "evidence_ledger" logger), counted in `callback_errors`, and never stops
    the sender. Keep it quick: it runs before the next batch is sent.
  - Every retry is logged at WARNING on the "evidence_ledger" logger, with
    the receipts' count, the delay and the reason (the gRPC code and
    message).
  - A configuration error is never retried: a whole request refused with
    UNAUTHENTICATED or PERMISSION_DENIED, or a connection that fails in the
    handshake because the credentials do not match what the server speaks
    (learned from a probe of its TLS handshake, tls_probe: "the server at
    HOST:PORT speaks TLS: give credentials ..."). The batch and every
    receipt queued are settled as refused with it (FAILED_PRECONDITION and
    that message for a TLS mismatch), it is logged once at ERROR and kept in
    `failure`, and emit() raises ConfigurationError from then on: every
    later receipt would meet it too.
  - Replicated shards: `target` may name several nodes of the shard (a list,
    or one string of addresses separated by commas). A node that follows
    refuses an append with UNAVAILABLE naming the leader (`leader=HOST:PORT`):
    the batch goes there at once, with the same credentials and channel
    options (the server name checked as before), and so do the next ones.
    When the followed leader fails (UNAVAILABLE or a deadline) the emitter
    goes back to the configured nodes, and on each such failure moves on to
    the next of them. The receipt_id stays the same on every node, so no
    receipt is appended twice.
"""
import collections
import inspect
import ipaddress
import json
import logging
import random
import socket
import ssl
import threading
import time
from typing import Callable, Deque, List, NamedTuple, Optional, Sequence, Tuple, Union

import grpc

from evidence_ledger import stubs

log = logging.getLogger("evidence_ledger")
DEFAULT_TIMEOUT = 30.0
_FOREVER = object()


def own_connections(options: Sequence[Tuple[str, object]]) -> List[Tuple[str, object]]:
    """Channel options with the channel's connections its own: gRPC shares connections to one address among
    a process's channels (a Dashboard's and an Emitter's), and with them their reconnect back-off."""
    options = list(options)
    if "grpc.use_local_subchannel_pool" not in {name for name, _ in options}:
        options.append(("grpc.use_local_subchannel_pool", 1))
    return options


def _is_loopback(target: str) -> bool:
    """Whether `target`, HOST:PORT or a gRPC name ("dns:///HOST:PORT", "passthrough:///HOST:PORT",
    "unix:PATH"), stays on this machine. A name with a DNS authority ("dns://SERVER/HOST:PORT") does not:
    that server answers for the host."""
    if target.startswith("unix:"):
        return True
    for scheme in ("dns:///", "passthrough:///"):
        if target.startswith(scheme):
            target = target[len(scheme):]
            break
    host = target
    if host.startswith("["):  # [IPV6]:PORT
        host, bracket, port = host[1:].partition("]")
        if not bracket or port and not port.startswith(":"):
            return False
    elif host.count(":") == 1:  # HOST:PORT; more colons: an IPv6 address without a port
        host = host.partition(":")[0]
    if host.lower() == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback


def plain_text_refusal(target: str, credentials: Optional[grpc.ChannelCredentials], insecure: bool) -> Optional[str]:
    """Why a channel to `target` is refused before anything is dialed: plain text (no credentials) to a
    target that is not a loopback address (127.0.0.0/8, ::1, localhost) or a unix socket, not asked for
    with `insecure`. None when it is not refused."""
    if credentials is not None or insecure or _is_loopback(target):
        return None
    return ("address %s is not a loopback address: give TLS options (CA, certificate and key), or ask for plain "
            "text explicitly with insecure=True" % json.dumps(target))


_RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.DEADLINE_EXCEEDED}
_CODES = {c.value[0]: c for c in grpc.StatusCode}
_REFUSED_CALLER = {grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED}


class ConfigurationError(Exception):
    """The emitter met an error no retry mends (Emitter.failure): its credentials do not match what the server
    speaks, or the ledger refused its identity (UNAUTHENTICATED, PERMISSION_DENIED). emit() raises it."""


def _host_port(target: str) -> Optional[Tuple[str, int]]:
    for scheme in ("dns:///", "passthrough:///"):
        if target.startswith(scheme):
            target = target[len(scheme):]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or target.startswith("unix:"):
        return None
    return host.strip("[]"), int(port)


def tls_probe(target: str, timeout: float = 3.0) -> Optional[str]:
    """What the server at `target` (HOST:PORT) speaks, from a TLS handshake with it (ALPN h2, as gRPC; its
    certificate not checked, no client certificate given): "tls" when it took the handshake and waits, or
    sent an alert that is not about a client certificate; "tls-closed" when it closed the connection, or
    asked for a certificate by an alert, once the handshake was done (a server that wants a client
    certificate it was not given); "plain" when it answered the TLS hello with bytes that are not TLS; None
    when it cannot be reached or said nothing. For saying why a connection failed, never a security
    check."""
    address = _host_port(target)
    if address is None:
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        with socket.create_connection(address, timeout=timeout) as raw, context.wrap_socket(raw) as tls:
            tls.settimeout(1.0)  # a server that took the handshake waits for the client's bytes
            try:
                return "tls" if tls.recv(1) else "tls-closed"
            except (socket.timeout, TimeoutError):
                return "tls"
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError, ConnectionResetError):
                return "tls-closed"
            except ssl.SSLError as e:
                return "tls-closed" if "CERTIFICATE" in (e.reason or "") else "tls"
    except ssl.SSLError as e:
        if e.reason in ("WRONG_VERSION_NUMBER", "PACKET_LENGTH_TOO_LONG", "HTTP_REQUEST"):
            return "plain"
        return None if isinstance(e, ssl.SSLEOFError) else "tls"
    except OSError:
        return None


_HOW = "grpc.ssl_channel_credentials(root_certificates, private_key, certificate_chain)"


def tls_mismatch(code: grpc.StatusCode, message: str, target: str, tls: bool,
                 probe: Callable[[str], Optional[str]] = tls_probe) -> Optional[str]:
    """What to give, when a request to `target` failed to connect (closed, or refused in the handshake) and
    a probe of the server (tls_probe) shows that the credentials, TLS (`tls`) or not, do not match what it
    speaks; None for any other failure."""
    if code != grpc.StatusCode.UNAVAILABLE or not message.startswith("failed to connect to all addresses"):
        return None
    if not any(s in message for s in ("Socket closed", "andshake", "Connection reset", "End of TCP stream")):
        return None
    speaks = probe(target)
    if not tls and speaks in ("tls", "tls-closed"):
        return "the server at %s speaks TLS: give credentials (%s)" % (target, _HOW)
    if tls and speaks == "tls-closed":
        return ("the server at %s closed the connection in the TLS handshake: it wants a client certificate "
                "issued by a CA it trusts: give credentials with one (%s)" % (target, _HOW))
    if tls and speaks == "plain":
        return ("the server at %s speaks plain text, not TLS: give no credentials (plain text goes to a loopback "
                "address only, or with insecure=True)" % target)
    return None


def leader_named(code: grpc.StatusCode, message: str) -> Optional[str]:
    """The leader a follower's refusal names: HOST:PORT after "leader=" in an UNAVAILABLE message (up to a
    space, ';' or ')'), as ledgerctl reads it (cmd/ledgerctl.cc LeaderNamed); None for any other status."""
    if code != grpc.StatusCode.UNAVAILABLE:
        return None
    at = message.find("leader=")
    if at < 0:
        return None
    rest = message[at + len("leader="):]
    for end, c in enumerate(rest):
        if c in " ;)":
            rest = rest[:end]
            break
    return rest or None


def parse_targets(target: Union[str, Sequence[str]]) -> List[str]:
    """The nodes `target` names: one address, a list of them, or a string of them separated by commas.
    ValueError when it names none or has an empty one."""
    targets = target.split(",") if isinstance(target, str) else list(target)
    targets = [t.strip() if isinstance(t, str) else t for t in targets]
    if not targets or not all(isinstance(t, str) and t for t in targets):
        raise ValueError("target: HOST:PORT, or several separated by commas (the nodes of a shard), not %r"
                         % (target,))
    return targets


# Follows in a row, without an accepted batch between them, sent at once; after these the emitter backs off
# before each follow (two nodes that each name the other, while a failover settles, are not hammered).
_FOLLOWS_AT_ONCE = 3
_FAILED_OVER = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}


class Targets:
    """Where the emitter sends next: the leader a node named, else the configured nodes in turn. Pure (no
    I/O); used by the emitter's thread only."""

    def __init__(self, configured: Sequence[str], may_dial: Callable[[str], bool] = lambda address: True):
        """`may_dial(address)`: whether a leader that a node names may be dialed (plain text off loopback
        is not, unless asked for)."""
        self.configured = list(configured)
        self.followed: Optional[str] = None
        self._at = 0
        self._may_dial = may_dial
        self._follows = 0

    @property
    def current(self) -> str:
        return self.followed or self.configured[self._at]

    def accepted(self) -> None:
        """The current node took a batch."""
        self._follows = 0

    def failed(self, code: grpc.StatusCode, message: str) -> bool:
        """After a batch, or some of its receipts, failed with `code`: moves to the leader the message names,
        or off a node that failed over. True when the batch goes again at once (to the leader just named),
        False when it waits its back-off first."""
        leader = leader_named(code, message)
        if leader is not None and leader != self.current and self._may_dial(leader):
            self.followed = leader
            self._follows += 1
            return self._follows <= _FOLLOWS_AT_ONCE
        if code in _FAILED_OVER:
            if self.followed is not None:
                self.followed = None  # back to the configured node that named it
            else:
                self._at = (self._at + 1) % len(self.configured)
        return False


class BufferFull(Exception):
    """emit() found the buffer full (and was told not to wait, or waited in vain)."""


class Result(NamedTuple):
    """How the ledger settled a receipt."""
    receipt_id: str
    code: grpc.StatusCode  # OK when appended (or already there); else why it was refused, by name
    message: str           # the refusal's message, naming the field and the rule; "" when OK
    seq: int               # the entry's position in the log when OK
    duplicate: bool        # OK because the ledger already held this receipt (a retry)


# Receipt ids the ledger keeps for itself (CONTRACT section 3).
LEDGER_ID_PREFIX = "ledger."

Receipt = stubs.receipt.Receipt
OnResult = Callable[[Receipt, Result], None]


def _check_callback(on_result: Optional[OnResult]) -> None:
    if on_result is None:
        return
    if not callable(on_result):
        raise TypeError("on_result: must be a function on_result(receipt, result), not %r" % (on_result,))
    try:
        signature = inspect.signature(on_result)
    except (TypeError, ValueError):
        return  # a builtin without a signature: trust it
    try:
        signature.bind(None, None)
    except TypeError:
        raise TypeError("on_result: must take two arguments, (receipt, result); %s%s takes other arguments"
                        % (getattr(on_result, "__name__", "the function"), signature)) from None


class Emitter:
    def __init__(self, target: Union[str, Sequence[str]], credentials: Optional[grpc.ChannelCredentials] = None, *,
                 batch_size: int = 200, linger: float = 0.02, max_buffer: int = 10000, block: bool = True,
                 timeout: float = 30.0, rpc_timeout: float = 10.0, max_backoff: float = 5.0,
                 on_result: Optional[OnResult] = None, channel_options: Sequence[Tuple[str, object]] = (),
                 flush_timeout: float = DEFAULT_TIMEOUT, insecure: bool = False):
        """`target` is HOST:PORT, or the nodes of a replicated shard: a list of them, or one string of them
        separated by commas ("node-a:7420,node-b:7420"); `credentials` a grpc.ChannelCredentials for TLS
        (grpc.ssl_channel_credentials(root_certificates, private_key, certificate_chain)) or None for plain
        text, which is refused (ValueError, before anything is dialed) for a target that is not a loopback
        address or a unix socket, unless `insecure`: plain text to a target off this machine, where anyone on
        the way reads the receipts and the ledger cannot tell who sent them. A leader that a node names is
        followed only where a target would be dialed. `timeout`: how long emit() waits
        for room in a full buffer; `flush_timeout`: how long flush() and close() wait when not told.
        `on_result(receipt, result)`: see the module's docstring; TypeError when it cannot take those two
        arguments."""
        targets = parse_targets(target)
        for t in targets:
            refusal = plain_text_refusal(t, credentials, insecure)
            if refusal:
                raise ValueError(refusal)
        _check_callback(on_result)
        self._flush_timeout = flush_timeout
        self._targets = Targets(targets, lambda address: not plain_text_refusal(address, credentials, insecure))
        self._credentials = credentials
        self._channel_options = own_connections(channel_options)
        self._connect()
        self._batch_size = min(batch_size, 1000)
        self._linger = linger
        self._max_buffer = max_buffer
        self._block = block
        self._timeout = timeout
        self._rpc_timeout = rpc_timeout
        self._max_backoff = max_backoff
        self._on_result = on_result
        self._cv = threading.Condition()
        self._queue: Deque[Receipt] = collections.deque()  # receipts not yet sent (or sent and to be retried)
        self._unsettled = 0                # queued + in flight
        self._closed = False
        self._stop = False
        self.unsettled: List[Receipt] = []  # after close: receipts never settled
        self.acknowledged = 0
        self.duplicates = 0
        self.retries = 0
        self.callback_errors = 0  # exceptions on_result raised (logged, then ignored)
        self.refused: List[Result] = []  # receipts the ledger refused for good
        self.failure: Optional[ConfigurationError] = None  # the configuration error that stopped the emitter
        self._answered = set()  # targets that answered a request: a later closed handshake is not a mismatch
        self._thread = threading.Thread(target=self._run, name="evidence-ledger-emitter", daemon=True)
        self._thread.start()

    def emit(self, receipt: Receipt) -> None:
        """Queues a receipt (made with evidence_ledger.receipts). ValueError for a receipt without its id
        or with an id of the ledger's; BufferFull when the buffer stays full; RuntimeError after close;
        ConfigurationError once the emitter met one (`failure`)."""
        if not receipt.receipt_id:
            raise ValueError("receipt_id: required (retries rely on it)")
        if receipt.receipt_id.startswith(LEDGER_ID_PREFIX):
            raise ValueError("receipt_id: '%s' is in the ledger's namespace: ids starting with '%s' are "
                             "written by the ledger only" % (receipt.receipt_id, LEDGER_ID_PREFIX))
        deadline = time.monotonic() + self._timeout
        with self._cv:
            if self.failure is not None:
                raise ConfigurationError(str(self.failure))
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

    def flush(self, timeout: Optional[float] = _FOREVER) -> bool:  # type: ignore[assignment]
        """Waits until every receipt emitted so far is settled: at most `timeout` seconds (default: the
        emitter's flush_timeout, 30 s; None: for good). False on timeout."""
        if timeout is _FOREVER:
            timeout = self._flush_timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            while self._unsettled > 0:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cv.wait(left)
        return True

    def close(self, timeout: Optional[float] = _FOREVER) -> bool:  # type: ignore[assignment]
        """Flushes (as flush(timeout)), then stops the thread and closes the channel. False if the flush
        timed out; the receipts not settled are then in `unsettled`, for the caller to keep."""
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

    def __enter__(self) -> "Emitter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connect(self) -> None:
        """A new channel. gRPC's own channel, once a connection failed, fails every call at once until its
        reconnect back-off (up to 120 s) has passed, whatever the emitter's back-off: a restarted ledger would
        wait for it. A new channel, on connections of its own, connects at its first call. It goes to the
        current target (the leader followed, or a configured node)."""
        self._connected = target = self._targets.current
        self._channel = (grpc.secure_channel(target, self._credentials, self._channel_options)
                         if self._credentials else grpc.insecure_channel(target, self._channel_options))
        self._stub = stubs.ledger_grpc.LedgerServiceStub(self._channel)

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
            try:
                self._on_result(receipt, result)
            except Exception:  # noqa: BLE001 - a caller's bug must not stop the sender
                with self._cv:
                    self.callback_errors += 1
                log.exception("on_result raised for receipt %s (%s); the emitter goes on", result.receipt_id,
                              result.code.name)

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
                if self._configuration_error(batch, e.code(), e.details() or ""):
                    continue
                if e.code() in _RETRYABLE:
                    self._requeue(batch)
                    at_once = self._failed(e.code(), e.details() or "")
                    if e.code() == grpc.StatusCode.UNAVAILABLE or self._connected != self._targets.current:
                        self._channel.close()
                        self._connect()
                    if not at_once:
                        self._pause(backoff, len(batch), e.code(), e.details())
                        backoff = min(backoff * 2, self._max_backoff)
                    continue
                for r in batch:
                    self._settle(r, Result(r.receipt_id, e.code(), e.details(), 0, False))
                continue
            self._targets.accepted()
            self._answered.add(self._connected)
            retry = []
            why = None
            for r, res in zip(batch, response.results):
                code = _CODES.get(res.code, grpc.StatusCode.UNKNOWN)
                if code in _RETRYABLE:
                    retry.append(r)
                    why = why or (code, res.message)
                else:
                    self._settle(r, Result(r.receipt_id, code, res.message, res.seq, res.duplicate))
            if retry:
                self._requeue(retry)
                at_once = self._failed(*why) if leader_named(*why) else False
                if self._connected != self._targets.current:
                    self._channel.close()
                    self._connect()
                if not at_once:
                    self._pause(backoff, len(retry), *why)
                    backoff = min(backoff * 2, self._max_backoff)
            else:
                backoff = 0.05

    def _configuration_error(self, batch, code, message) -> bool:
        """When a request failed for a reason no retry mends (the module's docstring): settles the batch and
        every receipt queued as refused with it, logs it, keeps it in `failure`; True then."""
        if code in _REFUSED_CALLER:
            why = "%s: %s" % (code.name, message)
        else:
            tls = self._credentials is not None
            if tls and self._connected in self._answered:
                return False  # it took these credentials before: not a mismatch
            why = tls_mismatch(code, message, self._connected, tls)
            if why is None:
                return False
            code, message = grpc.StatusCode.FAILED_PRECONDITION, why
        with self._cv:
            self.failure = ConfigurationError(why)
            queued = list(self._queue)
            self._queue.clear()
        log.error("%s; the emitter stops: %d receipt(s) refused, and emit() raises ConfigurationError", why,
                  len(batch) + len(queued))
        for r in batch + queued:
            self._settle(r, Result(r.receipt_id, code, message, 0, False))
        return True

    def _failed(self, code, message):
        """Targets.failed, logged when the emitter follows a leader: True when the batch goes again at once."""
        before = self._targets.current
        at_once = self._targets.failed(code, message)
        if self._targets.followed and self._targets.current != before:
            log.warning("%s does not lead: following the leader it names at %s: %s: %s", before,
                        self._targets.current, code.name, message)
        return at_once

    def _pause(self, backoff, count, code, message):
        """Logs the retry, then sleeps for the back-off with jitter, or until close stops the thread."""
        delay = backoff * (0.5 + random.random())
        log.warning("retrying %d receipt(s) in %.2f s: %s: %s", count, delay, code.name, message)
        with self._cv:
            if not self._stop:
                self._cv.wait(delay)

    def _requeue(self, batch):
        with self._cv:
            self.retries += len(batch)
            self._queue.extendleft(reversed(batch))  # first again, in order
