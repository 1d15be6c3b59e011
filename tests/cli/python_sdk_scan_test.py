"""End-to-end test of records by filter through the Python SDK against a real shoald: count,
scroll (one page, every page, tokens that survive writes), delete by filter (and its guards),
search hits with attributes, errors naming the field, roles and tenant-bound keys. Run by ctest
with /usr/bin/python3 and PYTHONPATH=build/python."""

import os
import sys
import tempfile
import unittest
import warnings

import grpc
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoal  # noqa: E402
from shoal import filters as f  # noqa: E402
from shoald_fixture import Shoald  # noqa: E402

ADMIN_KEY = "admin-key-0123456789"
READER_KEY = "reader-key-0123456789"
ACME_KEY = "acme-key-0123456789"


class PythonSdkScanTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        key_file = os.path.join(cls.tmp.name, "keys")
        with open(key_file, "w") as out:
            out.write(f"admin {ADMIN_KEY} ops\n"
                      f"read-only {READER_KEY} dashboards\n"
                      f"read-write {ACME_KEY} acme-app tenant=acme\n")
        cls.server = Shoald(["--key-file", key_file])
        cls.admin = shoal.Client(cls.server.address, api_key=ADMIN_KEY, timeout=30)
        cls.reader = shoal.Client(cls.server.address, api_key=READER_KEY, timeout=30)
        cls.acme = shoal.Client(cls.server.address, api_key=ACME_KEY, timeout=30)

    @classmethod
    def tearDownClass(cls):
        for c in (cls.admin, cls.reader, cls.acme):
            c.close()
        cls.server.__exit__(None, None, None)
        cls.tmp.cleanup()

    def fill(self, name, n):
        self.admin.create_collection(name, dimension=2)
        vectors = np.stack([np.arange(n), np.ones(n)], axis=1).astype(np.float32)
        attributes = [{"bucket": i % 10, "name": f"r{i}"} for i in range(n)]
        tags = [["hot"] if i % 3 == 0 else [] for i in range(n)]
        self.admin.upsert(name, range(n), vectors, attributes, tags, sync=True)

    def test_count_scroll_and_scroll_all(self):
        self.fill("scan_a", 250)
        low = f.range("bucket", 0, 4)
        self.assertEqual(self.reader.count("scan_a"), 250)
        self.assertEqual(self.reader.count("scan_a", filter=low), 125)
        page = self.reader.scroll("scan_a", filter=low, limit=10)
        self.assertIsInstance(page, shoal.ScrollPage)
        self.assertEqual([r.key for r in page.records], [0, 1, 2, 3, 4, 10, 11, 12, 13, 14])
        self.assertEqual(page.records[3].attributes, {"bucket": 3, "name": "r3"})
        self.assertEqual(page.records[3].tags, ["hot"])
        self.assertEqual(page.records[3].vector.size, 0)  # vectors only when asked
        self.assertTrue(page.next_page_token)
        with_vectors = self.reader.scroll("scan_a", limit=2, with_vectors=True,
                                          with_attributes=False)
        np.testing.assert_array_equal(with_vectors.records[1].vector, [1, 1])
        self.assertEqual(with_vectors.records[1].attributes, {})
        # A token survives writes: keys before it change, the scroll goes on after it.
        self.admin.delete("scan_a", [14])
        self.admin.upsert("scan_a", [5], np.array([[5, 1]]), [{"bucket": 0}])
        rest = self.reader.scroll("scan_a", filter=low, limit=3, page_token=page.next_page_token)
        self.assertEqual([r.key for r in rest.records], [20, 21, 22])
        keys = [r.key for r in self.reader.scroll_all("scan_a", filter=low, page_size=7)]
        self.assertEqual(len(keys), 125)  # 14 gone, 5 now in bucket 0
        self.assertEqual(keys, sorted(keys))
        self.assertIn(5, keys)

    def test_delete_by_filter_and_its_guards(self):
        self.fill("scan_d", 3000)
        hot = f.has_tag("hot")
        self.assertEqual(self.admin.delete("scan_d", filter=hot, sync=True), 1000)
        self.assertEqual(self.admin.count("scan_d", filter=hot), 0)
        self.assertEqual(self.admin.count("scan_d"), 2000)
        with self.assertRaises(ValueError):
            self.admin.delete("scan_d")  # neither keys nor filter
        with self.assertRaises(shoal.InvalidArgumentError) as e:
            self.admin.delete_by_filter("scan_d")  # no filter, no all=True
        self.assertIn("filter: required", e.exception.details)
        with self.assertRaises(shoal.InvalidArgumentError):
            self.admin.delete_by_filter("scan_d", filter=hot, all=True)
        with self.assertRaises(shoal.PermissionDeniedError):
            self.reader.delete_by_filter("scan_d", all=True)  # read-only key
        self.assertEqual(self.admin.delete_by_filter("scan_d", all=True), 2000)
        self.assertEqual(self.admin.count("scan_d"), 0)

    def test_errors_name_the_field(self):
        self.fill("scan_e", 5)
        cases = [(lambda: self.reader.scroll("scan_e", limit=10001), "limit"),
                 (lambda: self.reader.scroll("scan_e", page_token="garbage"), "page_token"),
                 (lambda: self.reader.count("scan_e", filter=f.range("bucket", 5, 1)), "filter")]
        for call, field in cases:
            with self.assertRaises(shoal.InvalidArgumentError) as e:
                call()
            self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn(field, e.exception.details)
        with self.assertRaises(shoal.NotFoundError):
            self.reader.count("nope")

    def test_search_hits_carry_attributes(self):
        self.fill("scan_s", 20)
        ids, distances = self.reader.search("scan_s", np.array([3, 1]), k=2)  # arrays as before
        self.assertEqual(ids.tolist(), [3, 2])
        hits = self.reader.search("scan_s", np.array([3, 1]), k=2, with_attributes=True)
        self.assertEqual([h.key for h in hits], [3, 2])
        self.assertEqual(hits[0].attributes, {"bucket": 3, "name": "r3"})
        self.assertEqual(hits[0].tags, ["hot"])
        self.assertEqual(hits[0].vector.size, 0)
        both = self.reader.search("scan_s", np.array([[3, 1], [9, 1]]), k=1,
                                  with_attributes=True, with_vectors=True)
        self.assertEqual([[h.key for h in q] for q in both], [[3], [9]])
        np.testing.assert_array_equal(both[1][0].vector, [9, 1])

    def test_a_filter_that_can_match_nothing_warns_why(self):
        self.fill("scan_w", 20)
        query = np.array([3, 1], dtype=np.float32)
        for bad, why in [(f.eq("bukcet", 3), "no record has attribute 'bukcet'"),
                         (f.eq("bucket", "3"), "attribute 'bucket' holds only numbers"),
                         (f.has_tag("cold"), "no record has tag 'cold'")]:
            with self.assertWarns(shoal.FilterWarning) as caught:
                ids, _ = self.reader.search("scan_w", query, k=3, filter=bad)
            self.assertEqual(len(ids[ids >= 0]), 0)
            self.assertIn(why, str(caught.warning))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a filter that can match warns about nothing
            ids, _ = self.reader.search("scan_w", query, k=3, filter=f.eq("bucket", 3))
            self.assertEqual(sorted(i for i in ids.tolist() if i >= 0), [3, 13])

    def test_a_tenant_bound_key_counts_scrolls_and_deletes_only_its_own(self):
        self.admin.create_collection("scan_t", dimension=2)
        self.admin.create_tenant("scan_t", "acme")
        self.admin.upsert("scan_t", [1, 2], np.array([[1, 0], [2, 0]]), tenant="acme")
        self.admin.upsert("scan_t", [3, 4], np.array([[3, 0], [4, 0]]))
        self.assertEqual(self.acme.count("scan_t"), 2)
        self.assertEqual([r.key for r in self.acme.scroll_all("scan_t")], [1, 2])
        with self.assertRaises(shoal.PermissionDeniedError):
            self.acme.count("scan_t", tenant="beta")
        self.assertEqual(self.acme.delete_by_filter("scan_t", all=True), 2)
        self.assertEqual(self.admin.count("scan_t"), 2)
        self.assertEqual([r.key for r in self.admin.scroll_all("scan_t")], [3, 4])


if __name__ == "__main__":
    unittest.main()
