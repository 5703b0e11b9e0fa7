"""The two ways verify_pack.py refuses, shared by its modules (packnote.py,
packproof.py, packmanifest.py) so that each is one class everywhere:
Failure, a pack that breaks a rule of CONTRACT.md section 7 (the message
names the first item that does not hold; exit 1), and UsageError, a flag's
value that cannot be used (exit 2). completeness.py, teamwindow.py and
packread.py raise this Failure too (completeness.Failure is the same class).
"""


class Failure(Exception):
    pass


class UsageError(Exception):
    pass
