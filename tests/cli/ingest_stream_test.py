"""The Ingest stream's end marker, through a real shoald with raw bytes on the wire: a message
that cannot be parsed ends the stream on the server as if the client had closed it, so a stream
announced with `shoal-ingest-end-marker: 1` that ends without its end_of_stream message must fail
with INVALID_ARGUMENT (saying what was applied), never OK. And the SDK's side, against a fake
server that ends the stream with OK after one of three batches (as a server older than the marker
does): an error saying how many batches were acknowledged, never a result. Run by ctest with /usr/bin/python3 and
PYTHONPATH=build/python."""

import os
import sys
import unittest
from concurrent import futures

import grpc
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shoal  # noqa: E402
from shoal.v1 import types_pb2, vector_service_pb2 as vector_pb2  # noqa: E402
from shoal.v1 import vector_service_pb2_grpc as vector_grpc  # noqa: E402
from shoald_fixture import Shoald  # noqa: E402

MARKER = (("shoal-ingest-end-marker", "1"),)
# A field tag whose varint never ends: no protobuf parser accepts it.
GARBAGE = b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"


def batch(sequence, first):
    records = [types_pb2.Record(key=types_pb2.Key(id=first + i), vector=[float(first + i), 0.0])
               for i in range(10)]
    return vector_pb2.IngestRequest(collection="c", sequence=sequence,
                                    records=records).SerializeToString()


END = vector_pb2.IngestRequest(end_of_stream=True).SerializeToString()


class IngestEndMarkerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Shoald()
        cls.client = shoal.Client(cls.server.address)
        cls.client.create_collection("c", dimension=2)
        cls.channel = grpc.insecure_channel(cls.server.address)
        cls.ingest = cls.channel.stream_stream(
            "/shoal.v1.VectorService/Ingest", request_serializer=None,
            response_deserializer=vector_pb2.IngestResponse.FromString)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.client.close()
        cls.server.__exit__(None, None, None)

    def run_stream(self, messages, metadata=MARKER):
        acks = []
        try:
            for ack in self.ingest(iter(messages), metadata=metadata, timeout=30):
                acks.append(ack.sequence)
        except grpc.RpcError as e:
            return acks, e.code(), e.details()
        return acks, grpc.StatusCode.OK, ""

    def test_garbage_mid_stream_is_an_error_not_ok(self):
        acks, code, details = self.run_stream([batch(0, 0), GARBAGE, batch(1, 100), END])
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, details)
        self.assertIn("end_of_stream", details)
        self.assertIn("1 batches (10 records) were applied", details)
        self.assertEqual(acks, [0])
        got = self.client.get("c", [0, 100])
        self.assertIsNotNone(got[0])
        self.assertIsNone(got[1])

    def test_stream_with_its_marker_ends_ok(self):
        acks, code, details = self.run_stream([batch(0, 200), batch(1, 300), END])
        self.assertEqual(code, grpc.StatusCode.OK, details)
        self.assertEqual(acks, [0, 1])

    def test_message_after_the_marker_is_refused(self):
        _, code, details = self.run_stream([batch(0, 400), END, batch(1, 500)])
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, details)
        self.assertIn("a message followed the end of the stream", details)

    def test_marker_with_records_is_refused(self):
        bad_end = vector_pb2.IngestRequest(
            end_of_stream=True, records=[types_pb2.Record(key=types_pb2.Key(id=1),
                                                          vector=[1.0, 2.0])])
        _, code, details = self.run_stream([bad_end.SerializeToString()])
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, details)
        self.assertIn("records: the end_of_stream message carries none", details)

    def test_unannounced_stream_keeps_v1_behaviour(self):
        acks, code, details = self.run_stream([batch(0, 600)], metadata=())
        self.assertEqual(code, grpc.StatusCode.OK, details)
        self.assertEqual(acks, [0])

    def test_sdk_ingest_sends_the_marker(self):
        vectors = np.arange(40, dtype=np.float32).reshape(20, 2)
        result = self.client.ingest("c", range(1000, 1020), vectors, batch_size=7)
        self.assertEqual(result.upserted, 20)


class CutShortIngest(vector_grpc.VectorServiceServicer):
    """A server that acknowledges the first batch and then ends the stream with OK (a server
    older than the end marker, after a message it could not parse), or answers it with another
    sequence."""

    def __init__(self):
        self.wrong_sequence = False

    def Ingest(self, request_iterator, context):
        first = next(request_iterator)
        sequence = first.sequence + 7 if self.wrong_sequence else first.sequence
        yield vector_pb2.IngestResponse(sequence=sequence, upserted=len(first.records),
                                        total_upserted=len(first.records))


class SdkCountsAcknowledgementsTest(unittest.TestCase):
    """The SDK never returns a result for an Ingest whose batches were not all acknowledged,
    whatever status the stream ends with."""

    @classmethod
    def setUpClass(cls):
        cls.servicer = CutShortIngest()
        cls.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        vector_grpc.add_VectorServiceServicer_to_server(cls.servicer, cls.server)
        port = cls.server.add_insecure_port("127.0.0.1:0")
        cls.server.start()
        cls.client = shoal.Client(f"127.0.0.1:{port}")

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop(None)

    def ingest_three_batches(self):
        vectors = np.arange(60, dtype=np.float32).reshape(30, 2)
        return self.client.ingest("c", range(30), vectors, batch_size=10)

    def test_a_stream_ended_ok_after_one_of_three_batches_is_an_error(self):
        self.servicer.wrong_sequence = False
        with self.assertRaises(shoal.UnavailableError) as raised:
            self.ingest_three_batches()
        self.assertIn("1 of 3 batches (10 records) were acknowledged", raised.exception.details)
        self.assertIn("batch 1 and later were not applied", raised.exception.details)

    def test_an_answer_for_another_batch_is_an_error(self):
        self.servicer.wrong_sequence = True
        with self.assertRaises(shoal.ShoalError) as raised:
            self.ingest_three_batches()
        self.assertIn("sequence: answer for batch 7, expected 0", raised.exception.details)


if __name__ == "__main__":
    unittest.main()
