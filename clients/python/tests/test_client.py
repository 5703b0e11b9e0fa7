#!/usr/bin/python3
"""The Python client against a real ledgerd.

Usage: test_client.py BUILD_DIR   (or LEDGER_BUILD=BUILD_DIR python3 -m unittest)
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.dirname(HERE)
BUILD = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("LEDGER_BUILD", "build"))
STUBS = tempfile.mkdtemp(prefix="ledger-client-stubs-")
subprocess.run([os.path.join(CLIENT, "generate.sh"), STUBS], check=True)
os.environ["EVIDENCE_LEDGER_STUBS"] = STUBS
sys.path.insert(0, CLIENT)

import grpc  # noqa: E402

from evidence_ledger import (BufferFull, ConfigurationError, Dashboard, Emitter, Result, ShardedDashboard,  # noqa: E402
                             ShardedEmitter, ShardMap)
from evidence_ledger import receipts  # noqa: E402
from evidence_ledger import stubs  # noqa: E402
from evidence_ledger.emitter import Targets, leader_named, parse_targets  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Ledger:
    """A ledgerd on a fixed port, which can be killed and started again; on `host`, an IPv4 address (off
    loopback, ledgerd wants --insecure or TLS among `args`)."""

    def __init__(self, *args, host="127.0.0.1"):
        self.work = tempfile.mkdtemp(prefix="ledger-client-")
        self.port = free_port()
        self.address = "%s:%d" % (host, self.port)
        self.args = list(args)
        self.proc = None
        self.start()

    def start(self):
        with open(os.path.join(self.work, "ledgerd.err"), "ab") as err:
            self.proc = subprocess.Popen(
                [os.path.join(BUILD, "cmd", "ledgerd"), "--data", os.path.join(self.work, "data"), "--listen",
                 self.address, "--http-listen", "127.0.0.1:0", "--checkpoint-interval-ms", "20",
                 "--unknown-grace-ms", "100", "--sweep-interval-ms", "50"] + self.args,
                stdout=subprocess.PIPE, stderr=err)
        line = self.proc.stdout.readline()
        self.proc.stdout.readline()  # http on ...
        self.proc.stdout.close()
        if not line.startswith(b"listening on"):
            raise RuntimeError("ledgerd did not start")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)

    def receipt_ids(self):
        """Every receipt_id in the log, in seq order (duplicates kept)."""
        import json
        with grpc.insecure_channel(self.address) as ch:
            stub = stubs.ledger_grpc.LedgerServiceStub(ch)
            sizes = [-1]
            while len(sizes) < 5 or len(set(sizes[-5:])) > 1:  # the checkpoint caught up with the head
                sizes.append(stub.GetCheckpoint(stubs.ledger.GetCheckpointRequest(), timeout=10).tree_size)
                time.sleep(0.03)
            size = sizes[-1]
            entries = stub.GetEntries(stubs.ledger.GetEntriesRequest(from_seq=0, to_seq=size), timeout=30)
            return [json.loads(e.leaf)["receipt"]["receipt_id"] for e in entries]


def calls(n, prefix, team="team-a"):
    return [receipts.model_call(team, "run-%d" % (i // 50), "step-%d" % (i % 7), receipt_id="%s-%d" % (prefix, i),
                                route="m", decision=receipts.ALLOW, input_tokens=i) for i in range(n)]


class EmitterTest(unittest.TestCase):
    def test_batches_and_flushes_on_close(self):
        ledger = Ledger()
        self.addCleanup(ledger.stop)
        results = []
        with Emitter(ledger.address, batch_size=64, on_result=lambda r, res: results.append(res)) as e:
            for r in calls(1000, "a"):
                e.emit(r)
        self.assertEqual(e.acknowledged, 1000)
        self.assertEqual(e.refused, [])
        self.assertEqual(len(results), 1000)
        self.assertEqual(sorted(res.seq for res in results), list(range(1000)))
        self.assertEqual(ledger.receipt_ids(), ["a-%d" % i for i in range(1000)])

    def test_server_restart_mid_stream_loses_nothing_and_duplicates_nothing(self):
        ledger = Ledger()
        self.addCleanup(ledger.stop)
        sent = calls(6000, "b")
        e = Emitter(ledger.address, batch_size=100, max_backoff=0.5)

        def produce():
            for r in sent:
                e.emit(r)
                time.sleep(0.0002)

        producer = threading.Thread(target=produce)
        producer.start()
        time.sleep(0.4)
        ledger.kill()  # mid-stream: batches in flight, some acknowledged, some not
        time.sleep(0.5)
        ledger.start()
        producer.join()
        self.assertTrue(e.close(timeout=60))
        self.assertEqual(e.refused, [])
        self.assertEqual(e.acknowledged, len(sent))
        self.assertGreater(e.retries, 0, "the restart was not seen: the test did not test it")
        ids = ledger.receipt_ids()
        self.assertEqual(len(ids), len(set(ids)), "a receipt was appended twice")
        self.assertEqual(set(ids), {r.receipt_id for r in sent})

    def test_a_restarted_ledger_is_reached_within_the_emitters_back_off(self):
        # gRPC's channel, once its connections failed, fails calls at once until its own reconnect back-off
        # (growing to 120 s) has passed: the emitter must not wait for it.
        ledger = Ledger()
        self.addCleanup(ledger.stop)
        e = Emitter(ledger.address, max_backoff=0.5)
        self.addCleanup(e.close, 0)
        e.emit(calls(1, "r")[0])
        self.assertTrue(e.flush(10))
        ledger.kill()
        for r in calls(10, "s"):
            e.emit(r)
        time.sleep(2)
        ledger.start()
        began = time.monotonic()
        self.assertTrue(e.flush(30))
        self.assertLess(time.monotonic() - began, 2.0, "flushed %.1f s after the restart" % (time.monotonic() - began))
        self.assertGreater(e.retries, 0)

    def test_refusals_are_reported_not_retried(self):
        ledger = Ledger()
        self.addCleanup(ledger.stop)
        good, bad = calls(2, "c")
        bad.team = "Not A Team"
        with Emitter(ledger.address) as e:
            e.emit(good)
            e.emit(bad)
        self.assertEqual(e.acknowledged, 1)
        self.assertEqual(len(e.refused), 1)
        self.assertEqual(e.refused[0].receipt_id, "c-1")
        self.assertEqual(e.refused[0].code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("team", e.refused[0].message)
        self.assertEqual(e.retries, 0)

    def test_ids_in_the_ledgers_namespace_are_refused_at_emit(self):
        ledger = Ledger()
        self.addCleanup(ledger.stop)
        (r,) = calls(1, "c")
        r.receipt_id = "ledger.unknown.0"
        with Emitter(ledger.address) as e:
            with self.assertRaises(ValueError) as refused:
                e.emit(r)
        self.assertEqual(str(refused.exception), "receipt_id: 'ledger.unknown.0' is in the ledger's namespace: "
                         "ids starting with 'ledger.' are written by the ledger only")
        self.assertEqual(e.acknowledged, 0)

    def test_resource_exhausted_is_retried_with_back_off(self):
        ledger = Ledger("--rate-per-identity", "400")
        self.addCleanup(ledger.stop)
        with Emitter(ledger.address, batch_size=200, max_backoff=0.5) as e:
            for r in calls(1200, "d"):
                e.emit(r)
        self.assertEqual(e.acknowledged, 1200)
        self.assertGreater(e.retries, 0, "the rate limit was never hit")
        ids = ledger.receipt_ids()
        self.assertEqual(sorted(ids), sorted("d-%d" % i for i in range(1200)))

    def test_bounded_buffer_blocks_or_raises(self):
        port = free_port()  # nothing listens: nothing is ever settled
        e = Emitter("127.0.0.1:%d" % port, max_buffer=5, block=False, rpc_timeout=0.2)
        for r in calls(5, "e"):
            e.emit(r)
        with self.assertRaises(BufferFull):
            e.emit(calls(6, "e")[5])
        waiting = Emitter("127.0.0.1:%d" % port, max_buffer=1, block=True, timeout=0.3, rpc_timeout=0.2)
        waiting.emit(calls(1, "f")[0])
        started = time.monotonic()
        with self.assertRaises(BufferFull):
            waiting.emit(calls(2, "f")[1])
        self.assertGreaterEqual(time.monotonic() - started, 0.25)
        self.assertFalse(e.close(timeout=0.2))  # not flushed: said so, not hidden
        self.assertEqual([r.receipt_id for r in e.unsettled], ["e-%d" % i for i in range(5)])
        self.assertFalse(waiting.close(timeout=0.2))
        self.assertEqual([r.receipt_id for r in waiting.unsettled], ["f-0"])


    def test_a_callback_that_raises_is_logged_counted_and_never_stops_the_sender(self):
        ledger = Ledger()
        self.addCleanup(ledger.stop)

        def broken(receipt, result):
            raise KeyError("a gateway's bug")

        e = Emitter(ledger.address, batch_size=10, on_result=broken)
        with self.assertLogs("evidence_ledger", "ERROR") as logged:
            for r in calls(50, "g"):
                e.emit(r)
            flushed = e.flush(timeout=10)
        self.assertTrue(flushed, "the sender stopped at the callback's exception: flush hangs")
        self.assertTrue(e.close(timeout=10))
        self.assertEqual(e.acknowledged, 50)
        self.assertEqual(e.callback_errors, 50)
        self.assertIn("on_result raised for receipt g-0 (OK); the emitter goes on", logged.output[0])
        self.assertIn("KeyError: \"a gateway's bug\"", logged.output[0])

    def test_on_result_must_take_receipt_and_result(self):
        with self.assertRaises(TypeError) as wrong:
            Emitter("127.0.0.1:1", on_result=lambda result: None)
        self.assertEqual(str(wrong.exception), "on_result: must take two arguments, (receipt, result); "
                         "<lambda>(result) takes other arguments")
        with self.assertRaises(TypeError) as not_callable:
            Emitter("127.0.0.1:1", on_result="print")
        self.assertEqual(str(not_callable.exception),
                         "on_result: must be a function on_result(receipt, result), not 'print'")
        Emitter("127.0.0.1:1", on_result=lambda receipt, result, *rest: None).close(timeout=1)

    def test_flush_and_close_wait_30_s_by_default_then_say_so(self):
        import inspect
        self.assertEqual(inspect.signature(Emitter).parameters["flush_timeout"].default, 30.0)
        port = free_port()  # nothing listens: nothing is ever settled
        e = Emitter("127.0.0.1:%d" % port, rpc_timeout=0.2, flush_timeout=0.5)
        e.emit(calls(1, "h")[0])
        started = time.monotonic()
        self.assertFalse(e.flush())
        self.assertFalse(e.close())
        self.assertLess(time.monotonic() - started, 5)
        self.assertEqual([r.receipt_id for r in e.unsettled], ["h-0"])

    def test_retries_are_logged_with_the_reason(self):
        port = free_port()
        with self.assertLogs("evidence_ledger", "WARNING") as logged:
            e = Emitter("127.0.0.1:%d" % port, rpc_timeout=0.2, max_backoff=0.1)
            e.emit(calls(1, "i")[0])
            time.sleep(0.5)
            e.close(timeout=0.1)
        self.assertRegex(logged.output[0], r"^WARNING:evidence_ledger:retrying 1 receipt\(s\) in [0-9.]+ s: "
                                           r"(UNAVAILABLE|DEADLINE_EXCEEDED): .+")

    def test_kinds_take_names_for_decisions_and_statuses(self):
        r = receipts.model_call("team-a", "r", "s", decision="deny", reason="budget", input_tokens=3)
        self.assertEqual(r.model_call.decision, stubs.receipt.DECISION_DENY)
        x = receipts.agent_exec("team-a", "r", "s", "start-1", status=receipts.TIMED_OUT)
        self.assertEqual(x.agent_exec.status, stubs.receipt.EXEC_STATUS_TIMED_OUT)
        with self.assertRaises(ValueError) as bad:
            receipts.tool_call("team-a", "r", "s", decision="maybe")
        self.assertEqual(str(bad.exception), "decision: 'maybe' is not one of allow, deny")
        with self.assertRaises(ValueError) as unknown:
            receipts.tool_call("team-a", "r", "s", model="m")
        self.assertIn("tool_call:", str(unknown.exception))
        self.assertIn("model", str(unknown.exception))


# A follower's refusal, as ledger/storage/replication/node.cc Node::NotLeader writes it.
def not_leader(leader):
    return "replication: node b follows; the leader is a at leader=%s (epoch 3); send appends there" % leader


NO_LEADER = "replication: node b does not lead and no leader is known yet; retry"
UNAVAILABLE = grpc.StatusCode.UNAVAILABLE


class Follower:
    """A node that follows: it refuses every Append with UNAVAILABLE naming `leader` (changed at will), or,
    with no leader, as a node that knows none yet. Counts the Appends it refused."""

    def __init__(self, leader=None):
        from concurrent import futures
        self.leader = leader
        self.refused = 0
        follower = self

        class Servicer(stubs.ledger_grpc.LedgerServiceServicer):
            def Append(self, request, context):
                follower.refused += 1
                context.abort(UNAVAILABLE, not_leader(follower.leader) if follower.leader else NO_LEADER)

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        stubs.ledger_grpc.add_LedgerServiceServicer_to_server(Servicer(), self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.address = "127.0.0.1:%d" % self.port
        self.server.start()

    def stop(self):
        self.server.stop(0)


class FollowTest(unittest.TestCase):
    def test_the_leader_is_read_from_a_followers_refusal_as_ledgerctl_reads_it(self):
        self.assertEqual(leader_named(UNAVAILABLE, not_leader("127.0.0.1:7421")), "127.0.0.1:7421")
        self.assertEqual(leader_named(UNAVAILABLE, "leader=[::1]:7421"), "[::1]:7421")
        self.assertEqual(leader_named(UNAVAILABLE, "at leader=node-a.ledger:7420; send appends there"),
                         "node-a.ledger:7420")
        self.assertEqual(leader_named(UNAVAILABLE, "(leader=10.0.0.2:7420)"), "10.0.0.2:7420")
        self.assertIsNone(leader_named(UNAVAILABLE, NO_LEADER))
        self.assertIsNone(leader_named(UNAVAILABLE, "leader= (epoch 3)"))
        self.assertIsNone(leader_named(grpc.StatusCode.PERMISSION_DENIED, not_leader("127.0.0.1:7421")))

    def test_a_target_names_one_node_or_several(self):
        self.assertEqual(parse_targets("a:1"), ["a:1"])
        self.assertEqual(parse_targets("a:1, b:2"), ["a:1", "b:2"])
        self.assertEqual(parse_targets(["a:1", "b:2"]), ["a:1", "b:2"])
        for bad in ("", "a:1,", [], ["a:1", ""]):
            with self.assertRaises(ValueError, msg=repr(bad)) as e:
                parse_targets(bad)
            self.assertEqual(str(e.exception), "target: HOST:PORT, or several separated by commas (the nodes of "
                             "a shard), not %r" % (bad,))

    def test_targets_follow_the_leader_named_and_fall_back_to_the_nodes_when_it_fails(self):
        t = Targets(["f1:1", "f2:2"])
        self.assertTrue(t.failed(UNAVAILABLE, not_leader("l:9")))  # at once
        self.assertEqual(t.current, "l:9")
        t.accepted()
        self.assertEqual(t.current, "l:9")  # later batches too
        self.assertFalse(t.failed(UNAVAILABLE, "failed to connect to all addresses"))
        self.assertEqual(t.current, "f1:1")  # back to the node that named it
        self.assertFalse(t.failed(UNAVAILABLE, NO_LEADER))
        self.assertEqual(t.current, "f2:2")  # on to the next
        self.assertFalse(t.failed(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded"))
        self.assertEqual(t.current, "f1:1")
        self.assertFalse(t.failed(grpc.StatusCode.RESOURCE_EXHAUSTED, "busy"))  # back-pressure: stay
        self.assertEqual(t.current, "f1:1")
        self.assertFalse(t.failed(UNAVAILABLE, not_leader("f1:1")))  # names itself: not followed, moved on
        self.assertEqual(t.current, "f2:2")

    def test_two_nodes_that_name_each_other_are_followed_at_once_three_times_then_after_the_back_off(self):
        t = Targets(["a:1"])
        hops = [t.failed(UNAVAILABLE, not_leader("b:2" if t.current == "a:1" else "a:1")) for _ in range(5)]
        self.assertEqual(hops, [True, True, True, False, False])
        t.accepted()
        self.assertTrue(t.failed(UNAVAILABLE, not_leader("c:3")))

    def test_a_leader_that_may_not_be_dialed_is_not_followed(self):
        t = Targets(["127.0.0.1:1"], may_dial=lambda address: address.startswith("127."))
        self.assertFalse(t.failed(UNAVAILABLE, not_leader("10.0.0.2:7420")))
        self.assertEqual(t.current, "127.0.0.1:1")
        self.assertIsNone(t.followed)

    def test_a_follower_sends_the_batch_to_the_leader_it_names_and_the_emitter_stays_there(self):
        ledger = Ledger()
        self.addCleanup(ledger.stop)
        follower = Follower(ledger.address)
        self.addCleanup(follower.stop)
        sent = calls(300, "fl")
        with self.assertLogs("evidence_ledger", "WARNING") as logs:
            e = Emitter(follower.address, batch_size=50, linger=0, max_backoff=0.5)
            for r in sent:
                e.emit(r)
            self.assertTrue(e.close(timeout=30))
        self.assertEqual((e.acknowledged, e.duplicates, e.refused), (300, 0, []))
        self.assertEqual(follower.refused, 1)  # the first batch; every later one went to the leader
        self.assertEqual(ledger.receipt_ids(), [r.receipt_id for r in sent])
        self.assertIn("WARNING:evidence_ledger:%s does not lead: following the leader it names at %s: "
                      "UNAVAILABLE: %s" % (follower.address, ledger.address, not_leader(ledger.address)),
                      logs.output)

    def test_when_the_leader_followed_dies_the_emitter_goes_back_to_the_follower_and_on_to_the_new_leader(self):
        old, new = Ledger(), Ledger()
        self.addCleanup(old.stop)
        self.addCleanup(new.stop)
        follower = Follower(old.address)
        self.addCleanup(follower.stop)
        e = Emitter(follower.address, batch_size=10, linger=0, max_backoff=0.2)
        first, second = calls(50, "f1"), calls(50, "f2")
        for r in first:
            e.emit(r)
        self.assertTrue(e.flush(timeout=30))
        old.kill()
        follower.leader = None  # the lease has not expired yet
        for r in second:
            e.emit(r)
        time.sleep(0.5)
        self.assertFalse(e.flush(timeout=0))
        follower.leader = new.address  # a new leader took over
        self.assertTrue(e.close(timeout=30))
        self.assertEqual((e.acknowledged, e.refused), (100, []))
        self.assertGreater(e.retries, 0)
        self.assertEqual(new.receipt_ids(), [r.receipt_id for r in second])

    def test_a_list_of_nodes_is_tried_in_turn_past_one_that_is_down(self):
        ledger = Ledger()
        self.addCleanup(ledger.stop)
        down = "127.0.0.1:%d" % free_port()
        for target in ([down, ledger.address], "%s,%s" % (down, ledger.address)):
            e = Emitter(target, max_backoff=0.2)
            prefix = "ls%d" % isinstance(target, str)
            for r in calls(20, prefix):
                e.emit(r)
            self.assertTrue(e.close(timeout=10), target)
            self.assertEqual((e.acknowledged, e.refused), (20, []))
        ids = ledger.receipt_ids()
        self.assertEqual(ids, ["ls0-%d" % i for i in range(20)] + ["ls1-%d" % i for i in range(20)])

    def test_every_node_of_a_list_is_checked_for_plain_text_before_any_is_dialed(self):
        with self.assertRaises(ValueError) as e:
            Emitter(["127.0.0.1:7420", "10.0.0.5:7420"])
        self.assertEqual(str(e.exception), refusal("10.0.0.5:7420"))


class TlsTest(unittest.TestCase):
    def test_a_gateway_over_tls_with_the_development_certificates(self):
        """clients/python/README.md's TLS example, with scripts/dev-certs.sh's certificates."""
        certs = tempfile.mkdtemp(prefix="ledger-client-certs-")
        subprocess.run([os.path.join(CLIENT, "..", "..", "scripts", "dev-certs.sh"), certs], check=True,
                       stdout=subprocess.DEVNULL)
        c = lambda name: os.path.join(certs, name)  # noqa: E731
        ledger = Ledger("--tls-cert", c("server.pem"), "--tls-key", c("server.key"), "--client-ca", c("ca.pem"),
                        "--policy", c("policy.json"))
        self.addCleanup(ledger.stop)
        def read(name):
            with open(c(name), "rb") as f:
                return f.read()

        credentials = grpc.ssl_channel_credentials(root_certificates=read("ca.pem"),
                                                   private_key=read("gateway.key"),
                                                   certificate_chain=read("gateway.pem"))
        emitter = Emitter("localhost:%d" % ledger.port, credentials)
        emitter.emit(receipts.model_call("team-a", "run-1", "step-1", route="m", decision=receipts.ALLOW))
        emitter.emit(receipts.model_call("team-b", "run-1", "step-1", route="m", decision=receipts.ALLOW))
        self.assertTrue(emitter.close())
        self.assertEqual(emitter.unsettled, [])
        self.assertEqual(emitter.acknowledged, 1)
        self.assertEqual([(r.receipt_id[:10], r.code) for r in emitter.refused],
                         [("model_call", grpc.StatusCode.PERMISSION_DENIED)])  # gateway emits for team-a only
        self.assertIn("team-b", emitter.refused[0].message)


def refusal(target):
    return ('address "%s" is not a loopback address: give TLS options (CA, certificate and key), or ask for '
            'plain text explicitly with insecure=True' % target)


def non_loopback_ipv4():
    """An IPv4 address of this machine off loopback, None if it has none."""
    candidates = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("203.0.113.1", 9))  # sends nothing: the address of the route out
            candidates.append(s.getsockname()[0])
        except OSError:
            pass
    try:
        candidates += [a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)]
    except OSError:
        pass
    return next((a for a in candidates if not a.startswith(("127.", "169.254.", "0."))), None)


class ConfigurationErrorTest(unittest.TestCase):
    """Credentials that do not match the server, and an identity the ledger refuses, stop the emitter at once
    (issue 38: it retried a TLS mismatch for good): the receipts are refused with the reason, and emit()
    raises it."""

    @classmethod
    def setUpClass(cls):
        cls.certs = tempfile.mkdtemp(prefix="ledger-client-certs-")
        subprocess.run([os.path.join(CLIENT, "..", "..", "scripts", "dev-certs.sh"), cls.certs, "gateway",
                        "stranger"], check=True, stdout=subprocess.DEVNULL)
        c = lambda name: os.path.join(cls.certs, name)  # noqa: E731
        cls.tls = Ledger("--tls-cert", c("server.pem"), "--tls-key", c("server.key"), "--client-ca", c("ca.pem"),
                         "--policy", c("policy.json"))
        cls.plain = Ledger()

    @classmethod
    def tearDownClass(cls):
        cls.tls.stop()
        cls.plain.stop()

    def read(self, name):
        with open(os.path.join(self.certs, name), "rb") as f:
            return f.read()

    def stopped(self, target, credentials, code, message):
        """Emits two receipts, the second after the first is settled; both refused with `code` and `message`,
        at once, and emit() then raises it."""
        e = Emitter(target, credentials, max_backoff=0.2)
        started = time.monotonic()
        with self.assertLogs("evidence_ledger", "ERROR") as logged:
            e.emit(receipts.model_call("team-a", "run-1", "step-1", receipt_id="c-1", route="m",
                                       decision=receipts.ALLOW))
            self.assertTrue(e.flush(timeout=10))
        self.assertLess(time.monotonic() - started, 5)
        with self.assertRaises(ConfigurationError) as raised:
            e.emit(receipts.model_call("team-a", "run-1", "step-1", receipt_id="c-2", route="m"))
        self.assertTrue(e.close(timeout=5))
        self.assertEqual(e.refused, [Result("c-1", code, message, 0, False)])
        why = message if code == grpc.StatusCode.FAILED_PRECONDITION else "%s: %s" % (code.name, message)
        self.assertEqual(str(raised.exception), why)
        self.assertEqual(str(e.failure), why)
        self.assertEqual((e.retries, e.unsettled), (0, []))
        self.assertEqual(logged.output, ["ERROR:evidence_ledger:%s; the emitter stops: 1 receipt(s) refused, and "
                                         "emit() raises ConfigurationError" % why])

    def test_plain_text_to_a_tls_port(self):
        target = "localhost:%d" % self.tls.port
        self.stopped(target, None, grpc.StatusCode.FAILED_PRECONDITION,
                     "the server at %s speaks TLS: give credentials (grpc.ssl_channel_credentials(root_certificates, "
                     "private_key, certificate_chain))" % target)

    def test_tls_without_a_client_certificate(self):
        target = "localhost:%d" % self.tls.port
        self.stopped(target, grpc.ssl_channel_credentials(root_certificates=self.read("ca.pem")),
                     grpc.StatusCode.FAILED_PRECONDITION,
                     "the server at %s closed the connection in the TLS handshake: it wants a client certificate "
                     "issued by a CA it trusts: give credentials with one (grpc.ssl_channel_credentials("
                     "root_certificates, private_key, certificate_chain))" % target)

    def test_tls_to_a_plain_text_port(self):
        target = "localhost:%d" % self.plain.port
        self.stopped(target, grpc.ssl_channel_credentials(self.read("ca.pem"), self.read("gateway.key"),
                                                          self.read("gateway.pem")),
                     grpc.StatusCode.FAILED_PRECONDITION,
                     "the server at %s speaks plain text, not TLS: give no credentials (plain text goes to a "
                     "loopback address only, or with insecure=True)" % target)

    def test_an_identity_with_no_rule(self):
        self.stopped("localhost:%d" % self.tls.port,
                     grpc.ssl_channel_credentials(self.read("ca.pem"), self.read("stranger.key"),
                                                  self.read("stranger.pem")),
                     grpc.StatusCode.PERMISSION_DENIED, "identity 'uri:spiffe://dev/stranger' has no rule in the policy")


class PlainTextTest(unittest.TestCase):
    """Plain text (no credentials) is dialed only to this machine unless asked for with insecure=True
    (security issue 31, item 8: the clients dialed any host in plain text, silently)."""

    def test_plain_text_to_an_address_off_this_machine_is_refused(self):
        for target in ["10.0.0.5:7420", "ledger:7420", "ledger.example.com:7420", "localhost.example.com:7420",
                       "127.0.0.1.example.com:7420", ":7420", "[fd00::2]:7420", "[::ffff:10.0.0.5]:7420",
                       "dns:///ledger:7420", "dns://8.8.8.8/localhost:7420", "ipv4:10.0.0.5:7420"]:
            for client in (Emitter, Dashboard):
                with self.subTest(client=client.__name__, target=target):
                    with self.assertRaises(ValueError) as refused:
                        client(target).close()
                    self.assertEqual(str(refused.exception), refusal(target))

    def test_every_shards_address_is_checked_before_any_shard_is_dialed(self):
        with socket.socket() as near:  # shard 0, a loopback address: never dialed either
            near.bind(("127.0.0.1", 0))
            near.listen()
            shard_map = ShardMap({"version": 1, "shards": [
                {"shard": 0, "address": "127.0.0.1:%d" % near.getsockname()[1]},
                {"shard": 1, "address": "10.0.0.5:7420"}]})
            for client in (ShardedEmitter, ShardedDashboard):
                with self.subTest(client=client.__name__):
                    with self.assertRaises(ValueError) as refused:
                        client(shard_map).close()
                    self.assertEqual(str(refused.exception), "shard 1: " + refusal("10.0.0.5:7420"))
            near.settimeout(0.2)
            with self.assertRaises(socket.timeout, msg="shard 0 was dialed"):
                near.accept()[0].close()

    def test_plain_text_to_loopback_or_a_unix_socket_and_tls_to_any_address_are_dialed_as_before(self):
        for target in ["localhost:7420", "LocalHost:7420", "127.0.0.1:7420", "127.1.2.3:7420", "[::1]:7420", "::1",
                       "127.0.0.1", "dns:///localhost:7420", "passthrough:///127.0.0.1:7420", "unix:/run/ledger.sock",
                       "unix:///run/ledger.sock"]:
            with self.subTest(target=target):
                self.assertTrue(Emitter(target).close())
                Dashboard(target).close()
        self.assertTrue(Emitter("10.0.0.5:7420", grpc.ssl_channel_credentials()).close())

    def test_insecure_dials_plain_text_to_an_address_off_loopback(self):
        host = non_loopback_ipv4()
        if host is None:
            # No such address here: insecure=True at least gets past the refusal to a connection that fails
            # (TEST-NET-3 answers nobody).
            d = Dashboard("203.0.113.1:7420", insecure=True, timeout=0.3)
            self.addCleanup(d.close)
            with self.assertRaises(grpc.RpcError) as failed:
                d.steps("team-a")
            self.assertIn(failed.exception.code(), {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
            return
        ledger = Ledger("--insecure", host=host)
        self.addCleanup(ledger.stop)
        with self.assertRaises(ValueError) as refused:
            Emitter(ledger.address).close()
        self.assertEqual(str(refused.exception), refusal(ledger.address))
        e = Emitter(ledger.address, insecure=True)
        for r in calls(2, "insecure"):
            e.emit(r)
        self.assertTrue(e.close())
        self.assertEqual(e.acknowledged, 2)
        self.assertEqual(ledger.receipt_ids(), ["insecure-0", "insecure-1"])
        d = Dashboard(ledger.address, insecure=True)
        self.addCleanup(d.close)
        deadline = time.monotonic() + 10
        while not d.runs("team-a") and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual([r.run_id for r in d.runs("team-a")], ["run-0"])
        shard_map = ShardMap({"version": 1, "shards": [{"shard": 0, "address": ledger.address}]})
        self.assertTrue(ShardedEmitter(shard_map, insecure=True).close())
        ShardedDashboard(shard_map, insecure=True).close()


class DashboardTest(unittest.TestCase):
    def test_steps_run_and_watch(self):
        ledger = Ledger()
        self.addCleanup(ledger.stop)
        d = Dashboard(ledger.address)
        self.addCleanup(d.close)
        changes = []
        watching = threading.Event()

        def watch():
            for change in d.watch("team-w"):
                changes.append(change)
                watching.set()
                if len(changes) == 4:
                    return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        start = receipts.agent_start("team-w", "run-1", "build", decision=receipts.ALLOW, timeout_ms=600000)
        lost = receipts.agent_start("team-w", "run-1", "test", decision=receipts.ALLOW, timeout_ms=50)
        with Emitter(ledger.address) as e:
            e.emit(start)
            e.emit(receipts.model_call("team-w", "run-1", "build", route="m", decision=receipts.DENY))
            e.emit(receipts.agent_exec("team-w", "run-1", "build", start.receipt_id,
                                       status=receipts.SUCCEEDED))
            e.emit(lost)
        deadline = time.time() + 20
        while not d.steps("team-w", states=["unknown"]) and time.time() < deadline:
            time.sleep(0.05)
        unknown = d.steps("team-w", states=["unknown"])
        self.assertEqual([s.step_id for s in unknown], ["test"])
        self.assertEqual(d.step("team-w", "run-1", "build").state, stubs.query.STEP_STATE_SUCCEEDED)
        self.assertEqual(d.step("team-w", "run-1", "build").calls.model_calls_denied, 1)
        run = d.run("team-w", "run-1")
        self.assertEqual((run.steps_succeeded, run.steps_unknown), (1, 1))
        self.assertEqual([r.run_id for r in d.runs("team-w")], ["run-1"])
        watcher.join(timeout=20)
        # build started, build succeeded, test started, test declared unknown
        self.assertEqual(len(changes), 4)
        self.assertEqual([c.seq for c in changes], sorted(c.seq for c in changes))
        self.assertIn(stubs.query.STEP_STATE_UNKNOWN, [c.step.state for c in changes])

    def test_a_watch_resumes_as_soon_as_the_ledger_is_back(self):
        ledger = Ledger()
        self.addCleanup(ledger.stop)
        d = Dashboard(ledger.address)
        self.addCleanup(d.close)
        arrived = []

        def watch():
            for change in d.watch("team-v"):
                arrived.append((time.monotonic(), change.seq))
                if len(arrived) == 2:
                    return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        start = receipts.agent_start("team-v", "run-1", "build", decision=receipts.ALLOW, timeout_ms=600000)
        with Emitter(ledger.address) as e:
            e.emit(start)
        deadline = time.monotonic() + 10
        while not arrived and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual([seq for _, seq in arrived], [0])
        ledger.kill()
        time.sleep(1.2)  # the watch's channel backs off
        ledger.start()
        restarted = time.monotonic()
        with Emitter(ledger.address) as e:
            e.emit(receipts.agent_exec("team-v", "run-1", "build", start.receipt_id, status=receipts.SUCCEEDED))
        watcher.join(timeout=20)
        self.assertEqual([seq for _, seq in arrived], [0, 1])
        self.assertLess(arrived[1][0] - restarted, 2.0, "the change came %.1f s after the restart"
                        % (arrived[1][0] - restarted))


if __name__ == "__main__":
    unittest.main(verbosity=2)
