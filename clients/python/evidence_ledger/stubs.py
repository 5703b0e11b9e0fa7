"""The generated gRPC modules, from the package evidence_ledger._generated:
built into the wheel, or made in the source tree by
clients/python/generate.sh.

EVIDENCE_LEDGER_STUBS=DIR takes the modules from DIR instead (stubs made by
`generate.sh DIR`), which then stands for the package evidence_ledger._generated.
"""
import importlib.machinery
import importlib.util
import os
import sys

_PACKAGE = "evidence_ledger._generated"
_DIR = os.environ.get("EVIDENCE_LEDGER_STUBS")
if _DIR and _PACKAGE not in sys.modules:
    _spec = importlib.machinery.ModuleSpec(_PACKAGE, None, is_package=True)
    _spec.submodule_search_locations = [os.path.abspath(_DIR)]
    sys.modules[_PACKAGE] = importlib.util.module_from_spec(_spec)
try:
    from evidence_ledger._generated import export_pb2 as export  # noqa: E402
    from evidence_ledger._generated import export_pb2_grpc as export_grpc  # noqa: E402
    from evidence_ledger._generated import ledger_service_pb2 as ledger  # noqa: E402
    from evidence_ledger._generated import ledger_service_pb2_grpc as ledger_grpc  # noqa: E402
    from evidence_ledger._generated import query_pb2 as query  # noqa: E402
    from evidence_ledger._generated import query_pb2_grpc as query_grpc  # noqa: E402
    from evidence_ledger._generated import receipt_pb2 as receipt  # noqa: E402
except ImportError as e:
    raise ImportError("evidence_ledger: no generated stubs in %s (run clients/python/generate.sh): %s"
                      % (_DIR or os.path.join(os.path.dirname(os.path.abspath(__file__)), "_generated"), e)) from e

__all__ = ["export", "export_grpc", "ledger", "ledger_grpc", "query", "query_grpc", "receipt"]
