"""A cluster of real shoald nodes for the Python tests: one etcd and one nats-server (JetStream)
on free loopback ports, and shoald nodes "n1".."nN" in cluster mode, each on its own data
directory under one temporary directory.

    with ShoaldCluster(nodes=3) as cluster:
        if cluster.missing: raise unittest.SkipTest(cluster.missing)
        client = shoal.Client(cluster.addresses[0])

`missing` says which engine is not installed (Debian etcd-server, nats-server); nothing is
started then. Each process's output goes to a .log file beside its data.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _which(name):
    for d in os.environ.get("PATH", "").split(":") + ["/usr/bin", "/usr/sbin"]:
        if d and os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    return ""


class ShoaldCluster:
    def __init__(self, nodes=3):
        bin_dir = os.environ.get("SHOAL_BIN_DIR")
        if not bin_dir:
            raise RuntimeError("SHOAL_BIN_DIR is not set (run the test through ctest)")
        self.procs, self.addresses, self.node_ids = [], [], []
        self.tmp = tempfile.mkdtemp(prefix="shoal-py-cluster-")
        etcd, nats = _which("etcd"), _which("nats-server")
        self.missing = " ".join(f"{n} is not installed" for n, p in
                                (("etcd", etcd), ("nats-server", nats)) if not p)
        if self.missing:
            return
        try:
            self._start_services(etcd, nats)
            for i in range(1, nodes + 1):
                self._start_node(bin_dir, f"n{i}")
        except BaseException:
            self.stop()
            raise

    def _start_services(self, etcd, nats):
        client, peer, nats_port = _free_port(), _free_port(), _free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        self.nats_url = f"nats://127.0.0.1:{nats_port}"
        peer_url = f"http://127.0.0.1:{peer}"
        log = open(os.path.join(self.tmp, "services.log"), "ab")
        self.procs.append(subprocess.Popen(
            [etcd, "--name", "py", "--data-dir", f"{self.tmp}/etcd", "--listen-client-urls",
             self.etcd_url, "--advertise-client-urls", self.etcd_url, "--listen-peer-urls",
             peer_url, "--initial-advertise-peer-urls", peer_url, "--initial-cluster",
             f"py={peer_url}"], stdout=log, stderr=log))
        self.procs.append(subprocess.Popen(
            [nats, "-js", "-a", "127.0.0.1", "-p", str(nats_port), "-sd", f"{self.tmp}/nats"],
            stdout=log, stderr=log))
        deadline = time.time() + 30
        for port in (client, nats_port):
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.time() > deadline:
                        raise RuntimeError("etcd or nats-server did not start (services.log)")
                    time.sleep(0.2)

    def _start_node(self, bin_dir, node_id):
        data = os.path.join(self.tmp, node_id)
        log = open(data + ".log", "ab")
        process = subprocess.Popen(
            [os.path.join(bin_dir, "shoald"), "--listen", "127.0.0.1:0", "--data", data,
             "--cluster-etcd", self.etcd_url, "--cluster-nats", self.nats_url, "--node-id",
             node_id], stdout=subprocess.PIPE, stderr=log, text=True)
        self.procs.append(process)
        line = process.stdout.readline().strip()
        prefix = "shoald listening on "
        if not line.startswith(prefix):
            raise RuntimeError(f"shoald {node_id} did not start: {line!r} (see {data}.log)")
        self.addresses.append(line[len(prefix):].split(" ")[0])
        self.node_ids.append(node_id)

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.kill()
            p.wait()
            if p.stdout:
                p.stdout.close()
        self.procs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
