"""End-to-end test of the Python SDK's tenant calls against a real shoald with API keys bound
to tenants: a tenant-bound key never reaches another tenant's vectors, whatever it names;
admin keys name any tenant. Run by ctest with /usr/bin/python3 and PYTHONPATH=build/python.

The wire checks need no engine. The tests that store tenants need the tenant engine behind
DB::CreateTenant (db/, tenants/); until it lands they skip, and run unchanged once it does."""

import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoal  # noqa: E402
from shoald_fixture import Shoald  # noqa: E402

ADMIN_KEY = "admin-key-0123456789"
WRITER_KEY = "writer-key-0123456789"
ACME_KEY = "acme-key-0123456789"
BETA_KEY = "beta-key-0123456789"


class PythonSdkTenantTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        key_file = os.path.join(cls.tmp.name, "keys")
        with open(key_file, "w") as f:
            f.write(f"admin {ADMIN_KEY} ops\n"
                    f"read-write {WRITER_KEY} loader\n"
                    f"read-write {ACME_KEY} acme-app tenant=acme\n"
                    f"read-write {BETA_KEY} beta-app tenant=beta\n")
        cls.server = Shoald(["--key-file", key_file])
        cls.admin = shoal.Client(cls.server.address, api_key=ADMIN_KEY, timeout=30)
        cls.acme = shoal.Client(cls.server.address, api_key=ACME_KEY, timeout=30)
        cls.beta = shoal.Client(cls.server.address, api_key=BETA_KEY, timeout=30)
        cls.admin.create_collection("docs", dimension=2)
        try:
            cls.admin.create_tenant("docs", "acme")
            cls.engine = True
        except shoal.ShoalError as e:
            if e.code.name != "UNIMPLEMENTED":
                raise
            cls.engine = False
            return
        cls.admin.create_tenant("docs", "beta", max_vectors=100)
        cls.admin.upsert("docs", [1, 2], np.array([[1, 0], [2, 0]]), tenant="acme")
        cls.beta.upsert("docs", [3, 4], np.array([[3, 0], [4, 0]]))  # beta's key: beta owns

    @classmethod
    def tearDownClass(cls):
        for c in (cls.admin, cls.acme, cls.beta):
            c.close()
        cls.server.__exit__(None, None, None)
        cls.tmp.cleanup()

    def need_engine(self):
        if not self.engine:
            self.skipTest("needs the tenant engine (DB::CreateTenant is Unimplemented)")

    def visible(self, client, **kw):
        return [r.key for r in client.get("docs", [1, 2, 3, 4], **kw) if r is not None]

    def test_wire_refuses_a_bound_key_naming_another_tenant(self):
        denied = shoal.PermissionDeniedError
        q = np.zeros(2)
        calls = [
            lambda: self.acme.get("docs", [3], tenant="beta"),
            lambda: self.acme.search("docs", q, k=5, tenant="beta"),
            lambda: self.acme.batch_search([{"collection": "docs", "queries": q}], tenant="beta"),
            lambda: self.acme.delete("docs", [3], tenant="beta"),
            lambda: self.acme.upsert("docs", [9], np.ones((1, 2)), tenant="beta"),
            lambda: self.acme.ingest("docs", [9], np.ones((1, 2)), tenant="beta"),
            lambda: self.acme.batch([("delete", "docs", [3])], tenant="beta"),
            lambda: self.acme.grant("docs", "acme", [3]),
            lambda: self.acme.revoke("docs", "beta", [3]),
            lambda: self.acme.key_tenants("docs", 3),
            lambda: self.acme.count_by_tenant("docs", "beta"),
            lambda: self.acme.describe_tenant("docs", "beta"),
            lambda: self.acme.delete_by_tenant("docs", "beta"),
            lambda: self.acme.create_tenant("docs", "gamma"),
            lambda: self.acme.drop_tenant("docs", "beta"),
            lambda: self.acme.set_tenant_quotas("docs", "beta", max_vectors=1),
            lambda: self.acme.set_tenant_state("docs", "beta", "inactive"),
            lambda: self.acme.drop_collection("docs"),
            lambda: shoal.Client(self.server.address, api_key=WRITER_KEY).get(
                "docs", [1], tenant="acme"),
        ]
        for i, call in enumerate(calls):
            with self.subTest(call=i), self.assertRaises(denied) as e:
                call()
            self.assertNotIn("-key-0123456789", str(e.exception))
        self.assertEqual(self.acme.describe_collection("docs").num_vectors, 0)
        with self.assertRaises(ValueError):
            self.admin.set_tenant_state("docs", "acme", "asleep")

    def test_bound_key_sees_its_own_tenant_only(self):
        self.need_engine()
        self.assertEqual(self.visible(self.acme), [1, 2])
        self.assertEqual(self.visible(self.beta), [3, 4])
        ids, _ = self.acme.search("docs", np.zeros(2), k=4)
        self.assertEqual(sorted(i for i in ids if i >= 0), [1, 2])
        self.assertEqual(self.acme.delete("docs", [3, 4]), 0)
        self.assertEqual(self.visible(self.beta), [3, 4])
        self.assertEqual([t.name for t in self.acme.list_tenants("docs")], ["acme"])
        self.assertEqual(self.acme.count_by_tenant("docs"), 2)
        info = self.acme.describe_tenant("docs")
        self.assertIsInstance(info, shoal.TenantInfo)
        self.assertEqual((info.name, info.vectors_owned), ("acme", 2))

    def test_admin_pages_grants_and_revokes(self):
        self.need_engine()
        self.assertEqual([t.name for t in self.admin.list_tenants("docs", page_size=1)],
                         ["acme", "beta"])
        page = self.admin.list_tenants_page("docs", page_size=1)
        self.assertEqual(len(page.tenants), 1)
        self.assertNotEqual(page.next_page_token, "")
        self.assertEqual(self.admin.describe_tenant("docs", "beta").quotas,
                         shoal.TenantQuotas(100, 0, 0.0))
        self.assertEqual(self.admin.grant("docs", "acme", [3]), 1)
        self.assertEqual(self.visible(self.acme), [1, 2, 3])
        self.assertEqual(self.admin.key_tenants("docs", 3), ["beta", "acme"])
        with self.assertRaises(shoal.PermissionDeniedError):
            self.acme.delete("docs", [3])
        self.assertEqual(self.admin.revoke("docs", "acme", [3]), 1)
        self.assertEqual(self.visible(self.acme), [1, 2])
        self.assertEqual(self.visible(self.admin, tenant="beta"), [3, 4])
        self.admin.set_tenant_state("docs", "beta", "active")
        with self.assertRaises(shoal.NotFoundError):
            self.admin.describe_tenant("docs", "nobody")


if __name__ == "__main__":
    unittest.main()
