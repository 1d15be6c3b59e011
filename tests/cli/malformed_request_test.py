"""Requests whose bytes do not parse, through a real shoald with raw bytes on the wire: gRPC's
own parser answers INTERNAL with no text; Shoal answers INVALID_ARGUMENT naming the method
(rpc/parse_failure.h), for bad bytes and for a filter nested deeper than
protobuf's 100-level limit, without a line on the server's stderr per request. Run by ctest with
/usr/bin/python3 and PYTHONPATH=build/python."""

import os
import sys
import unittest

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoal  # noqa: E402
from shoal.v1 import search_service_pb2 as search_pb2, types_pb2  # noqa: E402
from shoald_fixture import Shoald  # noqa: E402

# A field tag whose varint never ends: no protobuf parser accepts it.
GARBAGE = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"


def deep_filter_search(depth):
    request = search_pb2.SearchRequest(collection="c", k=1, queries=[0.0, 0.0])
    node = request.filter
    for _ in range(depth):
        node = node.negate
    node.has_tag = "t"
    return request.SerializeToString()


class MalformedRequestTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Shoald()
        cls.client = shoal.Client(cls.server.address)
        cls.client.create_collection("c", dimension=2)
        cls.channel = grpc.insecure_channel(cls.server.address)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.client.close()
        cls.server.__exit__(None, None, None)

    def call(self, method, payload):
        stub = self.channel.unary_unary(method, request_serializer=None,
                                        response_deserializer=None)
        try:
            stub(payload, timeout=10)
        except grpc.RpcError as e:
            return e.code(), e.details()
        return grpc.StatusCode.OK, ""

    def test_garbage_bytes_are_invalid_argument_naming_the_method(self):
        for method in ["/shoal.v1.SearchService/Search", "/shoal.v1.VectorService/Upsert",
                       "/shoal.v1.CollectionService/CreateCollection",
                       "/shoal.v1.TenantService/CreateTenant"]:
            code, details = self.call(method, GARBAGE)
            self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, (method, details))
            self.assertIn(method, details)

    def test_a_filter_nested_too_deep_is_invalid_argument(self):
        code, details = self.call("/shoal.v1.SearchService/Search", deep_filter_search(150))
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, details)
        self.assertIn("nested deeper than protobuf's 100 levels", details)
        # The limit a filter must keep is named, not only protobuf's.
        self.assertIn("a filter may nest at most 32 levels", details)
        # Deep enough to break the filter limit but not protobuf's: the conversion names the path.
        code, details = self.call("/shoal.v1.SearchService/Search", deep_filter_search(40))
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, details)
        self.assertIn("filter.negate", details)
        self.assertIn("nested deeper than 32 levels", details)
        # Shallow enough to parse: the filter is evaluated (no record has the tag: no hits).
        code, details = self.call("/shoal.v1.SearchService/Search", deep_filter_search(20))
        self.assertEqual(code, grpc.StatusCode.OK, details)

    def test_the_server_does_not_log_a_line_per_bad_request(self):
        self.server.stderr.seek(0, os.SEEK_END)
        before = self.server.stderr.tell()
        for _ in range(20):
            self.call("/shoal.v1.SearchService/Search", GARBAGE)
        self.server.stderr.seek(before)
        lines = self.server.stderr.read().splitlines()
        self.assertLess(len(lines), 20, lines[:5])


if __name__ == "__main__":
    unittest.main()
