"""The web console in a real browser (Debian's chromium + chromium-driver, headless, driven by
python3-selenium) against a real shoald loaded with 2,000 Fashion-MNIST images: every page
loads, search by example shows the neighbours the DB's exact search finds, a read-only key
cannot write (the page hides it and the API answers 403), an unknown key sees nothing, the
caches page shows a semantic cache's stats and edits a policy after confirmation, and a key
bound to tenant acme sees only acme's records, tenant and cache partitions (in the page and in
every API answer), never tenant globex's.

Skips (exit 77) with the reason when chromium, chromedriver, selenium or the dataset is missing
($SHOAL_CHROMIUM / $SHOAL_CHROMEDRIVER override where chromium and chromedriver are looked for).
Screenshots of each page go to $SHOAL_CONSOLE_SHOTS (default /tmp/console-shots).
"""

import gzip
import json
import os
import shutil
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))

SKIP = 77
CHROMIUM = os.environ.get("SHOAL_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("SHOAL_CHROMEDRIVER", "/usr/bin/chromedriver")
FASHION = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
LABELS = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz"
ROWS = 2000
ADMIN_KEY = "console-admin-key-0123456789"
READER_KEY = "console-reader-key-0123456789"
ACME_KEY = "console-acme-key-0123456789"
TENANT_ROWS = 60  # images per tenant in collection "shop": acme keys 0.., globex keys 1000..
SHOTS = os.environ.get("SHOAL_CONSOLE_SHOTS", "/tmp/console-shots")


def missing():
    """Why the test cannot run here, or None."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver"),
                          (FASHION, "dataset-fashion-mnist")):
        if not os.path.exists(path):
            return f"{path} is missing (install Debian's {package})"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "python3 module selenium is missing (install Debian's python3-selenium)"
    return None


def load_fashion(rows):
    """The first `rows` training images as float32 (rows, 784) and their labels."""
    import numpy as np
    with gzip.open(FASHION, "rb") as f:
        f.read(16)
        images = np.frombuffer(f.read(rows * 784), dtype=np.uint8).reshape(rows, 784)
    with gzip.open(LABELS, "rb") as f:
        f.read(8)
        labels = np.frombuffer(f.read(rows), dtype=np.uint8)
    return images.astype(np.float32), labels.astype(int)


def api(port, method, path, key, body=None, headers=None):
    """(HTTP status, JSON answer) of the console API."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/{path}", data=data,
                                     method=method)
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


class ConsoleBrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import numpy as np
        import shoal
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from shoald_fixture import Shoald

        started = time.time()
        os.makedirs(SHOTS, exist_ok=True)
        cls.tmp = tempfile.mkdtemp(prefix="shoal-console-")
        keys = os.path.join(cls.tmp, "keys")
        with open(keys, "w") as f:
            f.write(f"admin {ADMIN_KEY} ops\nread-only {READER_KEY} dashboards\n"
                    f"read-only {ACME_KEY} acme-dash tenant=acme\n")
        cls.server = Shoald(["--key-file", keys, "--console-listen", "127.0.0.1:0",
                             "--snapshot-dir", os.path.join(cls.tmp, "snapshots")])
        line = cls.server.process.stdout.readline().strip()
        assert line.startswith("shoald console on http://"), line
        cls.url = line[len("shoald console on "):]
        cls.port = int(cls.url.rstrip("/").rsplit(":", 1)[1])

        cls.vectors, cls.labels = load_fashion(ROWS)
        cls.client = shoal.Client(cls.server.address, api_key=ADMIN_KEY, timeout=60)
        cls.client.create_collection("fashion", dimension=784, metric="l2")
        for start in range(0, ROWS, 500):
            end = min(ROWS, start + 500)
            cls.client.upsert("fashion", range(start, end), cls.vectors[start:end],
                              [{"label": int(x)} for x in cls.labels[start:end]])
        cls.np = np
        cls.fill_tenants_and_cache()

        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1400,1000"):
            options.add_argument(arg)
        cls.browser = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        cls.browser.set_page_load_timeout(30)
        print(f"  set-up (shoald, {ROWS} rows, chromium): {time.time() - started:.1f} s",
              file=sys.stderr)

    @classmethod
    def fill_tenants_and_cache(cls):
        """Collection "shop": acme owns images 0.. as keys 0.., globex images 60.. as keys
        1000... Cache "answers": category "code" (threshold 0.95) with entries and lookups in
        a partition of each tenant."""
        client, rows = cls.client, TENANT_ROWS
        client.create_collection("shop", dimension=784, metric="l2")
        for tenant, base in (("acme", 0), ("globex", 1000)):
            client.create_tenant("shop", tenant)
            first = 0 if tenant == "acme" else rows
            client.upsert("shop", range(base, base + rows), cls.vectors[first:first + rows],
                          [{"label": int(x)} for x in cls.labels[first:first + rows]],
                          tenant=tenant)
        from shoal.cache import CachePolicy
        client.create_cache("answers", dimension=8)
        client.set_cache_policy("answers", CachePolicy(threshold=0.95), category="code")
        for tenant in ("acme", "globex"):
            cls.cache_traffic(tenant, 3)

    @classmethod
    def cache_traffic(cls, tenant, lookups):
        """A store and `lookups` rounds of (exact hit, near hit, miss) in tenant's partition."""
        np, client = cls.np, cls.client
        model = f"{tenant}-llm"
        base = np.eye(8, dtype=np.float32)[0]
        client.cache_store("answers", base, f"{tenant} answer", prompt="sort a list",
                           category="code", tenant=tenant, model=model)
        for _ in range(lookups):
            client.cache_lookup("answers", base, prompt="sort a list", category="code",
                                tenant=tenant, model=model)
            client.cache_lookup("answers", base + 0.01, prompt="sort the list", category="code",
                                tenant=tenant, model=model)
            client.cache_lookup("answers", np.eye(8, dtype=np.float32)[3], prompt="other",
                                category="code", tenant=tenant, model=model)

    @classmethod
    def tearDownClass(cls):
        for name in ("browser", "client"):
            thing = getattr(cls, name, None)
            if thing is not None:
                thing.quit() if name == "browser" else thing.close()
        if getattr(cls, "server", None) is not None:
            cls.server.__exit__(None, None, None)
        shutil.rmtree(getattr(cls, "tmp", ""), ignore_errors=True)

    def setUp(self):
        self.started = time.time()

    def tearDown(self):
        print(f"  {self.id().rsplit('.', 1)[1]}: {time.time() - self.started:.1f} s",
              file=sys.stderr)

    # ---- helpers ----

    def wait(self, condition, what, timeout=20):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            try:
                value = condition()
                if value:
                    return value
            except Exception as error:  # the page is still rendering
                last = error
            time.sleep(0.1)
        self.fail(f"timed out waiting for {what} (last error: {last}); page: "
                  f"{self.browser.find_element('tag name', 'main').text[:500]}")

    def read(self, read, what):
        """read()'s value, read again when an element it touched went stale: the builds,
        caches and collections pages re-draw their tables at each poll (every 0.5, 1 or 5 s),
        and a row whose place or kind changed is replaced."""
        return self.wait(lambda: (read(),), what)[0]

    def css(self, selector):
        return self.browser.find_elements("css selector", selector)

    def shot(self, name, whole=False):
        """A screenshot of the window, or with `whole` of the whole page (up to 3000 px)."""
        if whole:
            height = self.browser.execute_script("return document.documentElement.scrollHeight")
            self.browser.set_window_size(1400, min(3000, height + 140))
        self.browser.save_screenshot(os.path.join(SHOTS, f"{name}.png"))
        if whole:
            self.browser.set_window_size(1400, 1000)

    def sign_in(self, key):
        self.browser.get(self.url)
        self.browser.execute_script("sessionStorage.clear()")
        self.browser.get(self.url + "#/collections")
        field = self.wait(lambda: self.css("#key"), "the sign-in form")[0]
        field.send_keys(key)
        self.css("#login")[0].click()

    def drive_cache_chart(self, tenants, points):
        """Cache lookups in `tenants`' partitions while the caches page polls (every second),
        until its hit-rate chart has `points` points."""
        def charted():
            box = self.css("#cache-view .charts")
            return int(box[0].get_attribute("data-points") or 0) if box else 0
        for _ in range(80):
            for tenant in tenants:
                self.cache_traffic(tenant, 1)
            if charted() >= points:
                break
            time.sleep(0.2)
        self.assertGreaterEqual(charted(), points, "the hit-rate chart")

    def go(self, hash_):
        self.browser.execute_script(f"location.hash = {json.dumps(hash_)}")

    # ---- tests (run in name order) ----

    def test_1_unknown_key_sees_nothing(self):
        self.sign_in("not-a-key-of-this-server-000")
        error = self.wait(lambda: self.css("#login-form .error"), "the sign-in error")[0]
        self.assertIn("UNAUTHENTICATED", error.text)
        self.assertFalse(self.css("#nav")[0].is_displayed())
        self.assertNotIn("fashion", self.browser.page_source)
        self.shot("login-unknown-key")
        for path in ("collections", "collections/fashion", "metrics", "builds"):
            status, answer = api(self.port, "GET", path, "not-a-key-of-this-server-000")
            self.assertEqual(status, 401, path)
            self.assertNotIn("fashion", json.dumps(answer))
        self.assertEqual(api(self.port, "GET", "collections", None)[0], 401)

    def test_2_collections_page(self):
        self.sign_in(ADMIN_KEY)
        def fashion_row():
            row = self.css('#collections tr[data-collection="fashion"]')[0]
            return row.find_element("css selector", "[data-test=num-vectors]").text, row.text
        vectors, text = self.read(fashion_row, "the fashion row")
        self.assertIn("2,000", vectors)
        self.assertIn("784", text)
        self.assertIn("flat", text)
        self.assertNotIn(ADMIN_KEY, self.browser.page_source)
        self.shot("collections")

    def test_3_collection_page_browses_with_a_filter(self):
        self.go("#/collection/fashion")
        self.wait(lambda: self.css("#collection-info"), "the collection's description")
        self.wait(lambda: len(self.css("#records tr[data-key]")) > 0, "browsed records")
        self.css("#browse-filter")[0].send_keys(
            '{"equals": {"name": "label", "value": {"int_value": 3}}}')
        self.css("#browse")[0].click()
        self.wait(lambda: all("label=3" in r.text for r in self.css("#records tr[data-key]"))
                  and len(self.css("#records tr[data-key]")) == 24, "records with label 3")
        self.assertEqual(len(self.css("#records tr[data-key] canvas.picture")), 24)
        # Pages in key order: "Next page" goes on after the last key shown.
        keys = [int(r.get_attribute("data-key")) for r in self.css("#records tr[data-key]")]
        self.assertEqual(keys, sorted(keys))
        self.css("#browse-next")[0].click()
        self.wait(lambda: (lambda k: len(k) == 24 and k[0] > keys[-1])(
            [int(r.get_attribute("data-key")) for r in self.css("#records tr[data-key]")]),
            "the next page of records with label 3")
        self.assertTrue(all("label=3" in r.text for r in self.css("#records tr[data-key]")))
        self.shot("collection")
        first = self.css("#records tr[data-key] a")[0]
        first.click()
        detail = self.wait(lambda: self.css("#record-detail"), "the record's detail")[0]
        self.assertEqual(len(detail.find_elements("css selector", "canvas.picture")), 1)
        self.assertIn("vector (784 values)", detail.text)
        self.shot("record")

    def test_4_search_by_example_shows_the_exact_neighbours(self):
        np = self.np
        for query_key in (17, 1234):
            self.go(f"#/search/fashion/{query_key}")
            self.wait(lambda: self.css("#hits[data-done]") and self.css("#hits .hit"), "hits")
            shown = [int(h.get_attribute("data-key")) for h in self.css("#hits .hit")]
            self.assertEqual(len(shown), 10)
            # The DB's exact search (the collection has no index yet: flat)...
            exact = self.client.search("fashion", self.vectors[query_key], k=10)
            self.assertEqual(shown, [int(i) for i in exact.ids])
            # ...and brute force here agree (ties aside).
            distances = ((self.vectors - self.vectors[query_key]) ** 2).sum(axis=1)
            tenth = np.sort(distances)[9]
            self.assertTrue(all(distances[k] <= tenth for k in shown))
            self.assertEqual(shown[0], query_key)
            self.assertEqual(len(self.css("#hits .hit canvas.picture")), 10)
            self.assertEqual(len(self.css("#query canvas.picture")), 1)
            self.go("#/collections")
        # A pasted vector (record 99's, lightly changed), with a filter on the label.
        self.go("#/search/fashion")
        self.wait(lambda: self.css("#search-collection option"), "the search form")
        query = self.vectors[99].copy()
        query[::7] += 1.0
        self.browser.execute_script("document.getElementById('search-vector').value = arguments[0]",
                                    " ".join(f"{v:g}" for v in query))
        label = int(self.labels[99])
        self.css("#search-filter")[0].send_keys(
            json.dumps({"equals": {"name": "label", "value": {"int_value": label}}}))
        self.css("#search")[0].click()
        self.wait(lambda: self.css("#hits[data-done]") and self.css("#hits .hit"), "hits")
        shown = [int(h.get_attribute("data-key")) for h in self.css("#hits .hit")]
        distances = ((self.vectors - query) ** 2).sum(axis=1)
        distances[self.labels != label] = np.inf
        self.assertEqual(shown, [int(i) for i in np.argsort(distances, kind="stable")[:10]])
        self.go("#/search/fashion/1234")
        self.wait(lambda: self.css("#hits[data-done]") and self.css("#hits .hit"), "hits")
        self.wait(lambda: self.css("#query span") and "1234" in self.css("#query")[0].text, "q")
        self.shot("search")

    def test_5_index_build_shows_progress(self):
        self.go("#/builds")
        spec = self.wait(lambda: self.css("#build-spec"), "the build form")[0]
        self.wait(lambda: self.css("#build-collection option"), "collections in the form")
        spec.clear()
        spec.send_keys("spann:seed=7")
        self.css("#build")[0].click()
        self.wait(lambda: self.css("#builds tr[data-build]"), "the build's row")
        self.shot("builds-running")
        self.wait(lambda: self.css('#builds tr[data-build][data-done="1"]'), "the build to end",
                  timeout=120)
        def build_row():
            row = self.css("#builds tr[data-build]")[0]
            return row.get_attribute("data-failed"), row.text
        failed, text = self.read(build_row, "the build's row")
        self.assertEqual(failed, "0", text)
        self.assertIn("100%", text)
        self.shot("builds")
        info = self.client.describe_collection("fashion")
        self.assertTrue(info.index.startswith("spann"), info)

    def test_6_snapshots_create_and_restore_with_confirmation(self):
        self.go("#/snapshots")
        self.wait(lambda: self.css("#snapshot-name"), "the snapshot form")[0].send_keys("shot1")
        self.css("#snapshot")[0].click()
        self.wait(lambda: self.css('#snapshots tr[data-snapshot="shot1"]'), "the new snapshot")
        self.css('#snapshots tr[data-snapshot="shot1"] button')[0].click()
        ok = self.wait(lambda: self.css("#confirm-ok"), "the confirmation")[0]
        self.assertFalse(ok.is_enabled())  # until the name is typed
        self.shot("restore-confirm")
        self.css("#confirm-cancel")[0].click()
        self.assertTrue(self.css("#modal")[0].get_attribute("hidden") is not None)
        self.css('#snapshots tr[data-snapshot="shot1"] button')[0].click()
        self.wait(lambda: self.css("#confirm-typed"), "the confirmation")[0].send_keys("shot1")
        self.css("#confirm-ok")[0].click()
        self.wait(lambda: "Restored shot1" in self.css("#snapshot-status")[0].text, "the restore")
        self.shot("snapshots")
        self.assertEqual(self.client.describe_collection("fashion").num_vectors, ROWS)

    def test_7_metrics(self):
        self.go("#/metrics")
        self.wait(lambda: float(self.css("[data-test=rpcs]")[0].text) > 0, "the metrics")
        # Searches and synced writes while the charts poll, so every line has points.
        for i in range(40):
            self.client.search("fashion", self.vectors[i], k=5)
            if i % 4 == 0:
                self.client.upsert("fashion", [i], self.vectors[i:i + 1],
                                   [{"label": int(self.labels[i])}], sync=True)
            time.sleep(0.1)
        self.wait(lambda: any("requests:" in s.text and not s.text.endswith(": –")
                              for s in self.css('[data-series="requests"]')), "a request rate")
        self.wait(lambda: not self.css('[data-series="syncs/s"]')[0].text.endswith(": 0"),
                  "a WAL sync rate")
        self.assertEqual(len(self.css("#charts canvas")), 4)
        self.shot("metrics")
        self.go("#/tenants/shop")
        self.wait(lambda: len(self.css("#tenants tr[data-tenant]")) == 2, "both tenants")
        acme = self.css('#tenants tr[data-tenant="acme"]')[0].text
        self.assertIn(str(TENANT_ROWS), acme)
        self.shot("tenants")

    def test_7b_caches_page_shows_stats_and_edits_a_policy_after_confirmation(self):
        # The restore of test 6 reopened the DB: counters start again; entries stayed.
        self.go("#/caches")
        self.wait(lambda: self.css('#caches tr[data-cache="answers"]'), "the cache's row")
        self.wait(lambda: self.css("#cache-policies tr[data-category]"), "the policies")
        self.drive_cache_chart(["acme", "acme", "globex"], 3)
        self.wait(lambda: self.css("#cache-summary [data-test=hit-rate]")[0].text == "66.7%",
                  "the hit rate")
        def code_row():
            row = self.css('#cache-categories tr[data-row="code"]')[0]
            return (row.text, row.find_element("css selector", "[data-test=learned-ttl]").text,
                    self.css("#cache-categories thead")[0].text)
        code, learned_ttl, head = self.read(code_row, "the category's counters")
        self.assertIn("66.7%", code)
        # No stale answer reported: no learned TTL, the policy's applies.
        self.assertEqual(learned_ttl, "—")
        self.assertIn("learned ttl", head.lower())
        # The page polls every second; rows that stay are updated in place, not re-created (a
        # user selecting a row's text keeps the selection): the row found before two more polls
        # is the row after them.
        row = self.css('#cache-categories tr[data-row="code"]')[0]
        polled = int(self.css("#cache-view .charts")[0].get_attribute("data-points"))
        self.drive_cache_chart(["acme"], polled + 2)
        self.assertIn("code", row.text)  # raises StaleElementReferenceException if re-created
        tenants = self.read(lambda: {r.get_attribute("data-tenant")
                                     for r in self.css("#cache-partitions tbody tr")},
                            "the partitions")
        self.assertEqual(tenants, {"acme", "globex"})
        self.assertEqual(len(self.css("#charts canvas, #cache-view canvas")), 1)
        self.shot("caches", whole=True)
        # Edit "code": the change waits for the confirmation; Cancel changes nothing.
        self.css('#cache-policies tr[data-category="code"] button[data-action="edit-policy"]')[0].click()
        threshold = self.wait(lambda: self.css("#policy-threshold"), "the policy form")[0]
        threshold.clear()
        threshold.send_keys("0.8")
        self.css("#policy-save")[0].click()
        self.wait(lambda: self.css("#confirm-cancel"), "the confirmation")
        self.assertIn("threshold: 0.95 → 0.8", self.css("#modal")[0].text)
        self.shot("cache-policy-confirm")
        self.css("#confirm-cancel")[0].click()
        self.assertAlmostEqual(self.client.get_cache_policy("answers", "code").threshold, 0.95)
        self.css("#policy-save")[0].click()
        self.wait(lambda: self.css("#confirm-ok"), "the confirmation")[0].click()
        self.wait(lambda: not self.css("#policy-form"), "the saved policy")
        self.assertAlmostEqual(self.client.get_cache_policy("answers", "code").threshold, 0.8)
        self.wait(lambda: "0.8" in self.css('#cache-policies tr[data-category="code"]')[0].text,
                  "the new threshold in the table")

    def test_8_drop_asks_for_confirmation(self):
        self.go("#/collections")
        self.wait(lambda: self.css("#new-name"), "the create form")[0].send_keys("scratch")
        self.css("#create")[0].click()
        drop = '#collections tr[data-collection="scratch"] button[data-action="drop"]'
        self.wait(lambda: self.css(drop), "the new collection")[0].click()
        self.wait(lambda: self.css("#confirm-cancel"), "the confirmation")[0].click()
        self.assertIn("scratch", [c.name for c in self.client.list_collections()])
        self.css(drop)[0].click()
        self.wait(lambda: self.css("#confirm-typed"), "the confirmation")[0].send_keys("scratch")
        self.css("#confirm-ok")[0].click()
        self.wait(lambda: not self.css('#collections tr[data-collection="scratch"]'), "the drop")
        self.assertNotIn("scratch", [c.name for c in self.client.list_collections()])

    def test_9_read_only_key_cannot_write(self):
        self.sign_in(READER_KEY)
        self.wait(lambda: self.css('#collections tr[data-collection="fashion"]'), "collections")
        self.assertIn("dashboards (read-only)", self.css("#who")[0].text)
        self.assertEqual(self.css("#create-form"), [])
        self.assertEqual(self.css('button[data-action="drop"]'), [])
        self.shot("read-only")
        self.go("#/builds")
        self.wait(lambda: "needs an admin key" in self.css("main")[0].text, "no build form")
        self.assertEqual(self.css("#build-form"), [])
        self.go("#/snapshots")
        self.wait(lambda: self.css("#snapshots-denied"), "no snapshot form")
        self.go("#/caches/answers")  # the policies without controls
        self.wait(lambda: self.css("#policies-read-only"), "read-only policies")
        self.assertTrue(self.css("#cache-policies tr[data-category]"))
        self.assertEqual(self.css('button[data-action="edit-policy"], #policy-new'), [])
        self.shot("caches-read-only")
        self.go("#/search/fashion/5")  # reads still work
        self.wait(lambda: len(self.css("#hits .hit")) == 10, "hits for a read-only key")
        # The API refuses what the page hides.
        for method, path, body in (("DELETE", "collections/fashion", None),
                                   ("POST", "collections", {"name": "x", "dimension": 2}),
                                   ("POST", "collections/fashion/build", {"spec": "flat"}),
                                   ("POST", "snapshots", {"name": "s2"}),
                                   ("POST", "snapshots/shot1/restore", {}),
                                   ("POST", "caches/answers/policy",
                                    {"category": "code", "policy": {"enabled": False}})):
            status, answer = api(self.port, method, path, READER_KEY, body)
            self.assertEqual(status, 403, path)
            self.assertEqual(answer["error"]["code"], "PERMISSION_DENIED")
        self.assertEqual(self.client.describe_collection("fashion").num_vectors, ROWS)
        self.assertNotIn("x", [c.name for c in self.client.list_collections()])

    def test_9b_tenant_bound_key_sees_only_its_tenant(self):
        np = self.np
        self.sign_in(ACME_KEY)
        self.wait(lambda: self.css('#collections tr[data-collection="shop"]'), "shop")
        self.assertIn("acme-dash (read-only, tenant acme)", self.css("#who")[0].text)
        self.assertEqual(self.read(lambda: self.css('#collections tr[data-collection="shop"]')[0]
                                   .find_element("css selector", "[data-test=tenant-vectors]").text,
                                   "shop's tenant vectors"), str(TENANT_ROWS))
        for page in ("builds", "snapshots"):
            self.assertFalse(self.css(f'#nav a[data-page="{page}"]')[0].is_displayed(), page)
        self.assertEqual(self.css("#create-form"), [])
        self.shot("tenant-bound-collections")
        # Browsing shop shows acme's records only, page after page.
        self.go("#/collection/shop")
        self.wait(lambda: len(self.css("#records tr[data-key]")) == 24, "acme's records")
        seen = []
        while True:
            keys = [int(r.get_attribute("data-key")) for r in self.css("#records tr[data-key]")]
            seen += keys
            if self.css("#browse-next")[0].get_attribute("hidden") is not None:
                break
            self.css("#browse-next")[0].click()
            self.wait(lambda: [int(r.get_attribute("data-key"))
                               for r in self.css("#records tr[data-key]")][:1] != keys[:1],
                      "the next page")
        self.assertEqual(seen, list(range(TENANT_ROWS)))
        self.shot("tenant-bound-collection")
        # Search by example: acme's nearest neighbours only, in the DB's order for acme.
        self.go("#/search/shop/5")
        self.wait(lambda: self.css("#hits[data-done]") and self.css("#hits .hit"), "hits")
        shown = [int(h.get_attribute("data-key")) for h in self.css("#hits .hit")]
        distances = ((self.vectors[:TENANT_ROWS] - self.vectors[5]) ** 2).sum(axis=1)
        self.assertEqual(sorted(shown), sorted(int(k) for k in np.argsort(distances)[:10]))
        self.shot("tenant-bound-search")
        # globex's record is not there for it: neither as a query nor as a record.
        self.go("#/search/shop/1005")
        error = self.wait(lambda: self.css("[data-test=error]") and
                          [e for e in self.css("[data-test=error]") if e.text], "the error")[0]
        self.assertIn("NOT_FOUND", error.text)
        self.assertEqual(self.css("#hits .hit"), [])
        self.go("#/tenants/shop")
        self.wait(lambda: self.css("#tenants tr[data-tenant]"), "its tenant")
        self.assertEqual([r.get_attribute("data-tenant")
                          for r in self.css("#tenants tr[data-tenant]")], ["acme"])
        self.shot("tenant-bound-tenants")
        self.go("#/caches/answers")
        self.wait(lambda: self.css("#cache-partitions tbody tr[data-tenant]"), "its partitions")
        self.assertEqual(self.read(lambda: {r.get_attribute("data-tenant") for r in
                                            self.css("#cache-partitions tbody tr[data-tenant]")},
                                   "its partitions"), {"acme"})
        self.assertEqual(self.css("#cache-categories"), [])
        self.drive_cache_chart(["acme"], 2)
        self.shot("tenant-bound-caches", whole=True)
        for page in ("collections", "collection/shop", "search/shop/3", "tenants/shop",
                     "caches/answers", "metrics"):
            self.go(f"#/{page}")
            time.sleep(0.3)
            self.assertNotIn("globex", self.browser.page_source, page)
        # Every API route, aimed at globex's data: refused, absent or acme's only.
        echoes = {"collections/shop/browse": {"tenant": "globex"}}
        tries = [
            ("GET", "session", None, 200), ("GET", "collections", None, 200),
            ("GET", "collections/shop", None, 200), ("GET", "metrics", None, 200),
            ("POST", "collections", {"name": "x", "dimension": 2}, 403),
            ("DELETE", "collections/shop", None, 403),
            ("POST", "collections/shop/get", {"keys": [1000, 1001, 3]}, 200),
            ("POST", "collections/shop/browse", {"limit": 1000}, 200),
            ("POST", "collections/shop/browse", {"near": 1000}, 404),
            ("POST", "collections/shop/search", {"key": 1000}, 404),
            ("POST", "collections/shop/search",
             {"vector": [float(v) for v in self.vectors[TENANT_ROWS]], "k": 100}, 200),
            ("POST", "collections/shop/build", {"spec": "flat"}, 403),
            ("GET", "builds", None, 403), ("GET", "snapshots", None, 403),
            ("POST", "snapshots", {"name": "s"}, 403),
            ("POST", "snapshots/shot1/restore", {}, 403),
            ("GET", "collections/shop/tenants", None, 200),
            ("GET", "caches", None, 200), ("GET", "caches/answers", None, 200),
            ("POST", "caches/answers/policy", {"policy": {"enabled": False}}, 403),
        ]
        for method, path, body, want in tries:
            status, answer = api(self.port, method, path, ACME_KEY, body)
            self.assertEqual(status, want, (method, path, answer))
            self.assertNotIn("globex", json.dumps(answer), path)
            for record in (answer or {}).get("records", []) + (answer or {}).get("hits", []):
                if record is not None:
                    self.assertLess(record["key"], 1000, path)
        status, answer = api(self.port, "POST", "collections/shop/browse", ACME_KEY,
                             echoes["collections/shop/browse"])
        self.assertEqual((status, answer["error"]["code"]), (403, "PERMISSION_DENIED"))
        self.assertEqual(api(self.port, "POST", "collections/shop/get", ACME_KEY,
                             {"keys": [1000]})[1]["records"], [None])

    def test_10_other_sites_cannot_drive_it(self):
        body = {"name": "evil", "dimension": 2}
        status, answer = api(self.port, "POST", "collections", ADMIN_KEY, body,
                             {"Content-Type": "text/plain"})
        self.assertEqual(status, 400, answer)
        status, answer = api(self.port, "POST", "collections", ADMIN_KEY, body,
                             {"Origin": "http://evil.example"})
        self.assertEqual(status, 403, answer)
        self.assertNotIn("evil", [c.name for c in self.client.list_collections()])


if __name__ == "__main__":
    reason = missing()
    if reason:
        print(f"SKIPPED: console browser test: {reason}")
        sys.exit(SKIP)
    unittest.main(verbosity=2)
