"""Installed tensorfs used the way mount(8) and fstab use it: `cmake --install` to a temporary prefix, then real
`mount -t fuse.tensorfs` and `mount -T FSTAB` mounts in temporary folders, read and unmounted; `man tensorfs`, and
the other installed files (bash completion, README, copyright, changelog).

mount(8) clears PATH before it runs mount.fuse3, whose shell then looks for `tensorfs` in the default command
path (/usr/local/sbin, /usr/local/bin, /usr/sbin, ...) only, where an installed tensorfs lives. So the test runs
in a private mount namespace of its own, where the temporary prefix's bin folder is bind-mounted on the first
folder of that path: mount(8) then finds the installed binary exactly as it finds one installed in /usr/local,
and nothing outside this test process sees the change."""
import ctypes
import errno
import gzip
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

import remote_servers
import s3_servers
from tensorfs_mount import (BIN, VECTORS, daemon_pids, is_mounted, manifest, read_file, same_floats, unmount,
                            unmount_or_detach, wait_until)

CLONE_NEWNS = 0x00020000
# The command path of /bin/sh when PATH is unset: where mount.fuse3's shell finds `tensorfs`.
DEFAULT_COMMAND_PATH = ["/usr/local/sbin", "/usr/local/bin"]
LIBMOUNT_STATE = "/run/mount"

TINY = os.path.join(VECTORS, "gguf/tiny-llama-Q4_K_M.gguf")
ALL_DTYPES = os.path.join(VECTORS, "safetensors/all_dtypes.safetensors")
SHARDED = os.path.join(VECTORS, "safetensors/sharded")

prefix = None          # the temporary installation
command_folder = None  # where the installed bin folder is bind-mounted


def enter_private_mount_namespace():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)


def setUpModule():
    global prefix, command_folder
    if os.geteuid() != 0 or shutil.which("mount") is None or not os.path.exists("/sbin/mount.fuse3"):
        raise unittest.SkipTest("needs root, mount(8) and mount.fuse3")
    build = os.path.dirname(BIN)
    if not os.path.exists(os.path.join(build, "cmake_install.cmake")):
        raise unittest.SkipTest(f"{build} is not a CMake build folder")
    prefix = tempfile.mkdtemp(prefix="tensorfs-prefix-")
    try:
        install = subprocess.run(["cmake", "--install", build, "--prefix", prefix], capture_output=True, text=True)
        if install.returncode != 0:
            raise AssertionError(f"cmake --install failed: {install.stdout}{install.stderr}")
        enter_private_mount_namespace()
        # mount(8) keeps the options of x-*, _netdev, user, ... in /run/mount/utab: a private one for this namespace.
        if os.path.isdir(LIBMOUNT_STATE):
            subprocess.run(["mount", "-t", "tmpfs", "tmpfs", LIBMOUNT_STATE], check=True)
        folder = next(folder for folder in DEFAULT_COMMAND_PATH if os.path.isdir(folder))
        subprocess.run(["mount", "--bind", os.path.join(prefix, "bin"), folder], check=True)
        command_folder = folder
    except BaseException:
        # tearDownModule does not run when this fails.
        shutil.rmtree(prefix)
        prefix = None
        raise


def tearDownModule():
    if command_folder is not None:
        subprocess.run(["umount", command_folder], check=True)
        if os.path.isdir(LIBMOUNT_STATE):
            subprocess.run(["umount", LIBMOUNT_STATE], check=True)
    if prefix is not None:
        shutil.rmtree(prefix)


def mount_options(path):
    """The fstype and options of the mount at `path`, from this namespace's mountinfo."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == os.path.realpath(path):
                separator = fields.index("-")
                return fields[separator + 1], set(fields[5].split(","))
    return None, set()


def expected_tensor(source_file, name):
    for entry in manifest()["gguf"] + manifest()["safetensors"]:
        for t in entry["tensors"]:
            if entry["file"].startswith(source_file) and t["name"] == name:
                shape = t.get("numpy_shape", t.get("shape"))
                return shape, np.fromfile(os.path.join(VECTORS, t["expected_f32"]), dtype="<f4").reshape(shape)
    raise KeyError(name)


class MountPoint:
    """A fresh temporary folder to mount on; at exit, unmounts whatever is still mounted there and waits for the
    daemon to end."""

    def __enter__(self):
        self.tmp = tempfile.mkdtemp(prefix="tensorfs-fstab-")
        self.path = os.path.join(self.tmp, "mnt")
        os.mkdir(self.path)
        return self

    def __exit__(self, *exc):
        unmount_or_detach(self.path)
        wait_until(lambda: not daemon_pids(self.path))
        if not is_mounted(self.path):
            shutil.rmtree(self.tmp)
        return False


class InstalledTensorfs(unittest.TestCase):
    def installed(self, *relative):
        return os.path.join(prefix, *relative)

    def assert_served_by_installed_binary(self, mountpoint):
        pids = daemon_pids(mountpoint)
        self.assertEqual(len(pids), 1)
        running = os.stat(f"/proc/{pids[0]}/exe")
        installed = os.stat(self.installed("bin", "tensorfs"))
        self.assertEqual((running.st_dev, running.st_ino), (installed.st_dev, installed.st_ino))

    def assert_tensor_reads(self, mountpoint, source_file, name):
        shape, expected = expected_tensor(source_file, name)
        mapped = np.load(os.path.join(mountpoint, name, "dequant.npy"), mmap_mode="r")
        actual = np.array(mapped)
        del mapped  # unmapped now: a failed assertion's traceback must not keep the mount busy
        self.assertEqual(list(actual.shape), shape)
        self.assertTrue(same_floats(expected, actual), name)

    def cache_budget(self, mountpoint):
        with open(os.path.join(mountpoint, ".tensorfs/stats.json")) as f:
            return json.load(f)["cache"]["budget"]

    def unmount_and_wait(self, command, mountpoint):
        result = unmount(mountpoint, command)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertFalse(is_mounted(mountpoint))
        self.assertTrue(wait_until(lambda: not daemon_pids(mountpoint)), "the daemon outlived its mount")

    def test_install_puts_the_binary_the_man_page_completion_and_docs(self):
        self.assertTrue(os.access(self.installed("bin", "tensorfs"), os.X_OK))
        source_tree = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        # Compressed as Debian wants it, with gzip's -n (no name or time stamp).
        with gzip.open(self.installed("share", "man", "man1", "tensorfs.1.gz")) as page:
            self.assertEqual(page.read(), read_file(os.path.join(source_tree, "docs", "tensorfs.1")))
        # Where bash-completion looks for a command's completion when it is first completed.
        self.assertEqual(read_file(self.installed("share", "bash-completion", "completions", "tensorfs")),
                         read_file(os.path.join(source_tree, "completion", "tensorfs.bash")))
        for doc in ("README.md", "copyright", "changelog.gz"):
            self.assertTrue(os.path.isfile(self.installed("share", "doc", "tensorfs", doc)), doc)
        if shutil.which("man") is None:
            self.skipTest("no man(1) here")
        env = dict(os.environ, MANPATH=self.installed("share", "man"), MANWIDTH="100")
        page = subprocess.run(["man", "-P", "cat", "tensorfs"], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(page.returncode, 0, page.stderr)
        self.assertIn("tensorfs - mount a model checkpoint as a tree of plain files", page.stdout)
        for section in ("SYNOPSIS", "COMMANDS", "MOUNT OPTIONS", "FSTAB", "EXIT STATUS"):
            self.assertIn(f"\n{section}\n", page.stdout)

    def test_mount_t_fuse_tensorfs(self):
        for source, source_file, tensor in [(TINY, "gguf/tiny-llama", "blk.0.attn_q.weight"),
                                            (ALL_DTYPES, "safetensors/all_dtypes", "dtype.bf16"),
                                            (SHARDED, "safetensors/sharded", "model.layers.0.self_attn.q_proj.weight")]:
            with self.subTest(source=source), MountPoint() as mnt:
                result = subprocess.run(["mount", "-t", "fuse.tensorfs", source, mnt.path, "-o", "ro,cache_size=256M"],
                                        capture_output=True, text=True, timeout=120)
                self.assertEqual(result.returncode, 0, result.stderr)
                fstype, options = mount_options(mnt.path)
                self.assertEqual(fstype, "fuse.tensorfs")
                self.assertIn("ro", options)
                self.assert_served_by_installed_binary(mnt.path)
                self.assert_tensor_reads(mnt.path, source_file, tensor)
                self.assertEqual(self.cache_budget(mnt.path), 256 << 20)
                stats = subprocess.run([self.installed("bin", "tensorfs"), "stats", mnt.path, "--json"],
                                       capture_output=True, text=True, timeout=60)
                self.assertEqual(json.loads(stats.stdout)["cache"]["budget"], 256 << 20)
                self.unmount_and_wait(["umount", mnt.path], mnt.path)

    def test_fstab_lines(self):
        with MountPoint() as first, MountPoint() as second, MountPoint() as third:
            fstab = os.path.join(first.tmp, "fstab")
            with open(fstab, "w") as f:
                f.write("# tensorfs test table\n")
                f.write(f"{TINY} {first.path} fuse.tensorfs "
                        "ro,noatime,nofail,_netdev,x-systemd.automount,cache_size=64M 0 0\n")
                # No `ro`: mount(8) passes `rw`, and the mount is read-only all the same.
                f.write(f"{SHARDED} {second.path} fuse.tensorfs defaults,threads=2 0 0\n")
                # `user` makes mount(8) pass noexec,nosuid,nodev.
                f.write(f"{ALL_DTYPES} {third.path} fuse.tensorfs user,noauto 0 0\n")
            for mnt in (first, second, third):
                result = subprocess.run(["mount", "-T", fstab, mnt.path], capture_output=True, text=True, timeout=120)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assert_served_by_installed_binary(mnt.path)

            _, options = mount_options(first.path)
            self.assertTrue({"ro", "noatime"} <= options, options)
            self.assertEqual(self.cache_budget(first.path), 64 << 20)
            self.assert_tensor_reads(first.path, "gguf/tiny-llama", "output.weight")

            _, options = mount_options(second.path)
            self.assertIn("ro", options)
            with self.assertRaises(OSError) as refused:
                open(os.path.join(second.path, "model.json"), "w")
            self.assertEqual(refused.exception.errno, errno.EROFS)
            with open(os.path.join(second.path, "model.json")) as f:
                self.assertEqual(json.load(f)["tensor_count"], 21)

            _, options = mount_options(third.path)
            self.assertTrue({"ro", "noexec", "nosuid", "nodev"} <= options, options)
            self.assert_tensor_reads(third.path, "safetensors/all_dtypes", "dtype.f8_e4m3")

            self.unmount_and_wait(["umount", first.path], first.path)
            self.unmount_and_wait(["fusermount3", "-u", second.path], second.path)
            self.unmount_and_wait([self.installed("bin", "tensorfs"), "umount", third.path], third.path)

    def test_fstab_line_for_a_hub_model(self):
        """As the README shows it: an hf:// address, _netdev, the disk cache's folder and size."""
        source = remote_servers.HUB.source("gguf/tiny-llama-Q4_K_M.gguf")
        with MountPoint() as mnt:
            cache = os.path.join(mnt.tmp, "cache")
            fstab = os.path.join(mnt.tmp, "fstab")
            with open(fstab, "w") as f:
                f.write(f"{source} {mnt.path} fuse.tensorfs ro,nofail,_netdev,cache_dir={cache},disk_cache_size=1G 0 0\n")
            result = subprocess.run(["mount", "-T", fstab, mnt.path], capture_output=True, text=True, timeout=120)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assert_served_by_installed_binary(mnt.path)
            self.assert_tensor_reads(mnt.path, "gguf/tiny-llama", "blk.0.attn_q.weight")
            # Written by the daemon's disk writer once the read has its bytes: waited for, bounded.
            blocks = lambda: [name for _, _, names in os.walk(cache) for name in names if name.endswith(".block")]
            self.assertTrue(wait_until(lambda: blocks()))
            self.unmount_and_wait(["umount", mnt.path], mnt.path)

    def test_fstab_line_for_an_s3_model(self):
        """As the README shows it: an s3:// address, with the keys and the endpoint in the shared AWS files."""
        server = s3_servers.shared()
        with MountPoint() as mnt:
            with open(os.path.join(mnt.tmp, "credentials"), "w") as f:
                f.write(f"[default]\naws_access_key_id = {s3_servers.ACCOUNT['access_key']}\n"
                        f"aws_secret_access_key = {s3_servers.ACCOUNT['secret_key']}\n")
            with open(os.path.join(mnt.tmp, "config"), "w") as f:
                f.write(f"[default]\nendpoint_url = {server.endpoint}\n")
            env = server.env(None, AWS_SHARED_CREDENTIALS_FILE=os.path.join(mnt.tmp, "credentials"),
                             AWS_CONFIG_FILE=os.path.join(mnt.tmp, "config"))
            del env["AWS_ENDPOINT_URL_S3"]
            cache = os.path.join(mnt.tmp, "cache")
            fstab = os.path.join(mnt.tmp, "fstab")
            with open(fstab, "w") as f:
                f.write(f"s3://{s3_servers.BUCKET}/gguf/tiny-llama-Q4_K_M.gguf {mnt.path} fuse.tensorfs "
                        f"ro,nofail,_netdev,cache_dir={cache} 0 0\n")
            result = subprocess.run(["mount", "-T", fstab, mnt.path], capture_output=True, text=True, timeout=120,
                                    env=env)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assert_served_by_installed_binary(mnt.path)
            self.assert_tensor_reads(mnt.path, "gguf/tiny-llama", "blk.0.attn_q.weight")
            self.unmount_and_wait(["umount", mnt.path], mnt.path)

    def test_unknown_option_is_one_clear_line_through_mount8(self):
        with MountPoint() as mnt:
            result = subprocess.run(["mount", "-t", "fuse.tensorfs", TINY, mnt.path, "-o", "ro,bogus"],
                                    capture_output=True, text=True, timeout=120)
            self.assertNotEqual(result.returncode, 0)
            self.assertFalse(is_mounted(mnt.path))
            self.assertEqual(result.stderr, "tensorfs: unknown mount option 'bogus'; try 'tensorfs --help'\n")


if __name__ == "__main__":
    unittest.main()
