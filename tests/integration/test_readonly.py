"""Every call that would change the tree fails with EROFS, and nothing changes.

A tensorfs mount is read-only twice: the kernel mount carries `ro`, so the VFS refuses most calls before they
reach the daemon, and the daemon refuses every mutating request itself. The second layer is tested by turning
the kernel mount read-write (mount(2) with MS_REMOUNT, as root) so that the requests reach the daemon. write and
fallocate need a descriptor open for writing, which no open gives: the kernel refuses them on the read-only
descriptors there are, and the daemon's own answer to them is tested without a kernel (unit suite fuse_refusals)."""
import ctypes
import errno
import hashlib
import mmap
import os
import unittest

from tensorfs_mount import VECTORS, Mount

SOURCE = os.path.join(VECTORS, "gguf/align64.gguf")
MS_REMOUNT = 32


def mutations(root, tensor):
    """(what, call) for every mutating operation, aimed at the root, a tensor folder and its files."""
    raw = os.path.join(tensor, "raw")
    model = os.path.join(root, "model.json")
    whole = os.path.join(root, "model.safetensors")
    return [
        ("write: open model.safetensors O_RDWR", lambda: os.open(whole, os.O_RDWR)),
        ("truncate: model.safetensors", lambda: os.truncate(whole, 0)),
        ("unlink model.safetensors", lambda: os.unlink(whole)),
        ("write: open dequant.bf16 O_WRONLY", lambda: os.open(os.path.join(tensor, "dequant.bf16"), os.O_WRONLY)),
        ("write: open raw O_WRONLY", lambda: os.open(raw, os.O_WRONLY)),
        ("write: open raw O_RDWR", lambda: os.open(raw, os.O_RDWR)),
        ("write: open model.json O_WRONLY|O_APPEND", lambda: os.open(model, os.O_WRONLY | os.O_APPEND)),
        ("truncate: open raw O_RDONLY|O_TRUNC", lambda: os.open(raw, os.O_RDONLY | os.O_TRUNC)),
        ("create in root", lambda: os.open(os.path.join(root, "new"), os.O_CREAT | os.O_WRONLY, 0o644)),
        ("create in tensor", lambda: os.open(os.path.join(tensor, "new"), os.O_CREAT | os.O_RDONLY, 0o644)),
        ("mkdir in root", lambda: os.mkdir(os.path.join(root, "new"))),
        ("mkdir in tensor", lambda: os.mkdir(os.path.join(tensor, "new"))),
        ("mknod fifo", lambda: os.mkfifo(os.path.join(root, "fifo"))),
        ("mknod regular", lambda: os.mknod(os.path.join(tensor, "node"))),
        ("unlink raw", lambda: os.unlink(raw)),
        ("unlink model.json", lambda: os.unlink(model)),
        ("rmdir tensor", lambda: os.rmdir(tensor)),
        ("rmdir .tensorfs", lambda: os.rmdir(os.path.join(root, ".tensorfs"))),
        ("rename tensor", lambda: os.rename(tensor, os.path.join(root, "renamed"))),
        ("rename raw in its folder", lambda: os.rename(raw, os.path.join(tensor, "moved"))),
        ("rename raw over meta.json", lambda: os.rename(raw, os.path.join(tensor, "meta.json"))),
        ("link raw", lambda: os.link(raw, os.path.join(root, "hardlink"))),
        ("symlink in root", lambda: os.symlink("model.json", os.path.join(root, "symlink"))),
        ("setattr: truncate raw", lambda: os.truncate(raw, 0)),
        ("setattr: chmod raw", lambda: os.chmod(raw, 0o666)),
        ("setattr: chmod tensor", lambda: os.chmod(tensor, 0o777)),
        ("setattr: chown raw", lambda: os.chown(raw, 1, 1)),
        ("setattr: utime raw", lambda: os.utime(raw, (1, 1))),
        ("setattr: utime now", lambda: os.utime(tensor)),
        ("setxattr raw", lambda: os.setxattr(raw, "user.tensorfs", b"1")),
        ("setxattr root", lambda: os.setxattr(root, "user.tensorfs", b"1")),
        ("removexattr raw", lambda: os.removexattr(raw, "user.tensorfs")),
    ]


def tree_snapshot(root):
    """Every path of the tree with its mode, size and mtime, and the bytes of its small files."""
    snapshot = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            st = os.stat(path)
            snapshot[os.path.relpath(path, root)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return snapshot


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class ReadOnly(unittest.TestCase):
    def setUp(self):
        self.source_sha = sha256(SOURCE)
        self.mount = Mount(SOURCE).__enter__()
        self.addCleanup(self.mount.__exit__, None, None, None)
        self.root = self.mount.path
        self.tensor = os.path.join(self.root, sorted(n for n in os.listdir(self.root)
                                                     if n not in ("model.json", "model.safetensors", ".tensorfs",
                                                                  "source"))[0])
        self.before = tree_snapshot(self.root)

    def tearDown(self):
        self.assertEqual(tree_snapshot(self.root), self.before)
        self.assertEqual(sha256(SOURCE), self.source_sha)

    def assert_all_refused(self):
        for what, call in mutations(self.root, self.tensor):
            with self.subTest(what):
                with self.assertRaises(OSError) as caught:
                    result = call()
                    if isinstance(result, int):
                        os.close(result)
                self.assertEqual(caught.exception.errno, errno.EROFS, os.strerror(caught.exception.errno))

    def assert_no_write_through_a_read_descriptor(self):
        """write and fallocate need a descriptor open for writing, which no open gives (EROFS above). On the
        read-only descriptors there are, the kernel refuses them, and no writable shared mapping is possible."""
        fd = os.open(os.path.join(self.tensor, "raw"), os.O_RDONLY)
        try:
            for what, call in [("write", lambda: os.write(fd, b"x")),
                               ("pwrite", lambda: os.pwrite(fd, b"x", 0)),
                               ("fallocate", lambda: os.posix_fallocate(fd, 0, 4096)),
                               ("ftruncate", lambda: os.ftruncate(fd, 0))]:
                with self.subTest(what):
                    with self.assertRaises(OSError) as caught:
                        call()
                    self.assertIn(caught.exception.errno, (errno.EBADF, errno.EINVAL, errno.EROFS))
            with self.subTest("mmap PROT_WRITE MAP_SHARED"):
                with self.assertRaises(PermissionError):
                    mmap.mmap(fd, 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)

    def test_mount_is_read_only(self):
        self.assertTrue(os.statvfs(self.root).f_flag & os.ST_RDONLY)
        for name in os.listdir(self.tensor):
            self.assertEqual(os.stat(os.path.join(self.tensor, name)).st_mode & 0o222, 0)

    def test_every_mutation_fails_with_erofs(self):
        self.assert_all_refused()
        self.assert_no_write_through_a_read_descriptor()

    def test_daemon_refuses_every_mutation_itself(self):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.mount(None, self.root.encode(), None, MS_REMOUNT, None) != 0:
            self.skipTest(f"cannot remount read-write: {os.strerror(ctypes.get_errno())}")
        with open("/proc/self/mountinfo") as f:
            line = next(line for line in f if line.split()[4] == os.path.realpath(self.root))
        self.assertTrue(line.split()[5].startswith("rw"), line)
        self.assert_all_refused()
        self.assert_no_write_through_a_read_descriptor()


if __name__ == "__main__":
    unittest.main()
