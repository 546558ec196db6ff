"""An independent reader of safetensors files for the tests: every rule of the format's reference library
(huggingface/safetensors: read_metadata and Metadata::validate), written here from the format's description and
sharing no code with tensorfs, plus the layout its writer gives a file."""
import json
import struct

MAX_HEADER_SIZE = 100_000_000
BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "F8_E8M0": 8,
        "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "F64": 64, "I64": 64,
        "U64": 64, "C64": 64, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6}


class Invalid(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Invalid(what)


def no_duplicate_keys(pairs):
    keys = [key for key, _ in pairs]
    check(len(keys) == len(set(keys)), f"duplicate keys in {keys}")
    return dict(pairs)


def is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class SafetensorsFile:
    """Parses and checks `data` (the whole file). tensors: [(name, dtype, shape, begin, end)] in header order,
    begin and end absolute in the file; metadata: the __metadata__ strings or None."""

    def __init__(self, data):
        check(len(data) >= 8, "shorter than the 8-byte length")
        (length,) = struct.unpack_from("<Q", data)
        check(length <= MAX_HEADER_SIZE, f"header length {length} over the limit")
        check(8 + length <= len(data), "header runs past the end")
        self.header_text = data[8:8 + length].decode("utf-8")   # strict: raises on bytes that are not UTF-8
        header = json.loads(self.header_text, object_pairs_hook=no_duplicate_keys)
        check(isinstance(header, dict), "header is not a JSON object")
        self.metadata = header.pop("__metadata__", None)
        if self.metadata is not None:
            check(isinstance(self.metadata, dict), "__metadata__ is not an object")
            check(all(isinstance(v, str) for v in self.metadata.values()),
                  "__metadata__ holds a value that is not a string")
        self.data_start = 8 + length
        data_size = len(data) - self.data_start
        self.tensors = []
        for name, entry in header.items():
            check(isinstance(entry, dict), f"{name}: entry is not an object")
            dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
            check(dtype in BITS, f"{name}: dtype {dtype!r}")
            check(isinstance(shape, list) and all(is_count(d) for d in shape), f"{name}: shape {shape!r}")
            check(isinstance(offsets, list) and len(offsets) == 2 and all(is_count(o) for o in offsets),
                  f"{name}: data_offsets {offsets!r}")
            begin, end = offsets
            check(begin <= end <= data_size, f"{name}: data_offsets {offsets} outside the data")
            elements = 1
            for d in shape:
                elements *= d
            check(elements * BITS[dtype] % 8 == 0 and elements * BITS[dtype] // 8 == end - begin,
                  f"{name}: {elements} elements of {dtype} do not take {end - begin} bytes")
            self.tensors.append((name, dtype, shape, self.data_start + begin, self.data_start + end))
        covered = 0
        for name, _, _, begin, end in sorted(self.tensors, key=lambda t: (t[3], t[4])):
            check(begin - self.data_start == covered, f"{name}: starts at {begin - self.data_start}, not {covered}")
            covered = end - self.data_start
        check(covered == data_size, f"{data_size - covered} bytes after the last tensor")

    def check_writer_layout(self):
        """As safetensors' writer lays a file out: compact JSON, __metadata__ first, offsets in header order,
        padded with spaces so that the data starts on a multiple of 8."""
        check(self.data_start % 8 == 0, "the data does not start on a multiple of 8")
        text = self.header_text.rstrip(" ")
        rebuilt = json.loads(text)
        check(text == json.dumps(rebuilt, separators=(",", ":"), ensure_ascii=False), "header JSON is not compact")
        if self.metadata is not None:
            check(next(iter(rebuilt)) == "__metadata__", "__metadata__ is not first")
        begins = [begin for _, _, _, begin, _ in self.tensors]
        check(begins == sorted(begins), "tensors are not in header order in the data")
