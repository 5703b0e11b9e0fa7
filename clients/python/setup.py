"""The wheel's build (pyproject.toml holds the metadata): the gRPC stubs are
generated from the ledger's protos (../../proto, or EVIDENCE_LEDGER_PROTO) by
generate.sh into the built package evidence_ledger._generated, never taken
from the source tree."""
import os
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        out = os.path.join(self.build_lib, "evidence_ledger", "_generated")
        subprocess.run([os.path.join(HERE, "generate.sh"), out], check=True)


setup(cmdclass={"build_py": BuildWithStubs})
