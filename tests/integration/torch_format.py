"""PyTorch checkpoint files written from the format's definition, without torch: for what torch 1.13 cannot write
(float8 and the other dtypes of later versions, ZIP64 archives past 4 GiB) and for hostile files.

A pickle is written by `PickleWriter` from a small tree of Python values and the nodes below (a GLOBAL, a REDUCE,
a storage reference, raw opcodes), so that a test says exactly which opcodes a file holds. `write_archive` lays
entries out as torch.save does: stored, each one's bytes aligned to 64 bytes by padding in its local header's extra
field, then the central directory and the end records (ZIP64 ones when needed or asked for).

References: CPython Lib/pickletools.py (opcodes), PKWARE APPNOTE 6.3 (zip, ZIP64), torch/serialization.py
(the archive's records and persistent ids)."""
import io
import struct
import zlib


class Global:
    """GLOBAL module.name (or STACK_GLOBAL with `stack=True`)."""

    def __init__(self, module, name, stack=False):
        self.module, self.name, self.stack = module, name, stack


class Reduce:
    """callable(*args) as REDUCE: `callable` is a Global (or any node), `args` a tuple of values."""

    def __init__(self, callable, args):
        self.callable, self.args = callable, tuple(args)


class Build:
    """BUILD: `obj` gets `state` set."""

    def __init__(self, obj, state):
        self.obj, self.state = obj, state


class Storage:
    """A storage reference (BINPERSID) and the bytes of its entry data/KEY. `cls` is the storage class name
    ("FloatStorage", "UntypedStorage"); `numel` counts elements of its type. `view` (legacy only): None or
    (view_key, offset, numel)."""

    def __init__(self, key, cls, numel, data=b"", location="cpu", legacy=False, view=None):
        self.key, self.cls, self.numel, self.data = key, cls, numel, data
        self.location, self.legacy, self.view = location, legacy, view


class Tensor:
    """torch._utils._rebuild_tensor_v2 (or _v3 when `dtype` is given, as PyTorch 2 writes new dtypes)."""

    def __init__(self, storage, shape, stride=None, offset=0, dtype=None):
        self.storage, self.shape, self.offset, self.dtype = storage, tuple(shape), offset, dtype
        if stride is None:
            stride, step = [], 1
            for dim in reversed(self.shape):
                stride.insert(0, step)
                step *= dim
        self.stride = tuple(stride)


class OrderedDict(dict):
    """A dict pickled as collections.OrderedDict (REDUCE, then SETITEMS), as a state_dict is."""


class Raw:
    """Opcodes written as they are."""

    def __init__(self, data):
        self.data = bytes(data)


class Memo:
    """The value stored in memo slot `index` (BINGET), e.g. to use one tensor under two names."""

    def __init__(self, index):
        self.index = index


class Put:
    """`value`, then BINPUT `index`."""

    def __init__(self, value, index):
        self.value, self.index = value, index


class PickleWriter:
    def __init__(self, protocol=2):
        self.protocol = protocol
        self.out = bytearray(b"\x80" + bytes([protocol]))

    def finish(self):
        return bytes(self.out + b".")

    def write(self, value):
        out = self.out
        if isinstance(value, Raw):
            out += value.data
        elif value is None:
            out += b"N"
        elif value is True or value is False:
            out += b"\x88" if value else b"\x89"
        elif isinstance(value, int):
            self.write_int(value)
        elif isinstance(value, float):
            out += b"G" + struct.pack(">d", value)
        elif isinstance(value, str):
            data = value.encode("utf-8", "surrogatepass")
            out += b"X" + struct.pack("<I", len(data)) + data
        elif isinstance(value, bytes):
            out += b"C" + bytes([len(value)]) + value if len(value) < 256 else b"B" + struct.pack("<I", len(value)) + value
        elif isinstance(value, tuple):
            if not value:
                out += b")"
            else:
                out += b"("
                for item in value:
                    self.write(item)
                out += b"t"
        elif isinstance(value, list):
            out += b"]"
            if value:
                out += b"("
                for item in value:
                    self.write(item)
                out += b"e"
        elif isinstance(value, dict):
            self.write_dict(value)
        elif isinstance(value, Global):
            if value.stack:
                self.write(value.module)
                self.write(value.name)
                out += b"\x93"
            else:
                out += b"c" + value.module.encode() + b"\n" + value.name.encode() + b"\n"
        elif isinstance(value, Reduce):
            self.write(value.callable)
            self.write(value.args)
            out += b"R"
        elif isinstance(value, Build):
            self.write(value.obj)
            self.write(value.state)
            out += b"b"
        elif isinstance(value, Storage):
            fields = ["storage", Global("torch", value.cls), value.key, value.location, value.numel]
            if value.legacy:
                fields.append(value.view)
            self.write(tuple(fields))
            out += b"Q"
        elif isinstance(value, Tensor):
            hooks = Reduce(Global("collections", "OrderedDict"), ())
            args = [value.storage, value.offset, value.shape, value.stride, False, hooks]
            name = "_rebuild_tensor_v2"
            if value.dtype is not None:
                args.append(Global("torch", value.dtype))
                name = "_rebuild_tensor_v3"
            self.write(Reduce(Global("torch._utils", name), args))
        elif isinstance(value, Memo):
            out += b"h" + bytes([value.index]) if value.index < 256 else b"j" + struct.pack("<I", value.index)
        elif isinstance(value, Put):
            self.write(value.value)
            out += b"q" + bytes([value.index]) if value.index < 256 else b"r" + struct.pack("<I", value.index)
        else:
            raise TypeError(f"cannot pickle {type(value)}")

    def write_int(self, value):
        if 0 <= value < 256:
            self.out += b"K" + bytes([value])
        elif 0 <= value < 65536:
            self.out += b"M" + struct.pack("<H", value)
        elif -2**31 <= value < 2**31:
            self.out += b"J" + struct.pack("<i", value)
        else:
            data = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
            self.out += b"\x8a" + bytes([len(data)]) + data

    def write_dict(self, value):
        if isinstance(value, OrderedDict):
            self.write(Reduce(Global("collections", "OrderedDict"), ()))
        else:
            self.out += b"}"
        if value:
            self.out += b"("
            for key, item in value.items():
                self.write(key)
                self.write(item)
            self.out += b"u"


def pickle_bytes(value, protocol=2):
    writer = PickleWriter(protocol)
    writer.write(value)
    return writer.finish()


def storages_in(value, found=None):
    """The Storage objects of a value tree, one per key, in order."""
    found = [] if found is None else found
    if isinstance(value, Storage):
        if all(s.key != value.key for s in found):
            found.append(value)
    elif isinstance(value, Tensor):
        storages_in(value.storage, found)
    elif isinstance(value, dict):
        for item in value.values():
            storages_in(item, found)
    elif isinstance(value, (list, tuple)):
        for item in value:
            storages_in(item, found)
    elif isinstance(value, (Reduce, Build, Put)):
        for item in vars(value).values():
            storages_in(item, found)
    return found


class Sparse:
    """Entry bytes of `size` that are zeros except `tail` at the end, written as a hole (no disk used)."""

    def __init__(self, size, tail=b""):
        self.size, self.tail = size, tail

    def crc(self):
        crc, left, zeros = 0, self.size - len(self.tail), bytes(1 << 24)
        while left > 0:
            crc = zlib.crc32(zeros[:min(left, len(zeros))], crc)
            left -= min(left, len(zeros))
        return zlib.crc32(self.tail, crc)


def write_archive(path, entries, zip64=False, align=64):
    """Writes a stored zip archive of `entries` [(name, bytes or Sparse)], each entry's bytes aligned to `align`.
    ZIP64 records are written when `zip64` is true or a size or offset needs them."""
    with open(path, "wb") as f:
        central = []
        for name, data in entries:
            name_bytes = name.encode()
            size = data.size if isinstance(data, Sparse) else len(data)
            crc = data.crc() if isinstance(data, Sparse) else zlib.crc32(data)
            offset = f.tell()
            big = zip64 or size >= 0xFFFFFFFF or offset >= 0xFFFFFFFF
            local_extra = struct.pack("<HHQQ", 1, 16, size, size) if big else b""
            header_end = offset + 30 + len(name_bytes) + len(local_extra)
            padding = (-(header_end + 4)) % align if align > 1 else 0
            if align > 1:
                local_extra += struct.pack("<HH", 0x4246, padding) + b"Z" * padding  # "FB", as torch pads
            f.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 45 if big else 20, 0, 0, 0, 0x21, crc,
                                0xFFFFFFFF if big else size, 0xFFFFFFFF if big else size,
                                len(name_bytes), len(local_extra)))
            f.write(name_bytes + local_extra)
            if isinstance(data, Sparse):
                f.seek(data.size - len(data.tail), io.SEEK_CUR)
                f.write(data.tail)
            else:
                f.write(data)
            central.append((name_bytes, crc, size, offset, big))
        directory_offset = f.tell()
        for name_bytes, crc, size, offset, big in central:
            extra = struct.pack("<HHQQQ", 1, 24, size, size, offset) if big else b""
            f.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45 if big else 20, 45 if big else 20, 0, 0, 0,
                                0x21, crc, 0xFFFFFFFF if big else size, 0xFFFFFFFF if big else size,
                                len(name_bytes), len(extra), 0, 0, 0, 0, 0xFFFFFFFF if big else offset))
            f.write(name_bytes + extra)
        directory_size = f.tell() - directory_offset
        count = len(central)
        needs64 = zip64 or count >= 0xFFFF or directory_offset >= 0xFFFFFFFF or directory_size >= 0xFFFFFFFF
        if needs64:
            end64 = f.tell()
            f.write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count, directory_size,
                                directory_offset))
            f.write(struct.pack("<IIQI", 0x07064B50, 0, end64, 1))
        f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(count, 0xFFFF), min(count, 0xFFFF),
                            min(directory_size, 0xFFFFFFFF), 0xFFFFFFFF if needs64 else directory_offset, 0))


def write_checkpoint(path, obj, folder="archive", protocol=2, byteorder="little", version="3\n", zip64=False,
                     extra_entries=(), storage_data=None):
    """A zip-format checkpoint of `obj` (a value tree), its storages' entries after data.pkl, as torch.save
    orders them. `storage_data` maps a key to other bytes for its entry (a Sparse, or bytes that lie)."""
    entries = [(f"{folder}/data.pkl", pickle_bytes(obj, protocol))]
    if byteorder is not None:
        entries.append((f"{folder}/byteorder", byteorder.encode()))
    for storage in storages_in(obj):
        data = (storage_data or {}).get(storage.key, storage.data)
        entries.append((f"{folder}/data/{storage.key}", data))
    if version is not None:
        entries.append((f"{folder}/version", version.encode()))
    entries.extend(extra_entries)
    write_archive(path, entries, zip64=zip64)


MAGIC_NUMBER = 0x1950A86A20F9469CFC6C


def legacy_bytes(obj, little_endian=True):
    """The legacy format of torch.save: magic, protocol version, system info, the object, the storage keys,
    then each storage as its element count and its bytes. Storages must be Storage(..., legacy=True)."""
    storages = storages_in(obj)
    out = bytearray()
    out += pickle_bytes(MAGIC_NUMBER)
    out += pickle_bytes(1001)
    out += pickle_bytes({"protocol_version": 1001, "little_endian": little_endian,
                         "type_sizes": {"short": 2, "int": 4, "long": 4}})
    out += pickle_bytes(obj)
    out += pickle_bytes([s.key for s in storages])
    for storage in storages:
        out += struct.pack("<q", storage.numel) + storage.data
    return bytes(out)
