"""Reads that fail fast when the server is gone (timeout=): a server that holds every range request unanswered
(remote_servers.FaultProxy.hold, what a hung server or a dead link looks like from here) never holds a reader, a
process killed with SIGKILL, `tensorfs umount` or a command longer than the timeout and one second.

- A process faulting a page of a remote tensor through a MADV_RANDOM mapping reads it synchronously: once the
  request is with the daemon, the kernel waits for its answer even after SIGKILL (the process is in D state). It
  ends within timeout= and one second of the kill.
- `tensorfs umount` while a reader waits on the server: the reader gets EIO within the timeout and lets the mount go,
  and umount, which tries a busy mount again for as long as its reads may wait, returns 0 within the bound.
- `tensorfs prefetch`, `cat` and `ls` give up on the server within --timeout and one second, exit 1, and say why."""
import errno
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

from remote_servers import FaultProxy, Nginx
from tensorfs_mount import BIN, Mount, daemon_pids, is_mounted, run, wait_until
from test_fault_storm import TIMEOUT, write_model
from test_faults import daemon_alive

BOUND = 120  # seconds: what a broken build would take at most before the test gives up on it

# Maps a file with MADV_RANDOM (no read-ahead: the fault reads its page synchronously), says so, and touches one byte.
TOUCH = textwrap.dedent("""
    import mmap, os, sys
    fd = os.open(sys.argv[1], os.O_RDONLY)
    view = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
    view.madvise(mmap.MADV_RANDOM)
    print("mapped", flush=True)
    view[int(sys.argv[2])]
""")


class ServerGone(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tensorfs-gone-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        data = os.path.join(self.tmp, "data")
        os.mkdir(data)
        write_model(data)
        self.nginx = Nginx(data)
        self.addCleanup(self.nginx.stop)
        self.proxy = FaultProxy(self.nginx.http)
        self.addCleanup(self.proxy.stop)
        self.url = f"http://127.0.0.1:{self.proxy.port}/model.safetensors"
        self.cache = os.path.join(self.tmp, "cache")

    def mount(self):
        m = Mount(self.url, "-o", f"cache_dir={self.cache},timeout={TIMEOUT}").__enter__()
        self.addCleanup(m.__exit__, None, None, None)
        [pid] = daemon_pids(m.path)
        return m, pid

    def wait_until_held(self, process):
        """Waits until `process` has a request held by the server (hold() was called before it started)."""
        self.assertTrue(wait_until(lambda: self.proxy.held > 0 or process.poll() is not None, BOUND),
                        "the reader never reached the server")
        self.assertIsNone(process.poll(), "the reader ended before the server held it")

    def test_kill_9_of_a_process_faulting_a_remote_page_ends_it_within_the_timeout(self):
        m, pid = self.mount()
        self.proxy.hold()
        toucher = subprocess.Popen([sys.executable, "-c", TOUCH, m.tensor("layer.2", "raw"), str(3 << 20)],
                                   stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(toucher.stdout.readline(), "mapped\n")
            self.wait_until_held(toucher)
            toucher.send_signal(signal.SIGKILL)
            killed = time.monotonic()
            toucher.wait(timeout=BOUND)
            took = time.monotonic() - killed
        finally:
            if toucher.poll() is None:
                toucher.kill()
                toucher.wait()
            toucher.stdout.close()
        self.assertEqual(toucher.returncode, -signal.SIGKILL)
        self.assertLessEqual(took, TIMEOUT + 1, "the killed process outlived the timeout by more than 1 s")
        self.assertTrue(daemon_alive(pid), "the daemon died")

    def test_umount_while_a_reader_waits_on_the_server_returns_within_the_timeout(self):
        m, pid = self.mount()
        self.proxy.hold()
        reader = subprocess.Popen(["cat", m.tensor("layer.2", "raw")], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
        try:
            self.wait_until_held(reader)
            started = time.monotonic()
            result = run("umount", m.path)
            took = time.monotonic() - started
            _, said = reader.communicate(timeout=BOUND)
        finally:
            if reader.poll() is None:
                reader.kill()
                reader.communicate()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertLessEqual(took, TIMEOUT + 1, "umount waited on the server past the timeout and 1 s")
        self.assertFalse(is_mounted(m.path))
        self.assertNotEqual(reader.returncode, 0)
        self.assertIn(os.strerror(errno.EIO), said)
        self.assertTrue(wait_until(lambda: not daemon_alive(pid)), "the daemon still runs after umount")

    def test_commands_give_up_on_the_server_within_the_timeout(self):
        self.proxy.hold()  # the first request of each command, for the file's first bytes, is a range request
        for command in (["prefetch", self.url, "--quiet"], ["cat", self.url, "layer.0", "--raw"], ["ls", self.url]):
            with self.subTest(command=command[0]):
                started = time.monotonic()
                result = run(*command, "--cache-dir", self.cache, "--timeout", str(TIMEOUT))
                took = time.monotonic() - started
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertLessEqual(took, TIMEOUT + 1, f"{command[0]} waited on the server past --timeout and 1 s")
                self.assertIn(self.url, result.stderr)
                self.assertIn(f"timeout={TIMEOUT}", result.stderr)


if __name__ == "__main__":
    unittest.main()
