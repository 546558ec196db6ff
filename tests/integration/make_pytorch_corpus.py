"""Writes the PyTorch part of the malformed corpus, tests/data/pytorch/malformed/, and its manifest.json: each file
with the outcome it must get and the words its refusal must contain. Files whose pickle would run code under
torch.load name the canary file that running it creates; tensorfs must refuse them and create nothing.

    /usr/bin/python3 tests/integration/make_pytorch_corpus.py [FOLDER]

The files are built from the format's definition (torch_format.py), so the output is the same on every run;
test_malformed.py checks that the committed files are what this script writes."""
import io
import json
import os
import struct
import sys
import zipfile
import zlib

import numpy as np

import torch_format as tf

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_FOLDER = os.path.join(HERE, "..", "data", "pytorch", "malformed")

ACCEPTED = "must be accepted"
REJECTED = "must be rejected with a clear error"


def weights():
    values = np.arange(12, dtype=np.float32) - 5.5
    return tf.Storage("0", "FloatStorage", 12, values.tobytes())


def ok_state():
    storage = weights()
    return tf.OrderedDict([("layer.weight", tf.Tensor(storage, (3, 4))),
                           ("layer.weight.t", tf.Tensor(storage, (4, 3), stride=(1, 4))),
                           ("layer.bias", tf.Tensor(tf.Storage("1", "HalfStorage", 3, np.ones(3, "<f2").tobytes()),
                                                    (3,)))])


def archive_bytes(obj, **kwargs):
    path = os.path.join(OUT, ".scratch.pt")
    tf.write_checkpoint(path, obj, **kwargs)
    with open(path, "rb") as f:
        data = f.read()
    os.remove(path)
    return data


def with_payload(call):
    """A state dict whose first value is the result of `call` (a REDUCE): torch.load would run it."""
    return tf.OrderedDict([("payload", call), ("layer.weight", tf.Tensor(weights(), (3, 4)))])


def shell(name):
    return f"touch {name}"


def python(name):
    return f"open('{name}', 'w').close()"


def hostile_pickle(opcodes):
    """A pickle of raw opcodes after PROTO 2 (STOP added)."""
    return b"\x80\x02" + opcodes + b"."


def archive_with_pickle(data_pkl, storages=()):
    entries = [("archive/data.pkl", data_pkl)]
    entries += [(f"archive/data/{s.key}", s.data) for s in storages]
    entries.append(("archive/version", b"3\n"))
    path = os.path.join(OUT, ".scratch.pt")
    tf.write_archive(path, entries)
    with open(path, "rb") as f:
        data = f.read()
    os.remove(path)
    return data


def replace_pickle(archive, new_pickle):
    """The archive with its data.pkl replaced (same length or not: rewritten)."""
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        entries = [(name, z.read(name)) for name in z.namelist()]
    entries = [(name, new_pickle if name.endswith("data.pkl") else data) for name, data in entries]
    path = os.path.join(OUT, ".scratch.pt")
    tf.write_archive(path, entries)
    with open(path, "rb") as f:
        data = f.read()
    os.remove(path)
    return data


def overlapping_entries():
    """Entry data/0's bytes hold a whole second entry (local header and bytes) that the central directory also
    lists: the two entries overlap, as in a zip bomb."""
    inner_name = b"archive/data/1"
    inner_data = np.ones(3, "<f2").tobytes()
    inner = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0x21, zlib.crc32(inner_data), len(inner_data),
                        len(inner_data), len(inner_name), 0) + inner_name + inner_data
    outer_data = np.arange(12, dtype=np.float32).tobytes() + inner
    pickle = tf.pickle_bytes(ok_state())
    entries = [("archive/data.pkl", pickle), ("archive/data/0", outer_data), ("archive/version", b"3\n")]
    path = os.path.join(OUT, ".scratch.pt")
    tf.write_archive(path, entries, align=1)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    os.remove(path)
    # Add a central directory record for the inner entry and fix the end record's counts and offsets.
    inner_offset = data.find(inner)
    end = data.rfind(struct.pack("<I", 0x06054B50))
    count = struct.unpack_from("<H", data, end + 10)[0]
    directory_size, directory_offset = struct.unpack_from("<II", data, end + 12)
    record = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0x21, zlib.crc32(inner_data),
                         len(inner_data), len(inner_data), len(inner_name), 0, 0, 0, 0, 0, inner_offset) + inner_name
    directory = data[directory_offset:directory_offset + directory_size] + record
    tail = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count + 1, count + 1, len(directory), directory_offset, 0)
    return bytes(data[:directory_offset] + directory + tail)


def central_records(data):
    """{entry name: byte of its central directory record} of an archive without ZIP64."""
    end = data.rfind(struct.pack("<I", 0x06054B50))
    count = struct.unpack_from("<H", data, end + 10)[0]
    at = struct.unpack_from("<I", data, end + 16)[0]
    records = {}
    for _ in range(count):
        name_length, extra_length, comment_length = struct.unpack_from("<HHH", data, at + 28)
        records[bytes(data[at + 46:at + 46 + name_length]).decode()] = at
        at += 46 + name_length + extra_length + comment_length
    return records


def lying_directory(archive, name, shift=0, like=None):
    """The archive with the central directory's offset of entry `name` moved by `shift` bytes, or set to that
    of entry `like`."""
    data = bytearray(archive)
    records = central_records(data)
    offset = struct.unpack_from("<I", data, records[like if like else name] + 42)[0]
    struct.pack_into("<I", data, records[name] + 42, offset + shift)
    return bytes(data)


def compressed_storage():
    """The storage entry data/0 deflated (zipfile writes it, with a fixed date so that the output is the same)."""
    entries = [("archive/data.pkl", tf.pickle_bytes(ok_state()), zipfile.ZIP_STORED),
               ("archive/data/0", weights().data, zipfile.ZIP_DEFLATED),
               ("archive/data/1", np.ones(3, "<f2").tobytes(), zipfile.ZIP_STORED),
               ("archive/version", b"3\n", zipfile.ZIP_STORED)]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data, method in entries:
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, compress_type=method)
    return buffer.getvalue()


def legacy(state, little_endian=True):
    return tf.legacy_bytes(state, little_endian)


def legacy_state():
    values = np.arange(6, dtype=np.float32)
    storage = tf.Storage("140234", "FloatStorage", 6, values.tobytes(), legacy=True)
    return {"weight": tf.Tensor(storage, (2, 3)), "weight.t": tf.Tensor(storage, (3, 2), stride=(1, 3))}


def corpus():
    """[(file name, bytes, expected, words of the refusal, canary or None, description)]"""
    ok = archive_bytes(ok_state())
    items = [
        ("ok_archive.pt", ok, ACCEPTED, None, None,
         "control: a valid zip-format checkpoint (float32 and float16 storages, a transposed view)"),
        ("ok_legacy.pt", legacy(legacy_state()), ACCEPTED, None, None,
         "control: a valid legacy-format checkpoint with a transposed view"),
    ]
    for module, name, protocol in (("os", "system", 2), ("posix", "system", 2), ("builtins", "eval", 2)):
        for stack in (False, True):
            how = "stack_global" if stack else "global"
            canary = f"tensorfs-canary-{module}-{name}-{how}"
            argument = shell(canary) if name == "system" else python(canary)
            call = tf.Reduce(tf.Global(module, name, stack=stack), (argument,))
            items.append((f"{module}_{name}_{how}.pt", archive_bytes(with_payload(call), protocol=4 if stack else 2),
                          REJECTED, f"global {module}.{name} is refused", canary,
                          f"{module}.{name}(...) through {how.upper()} and REDUCE: torch.load would run it"))
    canary = "tensorfs-canary-legacy-os-system"
    items.append(("legacy_os_system.pt",
                  legacy({"payload": tf.Reduce(tf.Global("os", "system"), (shell(canary),)), **legacy_state()}),
                  REJECTED, "global os.system is refused", canary,
                  "os.system(...) in the pickle of a legacy-format checkpoint"))
    items += [
        ("build_unknown_class.pt",
         archive_with_pickle(hostile_pickle(b"c__main__\nNet\n)\x81}b")),
         REJECTED, "global __main__.Net is refused", None,
         "a whole nn.Module: BUILD on an instance of a class of the saving program"),
        ("build_on_list.pt", archive_with_pickle(hostile_pickle(b"]}b")), REJECTED,
         "BUILD (set the state of) a list is not allowed", None, "BUILD on a list"),
        ("inst_opcode.pt", archive_with_pickle(hostile_pickle(b"(ios\nsystem\n")), REJECTED,
         "opcode INST (0x69) is refused", None, "INST, which creates an instance of a class"),
        ("storage_key_missing.pt",
         archive_with_pickle(tf.pickle_bytes(tf.OrderedDict(w=tf.Tensor(tf.Storage("7", "FloatStorage", 4), (4,))))),
         REJECTED, "storage '7' is not in the archive", None, "a storage key with no data/KEY entry"),
        ("tensor_past_storage.pt",
         archive_bytes(tf.OrderedDict(w=tf.Tensor(weights(), (13,)))), REJECTED,
         "reach element 12 of storage 0, which holds 12 elements", None, "a tensor reaching past its storage"),
        ("view_past_storage.pt",
         archive_bytes(tf.OrderedDict(w=tf.Tensor(weights(), (4, 3), stride=(1, 4), offset=1))), REJECTED,
         "reach element 12 of storage 0", None, "a transposed view that ends one element past its storage"),
        ("elements_overflow.pt",
         archive_bytes(tf.OrderedDict(w=tf.Tensor(weights(), (1 << 33, 1 << 32), stride=(0, 0)))), REJECTED,
         "has more than 2^64 elements", None, "a size whose element count overflows 64 bits"),
        ("stride_overflow.pt",
         archive_bytes(tf.OrderedDict(w=tf.Tensor(weights(), (5,), stride=(1 << 62,)))), REJECTED,
         "reaches past element 2^64", None, "a size times a stride that overflows 64 bits"),
        ("storage_too_short.pt",
         archive_bytes(tf.OrderedDict(w=tf.Tensor(tf.Storage("0", "FloatStorage", 1 << 40, bytes(16)), (4,)))),
         REJECTED, "has 1099511627776 elements of float32, but its entry holds 16 bytes", None,
         "a storage whose element count claims more than its entry holds"),
        ("mark_bomb.pt", archive_with_pickle(hostile_pickle(b"(" * 70000)), REJECTED,
         "more than 65536 MARKs are open", None, "70000 MARKs"),
        ("memo_bomb.pt", archive_with_pickle(hostile_pickle(b"]r\xff\xff\xff\xff")), REJECTED,
         "memo index 4294967295 is over the limit", None, "a memo index of 2^32 - 1"),
        ("shared_containers_bomb.pt",
         archive_with_pickle(hostile_pickle(b"K\x00" + b"\x85q\x00h\x00\x86" * 40)), REJECTED,
         "values from 81 objects (containers shared many times)", None,
         "40 tuples each holding the one before twice: 2^40 paths to walk"),
        ("deep_nesting.pt", archive_with_pickle(hostile_pickle(b"]" * 5000 + b"a" * 4999)), REJECTED,
         "nests deeper than 1000 levels", None, "lists nested 5000 deep"),
        ("self_reference.pt", archive_with_pickle(hostile_pickle(b"]q\x00h\x00a")), REJECTED,
         "nests deeper than 1000 levels (or holds itself)", None, "a list that holds itself"),
        ("truncated_pickle.pt", replace_pickle(ok, tf.pickle_bytes(ok_state())[:-40]), REJECTED,
         "the pickle ends inside", None, "data.pkl cut 40 bytes before its end"),
        ("truncated_zip.pt", ok[:len(ok) // 2], REJECTED, "no end of central directory record", None,
         "the archive cut in half"),
        ("overlapping_entries.pt", overlapping_entries(), REJECTED, "overlap", None,
         "the bytes of entry data/0 hold entry data/1, which the central directory lists too"),
        ("lying_central_directory.pt", lying_directory(ok, "archive/data/0", 7), REJECTED,
         "where there is no local file header", None,
         "the central directory puts data/0 7 bytes after its local header"),
        ("lying_central_directory_name.pt", lying_directory(ok, "archive/data/1", like="archive/data/0"), REJECTED,
         "names 'archive/data/0', the central directory 'archive/data/1'", None,
         "the central directory puts data/1 at the local header of data/0"),
        ("compressed_storage.pt", compressed_storage(), REJECTED, "is compressed (deflate)", None,
         "storage entry data/0 deflated"),
        ("big_endian.pt", archive_bytes(ok_state(), byteorder="big"), REJECTED, "big-endian", None,
         "byteorder record \"big\""),
        ("big_endian_legacy.pt", legacy(legacy_state(), little_endian=False), REJECTED, "big-endian", None,
         "legacy system info little_endian=False"),
        ("bad_version.pt", archive_bytes(ok_state(), version="99\n"), REJECTED,
         "is not a format version that torch reads", None, "version record 99"),
        ("no_version.pt", archive_bytes(ok_state(), version=None), REJECTED, "has no version record", None,
         "no version record"),
        ("legacy_bad_magic.pt", b"\x80\x02\x8a\x0a" + bytes(10) + b"." + legacy(legacy_state())[15:], REJECTED,
         "does not start with the magic number", None, "legacy format with a wrong magic number"),
        ("legacy_count_mismatch.pt", legacy(legacy_state())[:-32] + struct.pack("<q", 5) + legacy(legacy_state())[-24:],
         REJECTED, "has 5 elements in the file, but the pickle says 6", None,
         "legacy storage whose element count in the file disagrees with the pickle"),
        ("legacy_truncated.pt", legacy(legacy_state())[:-4], REJECTED, "runs past the end of the file", None,
         "legacy file cut inside its last storage"),
        ("not_a_checkpoint.bin", b"just some text, not a checkpoint\n", REJECTED, "not a PyTorch checkpoint", None,
         "a .bin file that is neither format"),
    ]
    return items


def main(folder):
    global OUT
    OUT = folder
    os.makedirs(folder, exist_ok=True)
    entries = []
    for name, data, expected, words, canary, description in corpus():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
        entry = {"file": name, "expected": expected, "description": description}
        if words:
            entry["refusal"] = words
        if canary:
            entry["canary"] = canary
        entries.append(entry)
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump({"malformed": entries}, f, indent=1)
        f.write("\n")


OUT = DEFAULT_FOLDER

if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_FOLDER)
