#!/usr/bin/python3
"""Runs a command with a real PostgreSQL (a primary and a synchronous
standby, started as an unprivileged user) and its URI in
LEDGER_TEST_PG_URI; its exit code is the command's.

Usage: with_pg.py COMMAND [ARGS...]
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from pgcluster import PgCluster  # noqa: E402


def main():
    work = tempfile.mkdtemp(prefix="with-pg-")
    os.chmod(work, 0o755)
    cluster = PgCluster(work)
    try:
        env = dict(os.environ, LEDGER_TEST_PG_URI=cluster.uri)
        code = subprocess.run(sys.argv[1:], env=env).returncode
    finally:
        cluster.remove()
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
