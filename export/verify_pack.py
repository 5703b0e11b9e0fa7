#!/usr/bin/python3
"""The command every pack's report.html prints (packs of formats 1 to 5, and
their reports are rebuilt byte for byte): runs the Python verifier, which
lives in export/verify/python/verify_pack.py beside the other two."""
import os
import runpy
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "verify", "python")
sys.path.insert(0, HERE)
sys.argv[0] = os.path.join(HERE, "verify_pack.py")
runpy.run_path(sys.argv[0], run_name="__main__")
