"""Page-fault storms on a cold remote mount (transformers turns mmap off on hf-mount because many threads faulting one
FUSE file deadlocked it): 32 threads of one process map a mounted file and touch random pages at once, over a proxy
of our own in front of nginx (remote_servers.FaultProxy).

- A server that answers slowly: every touch gets the right bytes, and the storm ends within a generous bound; the
  same on source/model.safetensors, the source's own file.
- The server dies while the storm waits on it: the touched pages that were never fetched end in SIGBUS (caught in
  the faulting thread of tests/integration/fault_storm.c), no page is ever wrong, and the mount stays alive: the
  daemon lives, what was read before is read again, and it unmounts cleanly. The storm ends within the mount's
  timeout= and one second of the server's death.
- The same with the server stopped (SIGSTOP: connections open and requests go out, nothing answers): the storm
  ends within timeout= and one second, and `tensorfs umount` returns within them too.

The storm is a small C program (compiled here with the system's cc) because Python threads fault one at a time
under the GIL, and because only a signal handler in the faulting thread can tell which page raised SIGBUS."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import numpy as np

from mapped_files import build_fault_storm, safetensors_header
from remote_servers import FaultProxy, Nginx
from safetensors_files import write_safetensors
from tensorfs_mount import Mount, daemon_pids, is_mounted, read_file, run, wait_until
from test_faults import daemon_alive

MIB = 1 << 20
THREADS = 32
BOUND = 120  # seconds: generous, for a machine busy with other builds and for ASan; never reached when it works
# The mount's timeout= where the server goes away, and the bound the storm must end within once it has: the
# feature itself (the "timeout plus one second"). Four seconds leave every read of the warm-up, through the
# Python proxy on a busy machine and under ASan, far more than it takes.
TIMEOUT = 4
# Tensors of model.safetensors: 40 MiB of float32, five remote blocks (8 MiB) and tensors that straddle them.
SIZES = {"embed": 9 * MIB, "layer.0": 7 * MIB, "layer.1": 11 * MIB, "layer.2": 5 * MIB, "head": 8 * MIB}


def setUpModule():
    global STORM, WORK
    WORK = tempfile.mkdtemp(prefix="tensorfs-storm-")
    STORM = build_fault_storm(WORK)


def tearDownModule():
    shutil.rmtree(WORK, ignore_errors=True)


def write_model(folder):
    """model.safetensors in `folder`; returns {name: its data bytes}."""
    rng = np.random.default_rng(19)
    tensors = {name: rng.standard_normal(size // 4, dtype=np.float32).tobytes() for name, size in SIZES.items()}
    write_safetensors(os.path.join(folder, "model.safetensors"),
                      [(name, "F32", [len(data) // 4], data) for name, data in tensors.items()])
    return tensors


def expected_export(path, tensors, folder):
    """What the mounted model.safetensors at `path` must hold: its header (checked by the independent reader to
    name the source's tensors, dtypes and shapes) and each tensor's source bytes where that header puts them.
    Written to a file in `folder`; returns (that file, {name: (begin, end) in the export})."""
    head, parsed = safetensors_header(path)
    image = bytearray(os.path.getsize(path))
    image[:len(head)] = head
    spans = {}
    for name, dtype, shape, begin, end in parsed.tensors:
        assert (dtype, shape) == ("F32", [len(tensors[name]) // 4]), (name, dtype, shape)
        image[begin:end] = tensors[name]
        spans[name] = (begin, end)
    assert sorted(spans) == sorted(tensors), spans
    expected = os.path.join(folder, "expected.safetensors")
    with open(expected, "wb") as f:
        f.write(image)
    return expected, spans


def storm_command(mapped, expected, touches, seed, stop_at_sigbus):
    return [STORM, mapped, expected, str(THREADS), str(touches), str(seed), str(int(stop_at_sigbus))]


def touches_of(stdout):
    """[(outcome, page)] of every touch the storm printed."""
    return [(outcome, int(page)) for outcome, page in (line.split() for line in stdout.splitlines())]


class FaultStorm(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tensorfs-storm-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        data = os.path.join(self.tmp, "data")
        os.mkdir(data)
        self.tensors = write_model(data)
        self.original = os.path.join(data, "model.safetensors")
        self.nginx = Nginx(data)
        self.addCleanup(self.nginx.stop)
        self.proxy = FaultProxy(self.nginx.http)
        self.addCleanup(self.proxy.stop)

    def mount(self, port, *options):
        """A cold mount of the model from 127.0.0.1:`port` (the proxy, or nginx itself)."""
        cache = os.path.join(self.tmp, "cache")  # empty: the mount starts cold
        self.m = Mount(f"http://127.0.0.1:{port}/model.safetensors", "-o", ",".join((f"cache_dir={cache}",) + options))
        self.m.__enter__()
        self.addCleanup(self.m.__exit__, None, None, None)
        [self.pid] = daemon_pids(self.m.path)
        self.export = os.path.join(self.m.path, "model.safetensors")
        self.expected, self.spans = expected_export(self.export, self.tensors, self.tmp)

    def unmount(self):
        result = run("umount", self.m.path)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertFalse(is_mounted(self.m.path))
        self.assertTrue(wait_until(lambda: not daemon_alive(self.pid)), "the daemon still runs after umount")

    def storm_over_a_slow_server(self, source_file):
        self.mount(self.proxy.port)
        mapped, expected = ((os.path.join(self.m.path, "source", "model.safetensors"), self.original) if source_file
                            else (self.export, self.expected))
        self.proxy.delay = 0.2
        result = subprocess.run(storm_command(mapped, expected, 16, 1, False), capture_output=True, text=True,
                                timeout=BOUND)  # raises TimeoutExpired if the storm deadlocks
        self.assertEqual(result.returncode, 0, result.stderr)
        touched = touches_of(result.stdout)
        self.assertEqual(len(touched), THREADS * 16)
        self.assertEqual([t for t in touched if t[0] != "ok"], [])
        self.assertGreater(len({page for _, page in touched}), THREADS * 8, "the storm touched too few pages")
        self.unmount()

    def test_threads_faulting_model_safetensors_over_a_slow_server_all_get_the_right_bytes(self):
        self.storm_over_a_slow_server(source_file=False)

    def test_threads_faulting_a_source_file_over_a_slow_server_all_get_the_right_bytes(self):
        self.storm_over_a_slow_server(source_file=True)

    def test_server_killed_mid_storm_ends_unfetched_pages_in_sigbus_within_the_timeout_and_the_mount_lives(self):
        self.mount(self.proxy.port, f"timeout={TIMEOUT}")
        # One tensor read before the server dies: its pages are in the caches and must stay right.
        warm = "layer.1"
        self.assertEqual(read_file(self.m.tensor(warm, "raw")), self.tensors[warm])
        self.proxy.hold()
        storm = subprocess.Popen(storm_command(self.export, self.expected, 8, 2, True), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        try:
            self.assertTrue(wait_until(lambda: self.proxy.held > 0 or storm.poll() is not None, BOUND),
                            "the storm never reached the server")
            self.nginx.stop()
            self.proxy.stop()
            died = time.monotonic()
            out, err = storm.communicate(timeout=BOUND)
            took = time.monotonic() - died
        finally:
            if storm.poll() is None:
                storm.kill()
                storm.communicate()
        self.assertEqual(storm.returncode, 0, err)
        self.assertLessEqual(took, TIMEOUT + 1, "the storm outlived the server by more than timeout= and 1 s")
        self.check_storm_against_a_dead_server(out, warm)
        self.unmount()

    def test_server_stopped_mid_storm_ends_unfetched_pages_in_sigbus_within_the_timeout_and_umount_too(self):
        # Straight to nginx: once it is stopped, connections still open (the kernel accepts them) and requests go
        # out, but nothing answers.
        self.mount(self.nginx.http, f"timeout={TIMEOUT}")
        warm = "layer.1"
        self.assertEqual(read_file(self.m.tensor(warm, "raw")), self.tensors[warm])
        self.stop_server()
        stopped = time.monotonic()
        storm = subprocess.run(storm_command(self.export, self.expected, 8, 2, True), capture_output=True, text=True,
                               timeout=BOUND)
        took = time.monotonic() - stopped
        self.assertEqual(storm.returncode, 0, storm.stderr)
        self.assertLessEqual(took, TIMEOUT + 1, "the storm waited on the stopped server past timeout= and 1 s")
        self.check_storm_against_a_dead_server(storm.stdout, warm)
        # What tells an operator why reads failed at once: requests that got no answer.
        with open(os.path.join(self.m.path, ".tensorfs", "stats.json")) as f:
            self.assertGreaterEqual(json.load(f)["remote"]["unanswered_requests"], 1)
        started = time.monotonic()
        result = run("umount", self.m.path)
        self.assertLessEqual(time.monotonic() - started, TIMEOUT + 1, "umount waited on the stopped server")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(wait_until(lambda: not daemon_alive(self.pid)), "the daemon still runs after umount")

    def stop_server(self):
        """SIGSTOPs nginx, its master and its workers (continued at cleanup, so that it can be stopped)."""
        master = self.nginx.process.pid
        with open(f"/proc/{master}/task/{master}/children") as f:
            pids = [master] + [int(pid) for pid in f.read().split()]
        self.assertGreater(len(pids), 1, "nginx has no worker")
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
            self.addCleanup(os.kill, pid, signal.SIGCONT)

    def check_storm_against_a_dead_server(self, out, warm):
        touched = touches_of(out)
        self.assertEqual([t for t in touched if t[0] == "wrong"], [])
        self.assertTrue(any(outcome == "sigbus" for outcome, _ in touched), "no touch waited on the dead server")
        # Pages well inside the warm tensor (away from pages the kernel may read ahead with cold neighbours).
        begin, end = self.spans[warm]
        page = os.sysconf("SC_PAGE_SIZE")
        inside = [t for t in touched if begin + MIB <= t[1] * page and (t[1] + 1) * page <= end - MIB]
        self.assertTrue(inside, "no touch fell inside the warm tensor")
        self.assertEqual([t for t in inside if t[0] != "ok"], [])

        self.assertTrue(daemon_alive(self.pid), "the daemon died with the server")
        self.assertEqual(read_file(self.m.tensor(warm, "raw")), self.tensors[warm])
        with open(self.m.tensor("head", "meta.json")) as f:
            self.assertEqual(json.load(f)["shape"], [len(self.tensors["head"]) // 4])


if __name__ == "__main__":
    unittest.main()
