"""The Python SDK as a package: a fresh virtual environment made from Debian's /usr/bin/python3
with --system-site-packages (so it sees python3-grpcio, -protobuf, -numpy), `pip install` of the
build's package (build/python, offline: --no-build-isolation --no-deps --no-index), then the
README's tour from that environment's python, run outside the source and build trees, against a
real shoald. Run by ctest with SHOAL_BIN_DIR and SHOAL_PYTHON_DIR (build/python)."""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shoald_fixture import Shoald  # noqa: E402

# The tour: what README.md's "Search from Python" does, on a small collection.
TOUR = textwrap.dedent("""
    import sys
    import numpy as np
    import shoal
    print(shoal.__file__)
    print(shoal.__version__)
    client = shoal.Client(sys.argv[1])
    assert client.health() == "SERVING"
    client.create_collection("tour", dimension=4, metric="l2")
    vectors = np.eye(4, dtype=np.float32)
    assert client.upsert("tour", keys=[0, 1, 2, 3], vectors=vectors, sync=True) == 4
    info = client.describe_collection("tour")
    assert info.num_vectors == 4 and info.dimension == 4, info
    record = client.get("tour", [2])[0]
    assert record.key == 2 and np.array_equal(record.vector, vectors[2]), record
    ids, distances = client.search("tour", record.vector, k=2)
    assert ids[0] == 2 and distances[0] == 0, (ids, distances)
    ids, distances = client.search("tour", np.stack([vectors[1], vectors[3]]), k=3)
    assert ids.shape == (2, 3) and list(ids[:, 0]) == [1, 3], ids
    try:
        client.describe_collection("nope")
        raise AssertionError("describe_collection('nope') did not raise")
    except shoal.NotFoundError as e:
        assert e.details, e
    client.close()
    print("tour ok")
""")


def run(argv, **kwargs):
    """Runs argv; fails the test with its output when it exits non-zero."""
    result = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise AssertionError(f"{argv} exited {result.returncode}:\n{result.stdout}\n"
                             f"{result.stderr}")
    return result.stdout


class PythonSdkInstallTest(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="shoal-pip-")
        self.addCleanup(shutil.rmtree, self.work, ignore_errors=True)

    def test_pip_install_into_fresh_venv_then_tour(self):
        package = os.environ["SHOAL_PYTHON_DIR"]
        self.assertTrue(os.path.isfile(os.path.join(package, "pyproject.toml")), package)
        # Install from a copy: setuptools builds in the source tree (build/, *.egg-info), and
        # the build directory is not the test's to write.
        source = os.path.join(self.work, "src")
        shutil.copytree(package, source, ignore=shutil.ignore_patterns(
            "build", "*.egg-info", "__pycache__"))
        venv = os.path.join(self.work, "venv")
        run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv])
        python = os.path.join(venv, "bin", "python")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        run([python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
             source], env=env, cwd=self.work)

        shown = run([python, "-m", "pip", "show", "shoal"], env=env, cwd=self.work)
        self.assertIn("Name: shoal", shown)
        version = run([python, "-c", "import shoal; print(shoal.__version__)"], env=env,
                      cwd=self.work).strip()
        self.assertIn(f"Version: {version}", shown)

        tour = os.path.join(self.work, "tour.py")
        with open(tour, "w") as f:
            f.write(TOUR)
        with Shoald() as server:
            out = run([python, tour, server.address], env=env, cwd=self.work).splitlines()
        # Imported from the venv's site-packages, not from the build or the source tree.
        self.assertTrue(out[0].startswith(os.path.join(venv, "lib")), out[0])
        self.assertEqual(out[1], version)
        self.assertEqual(out[-1], "tour ok")


if __name__ == "__main__":
    unittest.main()
