#!/usr/bin/env python3
"""FNV-1a 64 over a GGUF file's tensors in name order (writers order them differently): each tensor's name, ggml type
(u32 little-endian) and data bytes (padding left out). model_crosscheck_test computes the same over the file tern
quantize writes, to show it holds exactly the tensors llama-quantize wrote.   gguf_tensor_digest.py FILE"""
import struct
import sys

# Bytes per block and values per block of the ggml types these files hold.
TYPE_SIZES = {0: (4, 1), 1: (2, 1), 2: (18, 32), 3: (20, 32), 6: (22, 32), 7: (24, 32), 8: (34, 32),
              12: (144, 256), 13: (176, 256), 14: (210, 256), 30: (2, 1)}


def fnv1a(data, state):
    for byte in data:
        state = ((state ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return state


def main(path):
    data = open(path, "rb").read()
    offset = 8
    num_tensors, num_kv = struct.unpack_from("<QQ", data, offset)
    offset += 16

    def read_string(at):
        length, = struct.unpack_from("<Q", data, at)
        return data[at + 8:at + 8 + length].decode(), at + 8 + length

    scalar = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}

    def read_value(kind, at):
        if kind == 8:
            return read_string(at)
        if kind == 9:
            item_kind, count = struct.unpack_from("<IQ", data, at)
            at += 12
            values = []
            for _ in range(count):
                value, at = read_value(item_kind, at)
                values.append(value)
            return values, at
        value, = struct.unpack_from(scalar[kind], data, at)
        return value, at + struct.calcsize(scalar[kind])

    alignment = 32
    for _ in range(num_kv):
        key, offset = read_string(offset)
        kind, = struct.unpack_from("<I", data, offset)
        value, offset = read_value(kind, offset + 4)
        if key == "general.alignment":
            alignment = value
    tensors = []
    for _ in range(num_tensors):
        name, offset = read_string(offset)
        num_dims, = struct.unpack_from("<I", data, offset)
        dims = struct.unpack_from("<" + "Q" * num_dims, data, offset + 4)
        offset += 4 + 8 * num_dims
        kind, data_offset = struct.unpack_from("<IQ", data, offset)
        offset += 12
        tensors.append((name, dims, kind, data_offset))
    base = (offset + alignment - 1) // alignment * alignment
    state = 0xcbf29ce484222325
    for name, dims, kind, data_offset in sorted(tensors):
        elements = 1
        for dim in dims:
            elements *= dim
        block_bytes, block_values = TYPE_SIZES[kind]
        size = elements // block_values * block_bytes
        state = fnv1a(name.encode(), state)
        state = fnv1a(struct.pack("<I", kind), state)
        state = fnv1a(data[base + data_offset:base + data_offset + size], state)
    print(f"{state:016x}")


main(sys.argv[1])
