"""MOUNTPOINT/.tensorfs/metrics and `tensorfs stats --prometheus`: the live counters in Prometheus' text exposition
format, held to a strict parser of the format written from its specification (prometheus_text.py)."""
import json
import math
import os
import unittest

from prometheus_text import FormatError, parse
from tensorfs_mount import VECTORS, Mount, read_file, run

SOURCE = os.path.join(VECTORS, "safetensors/all_dtypes.safetensors")


def samples(families, name, **labels):
    """The samples called `name` whose labels include `labels`."""
    return [s for family in families.values() for s in family.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]


def value(families, name, **labels):
    found = samples(families, name, **labels)
    if len(found) != 1:
        raise AssertionError(f"{len(found)} samples {name}{labels}")
    return found[0].value


class MetricsOfAMount(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mount = Mount(SOURCE).__enter__()
        with open(os.path.join(cls.mount.path, "model.json")) as f:
            cls.tensor_count = json.load(f)["tensor_count"]
        cls.metas = {}
        for entry in sorted(os.listdir(cls.mount.path)):
            meta_path = os.path.join(cls.mount.path, entry, "meta.json")
            if os.path.exists(meta_path):
                cls.metas[entry] = json.loads(read_file(meta_path))
        # Some reads of every kind: raw of two tensors, dequant.f32 and dequant.npy of tensors of several dtypes.
        cls.decoded = set()
        for entry, meta in list(cls.metas.items())[:6]:
            read_file(os.path.join(cls.mount.path, entry, "raw"))
            if meta["dequant"] is not None:
                read_file(os.path.join(cls.mount.path, entry, "dequant.f32"))
                read_file(os.path.join(cls.mount.path, entry, "dequant.npy"))
                cls.decoded.add(meta["dtype"])
        cls.path = os.path.join(cls.mount.path, ".tensorfs", "metrics")

    @classmethod
    def tearDownClass(cls):
        cls.mount.__exit__(None, None, None)

    def metrics(self):
        return parse(read_file(self.path).decode("utf-8"))

    def test_it_is_valid_text_format_with_tensorfs_conventions(self):
        families = self.metrics()
        self.assertGreater(len(families), 10)
        for name, family in families.items():
            with self.subTest(family=name):
                self.assertTrue(name.startswith("tensorfs_"))
                self.assertTrue(family.help, "every family has a HELP line")
                self.assertIn(family.type, ("counter", "gauge", "histogram"))
                if family.type == "counter":
                    self.assertTrue(name.endswith("_total"), "counters end in _total")
                # Base units only: bytes and seconds, never kilobytes or milliseconds.
                words = set(name.split("_"))
                self.assertFalse(words & {"kb", "mb", "gb", "kib", "mib", "ms", "us", "ns", "kilobytes", "megabytes",
                                          "milliseconds", "microseconds", "nanoseconds"}, "only bytes and seconds")
                self.assertTrue(family.samples)
                for sample in family.samples:
                    self.assertEqual(sample.labels.get("mountpoint"), self.mount.path)
                    self.assertIsNone(sample.timestamp)
                    self.assertFalse(math.isnan(sample.value))

    def test_stat_size_is_exact_and_stays_fixed(self):
        size = os.stat(self.path).st_size
        first = read_file(self.path)
        read_file(os.path.join(self.mount.path, list(self.metas)[0], "raw"))   # counters change...
        second = read_file(self.path)
        self.assertEqual(len(first), size)
        self.assertEqual(len(second), size)                               # ...the size does not
        self.assertEqual(os.stat(self.path).st_size, size)
        self.assertNotEqual(first, second)
        # The padding is a last comment line, which parsers ignore.
        last = first.rstrip(b"\n").rsplit(b"\n", 1)[1]
        self.assertRegex(last, rb"^# *$")

    def test_values_are_those_of_stats_json(self):
        with open(os.path.join(self.mount.path, ".tensorfs", "stats.json")) as f:
            stats = json.load(f)
        families = self.metrics()
        for file in ("raw", "dequant.f32", "dequant.npy", "dequant.bf16", "dequant.f16", "model.safetensors"):
            self.assertEqual(value(families, "tensorfs_reads_total", file=file), stats["reads"][file]["reads"])
            self.assertEqual(value(families, "tensorfs_read_bytes_total", file=file), stats["reads"][file]["bytes"])
        self.assertGreater(stats["reads"]["raw"]["bytes"], 0)
        for key in ("hits", "misses", "waits", "evictions", "decoded_ahead"):
            self.assertEqual(value(families, f"tensorfs_cache_{key}_total"), stats["cache"][key])
        self.assertEqual(value(families, "tensorfs_cache_budget_bytes"), stats["cache"]["budget"])
        self.assertEqual(value(families, "tensorfs_cache_chunk_bytes"), stats["cache"]["chunk_bytes"])
        self.assertEqual(value(families, "tensorfs_read_errors_total"), stats["read_errors"])
        self.assertAlmostEqual(value(families, "tensorfs_decode_seconds_total"), stats["decode"]["seconds"], places=6)
        by_dtype = {s.labels["dtype"]: s.value for s in samples(families, "tensorfs_decoded_bytes_total")}
        self.assertEqual(by_dtype, stats["decode"]["bytes_by_dtype"])
        self.assertEqual(sum(by_dtype.values()), stats["decode"]["bytes"])
        self.assertTrue(self.decoded <= {dtype for dtype, count in by_dtype.items() if count > 0})
        remote = {"requests": "requests", "bytes_fetched": "fetched_bytes", "retries": "retries",
                  "unanswered_requests": "unanswered_requests",
                  "disk_cache_hits": "disk_cache_hits", "disk_cache_misses": "disk_cache_misses",
                  "objects_changed": "objects_changed"}
        for key, name in remote.items():
            self.assertEqual(value(families, f"tensorfs_remote_{name}_total"), stats["remote"][key])
        for request in ("lookup", "readdirplus", "opendir", "releasedir", "refused"):
            self.assertEqual(value(families, "tensorfs_fuse_requests_total", request=request),
                             stats["fuse_requests"][request])

    def test_read_latency_histograms_count_every_read(self):
        with open(os.path.join(self.mount.path, ".tensorfs", "stats.json")) as f:
            stats = json.load(f)
        families = self.metrics()
        self.assertEqual(families["tensorfs_read_duration_seconds"].type, "histogram")
        count = {kind: value(families, "tensorfs_read_duration_seconds_count", kind=kind)
                 for kind in ("raw", "dequant", "meta", "model")}
        reads = {file: stats["reads"][file]["reads"] for file in stats["reads"]}
        self.assertEqual(count["raw"], reads["raw"])
        self.assertEqual(count["dequant"],
                         reads["dequant.f32"] + reads["dequant.npy"] + reads["dequant.bf16"] + reads["dequant.f16"])
        self.assertGreaterEqual(count["meta"], len(self.metas))   # every meta.json was read once at least
        self.assertEqual(count["model"], reads["model.safetensors"])
        for kind in ("raw", "dequant", "meta"):
            self.assertGreater(value(families, "tensorfs_read_duration_seconds_sum", kind=kind), 0)

    def test_stats_prometheus_prints_the_same_metrics(self):
        result = run("stats", self.mount.path, "--prometheus")
        self.assertEqual(result.returncode, 0, result.stderr)
        printed = parse(result.stdout)
        self.assertEqual(set(printed), set(self.metrics()))
        self.assertEqual(value(printed, "tensorfs_cache_budget_bytes"), 256 << 20)
        self.assertFalse(result.stdout.rstrip("\n").rsplit("\n", 1)[1].startswith("#"), "no padding line")
        both = run("stats", self.mount.path, "--prometheus", "--json")
        self.assertEqual(both.returncode, 1)


class StrictParser(unittest.TestCase):
    """The parser refuses what the specification does not allow (else the tests above would prove little)."""

    SPEC_EXAMPLE = (
        "# HELP http_requests_total The total number of HTTP requests.\n"
        "# TYPE http_requests_total counter\n"
        'http_requests_total{method="post",code="200"} 1027 1395066363000\n'
        'http_requests_total{method="post",code="400"}    3 1395066363000\n'
        "\n"
        "# Escaping in label values:\n"
        'msdos_file_access_time_seconds{path="C:\\\\DIR\\\\FILE.TXT",error="Cannot find file:\\n\\"FILE.TXT\\""} 1.458255915e9\n'
        "metric_without_timestamp_and_labels 12.47\n"
        'something_weird{problem="division by zero"} +Inf -3982045\n'
        "# HELP http_request_duration_seconds A histogram of the request duration.\n"
        "# TYPE http_request_duration_seconds histogram\n"
        'http_request_duration_seconds_bucket{le="0.05"} 24054\n'
        'http_request_duration_seconds_bucket{le="0.1"} 33444\n'
        'http_request_duration_seconds_bucket{le="+Inf"} 144320\n'
        "http_request_duration_seconds_sum 53423\n"
        "http_request_duration_seconds_count 144320\n"
    )

    def test_the_specification_example_parses(self):
        families = parse(self.SPEC_EXAMPLE)
        self.assertEqual(families["msdos_file_access_time_seconds"].samples[0].labels,
                         {"path": "C:\\DIR\\FILE.TXT", "error": 'Cannot find file:\n"FILE.TXT"'})
        self.assertEqual(families["something_weird"].samples[0].value, math.inf)
        self.assertEqual(len(families["http_request_duration_seconds"].samples), 5)

    def test_what_the_specification_forbids_is_refused(self):
        bad = {
            "no final line feed": "a 1",
            "bad metric name": "1a 1\n",
            "bad value": "a one\n",
            "value and two timestamps": "a 1 2 3\n",
            "float timestamp": "a 1 2.5\n",
            "unterminated label value": 'a{b="c} 1\n',
            "bad escape in a label value": 'a{b="\\t"} 1\n',
            "label twice": 'a{b="1",b="2"} 1\n',
            "reserved label name": 'a{__b="1"} 1\n',
            "same series twice": "a 1\na 2\n",
            "TYPE after a sample": "a 1\n# TYPE a counter\n",
            "two TYPE lines": "# TYPE a counter\n# TYPE a gauge\na 1\n",
            "unknown type": "# TYPE a meter\na 1\n",
            "two HELP lines": "# HELP a x\n# HELP a y\na 1\n",
            "bad escape in HELP": "# HELP a x\\ty\na 1\n",
            "interrupted group": "a 1\nb 1\na{c=\"d\"} 1\n",
            "histogram without +Inf": '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n',
            "histogram not cumulative": '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n',
            "histogram count differs": '# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 1\n',
            "histogram le out of order": '# TYPE h histogram\nh_bucket{le="2"} 1\nh_bucket{le="1"} 1\n'
                                         'h_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n',
        }
        for what, text in bad.items():
            with self.subTest(what=what):
                with self.assertRaises(FormatError):
                    parse(text)


if __name__ == "__main__":
    unittest.main()
