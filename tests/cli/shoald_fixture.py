"""Starts a real shoald on 127.0.0.1:0 over a fresh data directory, for the Python tests.

    with Shoald() as server:
        client = shoal.Client(server.address)
"""

import os
import shutil
import subprocess
import tempfile


class Shoald:
    def __init__(self, extra_args=()):
        bin_dir = os.environ.get("SHOAL_BIN_DIR")
        if not bin_dir:
            raise RuntimeError("SHOAL_BIN_DIR is not set (run the test through ctest)")
        self.data = tempfile.mkdtemp(prefix="shoal-py-")
        self.stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [os.path.join(bin_dir, "shoald"), "--listen", "127.0.0.1:0", "--data", self.data,
             *extra_args],
            stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        line = self.process.stdout.readline().strip()
        prefix = "shoald listening on "
        if not line.startswith(prefix):
            self.stop()
            self.stderr.seek(0)
            raise RuntimeError(f"shoald did not start: {line!r}; stderr: {self.stderr.read()!r}")
        self.address = line[len(prefix):].split(" ")[0]

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        self.process.stdout.close()
        self.stderr.close()
        shutil.rmtree(self.data, ignore_errors=True)
