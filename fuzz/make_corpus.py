#!/usr/bin/env python3
"""Writes the seed corpus of each fuzz target into fuzz/corpus/<target>/ (a few tiny files).

Run from anywhere: python3 fuzz/make_corpus.py. The files are committed; rerun after a format
changes. Protobuf messages are encoded by hand (field numbers from proto/shoal/v1/) so this
needs no generated Python code.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


# ---- protobuf wire encoding ----
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, n):
    return varint(num << 3) + varint(n)


def field_bytes(num, data):
    return varint((num << 3) | 2) + varint(len(data)) + data


def field_double(num, x):
    return varint((num << 3) | 1) + struct.pack("<d", x)


def floats(values):
    return b"".join(struct.pack("<f", v) for v in values)


def filter_eq(name, int_value):
    equals = field_bytes(1, name.encode()) + field_bytes(2, field_varint(1, int_value))
    return field_bytes(1, equals)


def filter_range(name, lo, hi):
    return field_bytes(2, field_bytes(1, name.encode()) + field_double(2, lo) + field_double(3, hi))


def filter_tag(tag):
    return field_bytes(3, tag.encode())


def filter_list(num, filters):
    return field_bytes(num, b"".join(field_bytes(1, f) for f in filters))


def record(key_id, vector, attrs=(), tags=()):
    out = field_bytes(1, field_varint(1, key_id)) + field_bytes(2, floats(vector))
    for name, value in attrs:
        entry = field_bytes(1, name.encode()) + field_bytes(2, field_bytes(4, value.encode()))
        out += field_bytes(3, entry)
    for tag in tags:
        out += field_bytes(4, tag.encode())
    return out


def wire_request():
    # First byte: 0 Filter, 1 SearchRequest, 2 UpsertRequest.
    nested = filter_list(4, [filter_eq("year", 2020), filter_range("price", 1.0, 9.5)])
    write("wire_request_fuzzer", "filter_eq", b"\x00" + filter_eq("year", 2020))
    write("wire_request_fuzzer", "filter_nested",
          b"\x00" + filter_list(5, [nested, field_bytes(6, filter_tag("red"))]))
    search = (field_bytes(1, b"docs") + field_bytes(2, floats([0.5, 1.0, -1.0, 2.0])) +
              field_varint(3, 4) + field_varint(4, 10) + field_bytes(7, filter_tag("red")))
    write("wire_request_fuzzer", "search", b"\x01" + search)
    upsert = (field_bytes(1, b"docs") +
              field_bytes(2, record(1, [0.1, 0.2, 0.3, 0.4], [("color", "red")], ["new"])) +
              field_bytes(2, record(2, [1.0, 0.0, 0.0, 0.0])) + field_varint(3, 1))
    write("wire_request_fuzzer", "upsert", b"\x02" + upsert)


def spann_spec():
    target = "spann_spec_fuzzer"
    write(target, "default", b"spann")
    write(target, "options", b"spann:centroid_ratio=0.02,replicas=4,navigator=tree,quant=sq8")
    write(target, "manifest",
          b"shoal-spann-v1\nspec=spann:replicas=2\ndimension=8\nmetric=0\ngeneration=3\n"
          b"num_vectors=100\nindexed_below=100\nnum_postings=4\nposting_cap=64\n")


def dataset_reader():
    # First byte picks the extension: 0 fvecs 1 bvecs 2 ivecs 3 fbin 4 u8bin 5 ibin 6 npy 7 idx.
    target = "dataset_reader_fuzzer"
    rows = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    write(target, "fvecs", b"\x00" + b"".join(struct.pack("<i", 3) + floats(r) for r in rows))
    write(target, "bvecs", b"\x01" + b"".join(struct.pack("<i", 3) + bytes([1, 2, 3]) for _ in rows))
    write(target, "ivecs", b"\x02" + b"".join(struct.pack("<i", 2) + struct.pack("<2i", 7, 9)
                                              for _ in rows))
    write(target, "fbin", b"\x03" + struct.pack("<2I", 2, 3) + floats(rows[0] + rows[1]))
    write(target, "u8bin", b"\x04" + struct.pack("<2I", 2, 2) + bytes([1, 2, 3, 4]))
    write(target, "ibin", b"\x05" + struct.pack("<2I", 1, 2) + struct.pack("<2i", -1, 5))
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    header += b" " * (64 - 10 - len(header) - 1) + b"\n"
    npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header
    write(target, "npy", b"\x06" + npy + floats(rows[0] + rows[1]))
    # idx: 0 0 type(0x08 ubyte) ndims, then big-endian u32 sizes.
    write(target, "idx", b"\x07" + bytes([0, 0, 0x08, 2]) + struct.pack(">2I", 2, 3) +
          bytes(range(6)))


def storage_codec():
    target = "storage_codec_fuzzer"
    # Record v1: u8 version | key (u8 kind 0, u64) | u32 dim | floats | varint n_attrs | attrs |
    # varint n_tags | tags.
    attr = varint(4) + b"year" + b"\x00" + struct.pack("<q", 2020)
    rec = (b"\x01" + b"\x00" + struct.pack("<Q", 42) + struct.pack("<I", 2) + floats([0.5, -1.0]) +
           varint(1) + attr + varint(1) + varint(3) + b"red")
    write(target, "record", rec)
    named = b"\x01" + b"\x01" + varint(3) + b"abc" + struct.pack("<I", 1) + floats([1.0]) + b"\x00\x00"
    write(target, "record_named_key", named)
    write(target, "keymap_row", struct.pack(">I", 7) + b"\x01" + b"name")


if __name__ == "__main__":
    wire_request()
    spann_spec()
    dataset_reader()
    storage_codec()
