"""The generated gRPC modules (run clients/python/generate.sh first).

The modules import each other by their flat names (receipt_pb2, ...), as
protoc writes them, so their directory joins sys.path.
"""
import os
import sys

_DIR = os.environ.get("EVIDENCE_LEDGER_STUBS") or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                               "_generated")
if _DIR not in sys.path:
    sys.path.insert(0, _DIR)
try:
    import export_pb2 as export  # noqa: E402,F401
    import export_pb2_grpc as export_grpc  # noqa: E402,F401
    import ledger_service_pb2 as ledger  # noqa: E402,F401
    import ledger_service_pb2_grpc as ledger_grpc  # noqa: E402,F401
    import query_pb2 as query  # noqa: E402,F401
    import query_pb2_grpc as query_grpc  # noqa: E402,F401
    import receipt_pb2 as receipt  # noqa: E402,F401
except ImportError as e:
    raise ImportError("evidence_ledger: no generated stubs in %s (run clients/python/generate.sh): %s" % (_DIR, e))
