"""End to end: a Python client puts Shoal's semantic cache in front of a fake model, through a
real shoald (CacheService). Paraphrases of the same intent are answered from the cache, hits
are always the right intent's answer, tenants never see each other's entries, and the counters
agree with what the client saw. Run by ctest with /usr/bin/python3 and PYTHONPATH=build/python."""

import math
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoal  # noqa: E402
from shoald_fixture import Shoald  # noqa: E402

DIM = 32


class FakeModel:
    """A 'model' that knows each intent's answer and counts its calls."""

    def __init__(self):
        self.calls = 0

    def answer(self, intent: int) -> str:
        self.calls += 1
        return f"answer to intent {intent}"


class CacheInFrontOfAModelTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server = Shoald()
        cls.client = shoal.Client(cls.server.address)
        rng = np.random.default_rng(7)
        cls.intents = rng.standard_normal((20, DIM)).astype(np.float32)
        cls.intents /= np.linalg.norm(cls.intents, axis=1, keepdims=True)
        cls.rng = rng

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.__exit__(None, None, None)

    def paraphrase(self, intent: int) -> np.ndarray:
        """The intent's embedding plus noise: cosine ~0.98 to it."""
        v = self.intents[intent] + 0.12 * self.rng.standard_normal(DIM).astype(np.float32) / \
            math.sqrt(DIM)
        return v / np.linalg.norm(v)

    def serve(self, cache: str, intent: int, model: FakeModel, tenant: str = "acme") -> str:
        """What an LLM service does: ask the cache, else call the model and store."""
        embedding = self.paraphrase(intent)
        hit = self.client.cache_lookup(cache, embedding, category="faq", tenant=tenant,
                                       model="fake-1")
        if hit.hit:
            return hit.response.decode()
        answer = model.answer(intent)
        self.client.cache_store(cache, embedding, answer, category="faq", tenant=tenant,
                                model="fake-1", sync=True)
        return answer

    def test_cache_answers_paraphrases_and_counts_them(self):
        self.client.create_cache("faq_cache", dimension=DIM)
        self.client.set_cache_policy("faq_cache", shoal.CachePolicy(threshold=0.9, ttl_seconds=600),
                                     category="faq")
        self.assertEqual(self.client.get_cache_policy("faq_cache", "faq").threshold, 0.9)
        model = FakeModel()
        served = 0
        for _ in range(200):
            intent = int(self.rng.integers(0, len(self.intents)))
            self.assertEqual(self.serve("faq_cache", intent, model), f"answer to intent {intent}")
            served += 1
        # Every intent needs the model at least once; paraphrases afterwards come from the cache.
        self.assertGreaterEqual(model.calls, len(self.intents))
        self.assertLess(model.calls, served / 2)
        stats = self.client.cache_stats("faq_cache")
        faq = stats["categories"]["faq"]
        self.assertEqual(faq["lookups"], served)
        self.assertEqual(faq["misses"], model.calls)
        self.assertEqual(faq["hits"], served - model.calls)
        self.assertEqual(faq["stores"], model.calls)
        self.assertEqual(len(stats["partitions"]), 1)
        self.assertEqual(stats["partitions"][0]["tenant"], "acme")
        info = {c.name: c for c in self.client.list_caches()}["faq_cache"]
        self.assertEqual(info.entries, model.calls)
        self.assertEqual(info.categories, ["faq"])
        self.assertEqual(info.quarantine, "")  # it loaded: it serves
        self.assertEqual(info.index_builds, 0)  # a small shard: exact, nothing to build
        self.assertEqual(info.index_build_failures, 0)
        self.assertEqual(info.index_build_error, "")
        # The overload budget: no feedback yet, so no measured margin for the load band.
        self.assertEqual(faq["band_share"], 0.0)
        self.assertEqual(faq["learned_ttl_seconds"], 0.0)  # no stale answer reported

    def test_tenants_never_share_entries(self):
        self.client.create_cache("tenant_cache", dimension=DIM)
        self.client.set_cache_policy("tenant_cache", shoal.CachePolicy(threshold=0.0))
        embedding = self.intents[0]
        self.client.cache_store("tenant_cache", embedding, "alice's secret", prompt="my balance",
                                tenant="alice", model="fake-1", sync=True)
        other = self.client.cache_lookup("tenant_cache", embedding, prompt="my balance",
                                         tenant="bob", model="fake-1")
        self.assertFalse(other.hit)
        self.assertTrue(math.isnan(other.similarity))
        own = self.client.cache_lookup("tenant_cache", embedding, prompt="  My   balance",
                                       tenant="alice", model="fake-1")
        self.assertTrue(own.hit and own.exact)
        self.assertEqual(own.response, b"alice's secret")
        self.assertEqual(self.client.cache_invalidate("tenant_cache", tenant="alice"), 1)
        self.assertEqual(self.client.cache_invalidate("tenant_cache", tenant="alice",
                                                     dry_run=False), 1)
        self.assertFalse(self.client.cache_lookup("tenant_cache", embedding, prompt="my balance",
                                                  tenant="alice", model="fake-1").hit)

    def test_feedback_and_errors(self):
        self.client.create_cache("fb_cache", dimension=DIM)
        self.client.set_cache_policy("fb_cache", shoal.CachePolicy(threshold=0.5))
        entry = self.client.cache_store("fb_cache", self.intents[1], "x", model="m", sync=True)
        probe = self.paraphrase(1)
        hit = self.client.cache_lookup("fb_cache", probe, model="m")
        self.assertTrue(hit.hit)
        self.assertEqual(hit.entry_id, entry)
        self.client.cache_feedback("fb_cache", entry, correct=False, similarity=hit.similarity)
        self.assertFalse(self.client.cache_lookup("fb_cache", probe, model="m").hit)
        self.assertEqual(self.client.cache_stats("fb_cache")["total"]["false_hit_reports"], 1)
        with self.assertRaises(shoal.InvalidArgumentError) as e:
            self.client.cache_lookup("fb_cache", [1.0, 2.0], model="m")
        self.assertIn("embedding", str(e.exception))
        with self.assertRaises(shoal.NotFoundError):
            self.client.cache_lookup("no_such_cache", self.intents[0])
        with self.assertRaises(shoal.InvalidArgumentError):
            self.client.set_cache_policy("fb_cache", shoal.CachePolicy(threshold=1.5))
        self.client.report_model_load("m", 0.9)
        with self.assertRaises(shoal.InvalidArgumentError):
            self.client.report_model_load("m", 2.0)
        self.client.drop_cache("fb_cache")
        self.assertNotIn("fb_cache", [c.name for c in self.client.list_caches()])


if __name__ == "__main__":
    unittest.main()
