"""PostgreSQL servers for the replication tests: a primary and a synchronous
standby on loopback, started as an unprivileged user (PostgreSQL refuses to
run as root), from Debian's postgresql-15 binaries.

    cluster = PgCluster(workdir)      # initdb, start, base backup, start standby
    cluster.uri                       # both hosts, target_session_attrs=read-write
    cluster.kill_primary(); cluster.promote_standby()
    cluster.stop()
"""
import os
import pwd
import shutil
import signal
import subprocess
import time

from ledger_testlib import free_port

BIN = "/usr/lib/postgresql/15/bin"
USER = "postgres"  # made by Debian's postgresql-common
STANDBY_NAME = "standby1"


def as_user(args, check=True, **kw):
    cmd = args if os.geteuid() != 0 else ["runuser", "-u", USER, "--"] + args
    return subprocess.run(cmd, check=check, capture_output=True, text=True, **kw)


class Server:
    def __init__(self, data, port, log):
        self.data, self.port, self.log = data, port, log

    def start(self):
        as_user([BIN + "/pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", "60", "start"])

    def pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())

    def kill(self):
        """SIGKILL the postmaster and its children: a machine that died."""
        pid = self.pid()
        os.kill(pid, signal.SIGKILL)
        for line in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split():
            try:
                os.kill(int(line), signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.3)
        try:
            os.remove(os.path.join(self.data, "postmaster.pid"))
        except FileNotFoundError:
            pass

    def stop(self):
        as_user([BIN + "/pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop"], check=False)

    def sql(self, statement):
        return as_user([BIN + "/psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "ledger", "-d", "ledger",
                        "-Atc", statement]).stdout.strip()


class PgCluster:
    def __init__(self, work, standby=True):
        self.work = os.path.join(work, "pg")
        os.makedirs(self.work)
        if os.geteuid() == 0:
            entry = pwd.getpwnam(USER)
            os.chown(self.work, entry.pw_uid, entry.pw_gid)
            os.chmod(work, 0o755)
        primary = os.path.join(self.work, "primary")
        self.primary = Server(primary, free_port(), os.path.join(self.work, "primary.log"))
        as_user([BIN + "/initdb", "-D", primary, "-U", "ledger", "--auth=trust", "--no-sync"])
        with open(os.path.join(primary, "postgresql.conf"), "a") as f:
            f.write("listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = '%s'\n"
                    "wal_level = replica\nmax_wal_senders = 5\nwal_keep_size = '256MB'\n"
                    "synchronous_commit = on\nsynchronous_standby_names = '%s'\n"
                    "shared_buffers = '64MB'\nmax_connections = 50\n"
                    % (self.primary.port, self.work, ""))
        with open(os.path.join(primary, "pg_hba.conf"), "a") as f:
            f.write("host all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n")
        self.primary.start()
        as_user([BIN + "/psql", "-h", "127.0.0.1", "-p", str(self.primary.port), "-U", "ledger", "-d", "postgres",
                 "-c", "CREATE DATABASE ledger"])
        self.standby = None
        if standby:
            data = os.path.join(self.work, "standby")
            self.standby = Server(data, free_port(), os.path.join(self.work, "standby.log"))
            as_user([BIN + "/pg_basebackup", "-d", "host=127.0.0.1 port=%d user=ledger application_name=%s"
                     % (self.primary.port, STANDBY_NAME), "-D", data, "-R", "-X", "stream", "-c", "fast",
                     "--no-sync"])
            with open(os.path.join(data, "postgresql.conf"), "a") as f:
                f.write("port = %d\n" % self.standby.port)
            self.standby.start()
            self.primary.sql("ALTER SYSTEM SET synchronous_standby_names = '%s'" % STANDBY_NAME)
            self.primary.sql("SELECT pg_reload_conf()")
            self.wait_sync()

    @property
    def uri(self):
        hosts = ",".join("127.0.0.1:%d" % s.port for s in (self.primary, self.standby) if s is not None)
        return "postgresql://ledger@%s/ledger?target_session_attrs=read-write&connect_timeout=2" % hosts

    def wait_sync(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.primary.sql("SELECT sync_state FROM pg_stat_replication WHERE application_name = '%s'"
                                % STANDBY_NAME) == "sync":
                return
            time.sleep(0.2)
        raise RuntimeError("the standby did not become synchronous")

    def promote_standby(self):
        """The standby becomes the primary; with no standby of its own it
        commits alone (as Patroni does without synchronous_mode_strict)."""
        as_user([BIN + "/pg_ctl", "-D", self.standby.data, "-w", "promote"])
        self.primary, self.standby = self.standby, self.primary

    def stop(self):
        for s in (self.primary, self.standby):
            if s is not None:
                s.stop()

    def remove(self):
        self.stop()
        shutil.rmtree(self.work, ignore_errors=True)
