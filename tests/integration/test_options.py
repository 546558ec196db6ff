"""tensorfs's own options have one list, the parser's (src/engine/settings.cpp): `tensorfs --help` prints it, and the
other places that name them say the same names and no other: docs/configuration.md's table, the manual's MOUNT
OPTIONS, and the completion's `-o` words. The parser takes every option that --help names, and refuses a name it
does not (which catches a help that lists an option the parser lost)."""
import os
import re
import subprocess
import unittest

from tensorfs_mount import BIN, VECTORS

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SOURCE = os.path.join(VECTORS, "safetensors", "all_dtypes.safetensors")
# libfuse's options that take a value, which the completion offers beside tensorfs's own.
LIBFUSE_VALUE_OPTIONS = {"fsname", "subtype", "max_read"}
# A value each option takes, for the parser check: any valid one will do.
VALID = {"cache_size": "64M", "threads": "4", "export_dtype": "bf16", "model": "all_dtypes.safetensors",
         "cache_dir": "/tmp", "disk_cache_size": "1G", "max_connections": "8", "readahead": "4M",
         "proxy": "http://127.0.0.1:9", "header": "X-Test:1", "timeout": "5", "log_id": "test",
         "secrets_socket": "/tmp/tensorfs-test-secrets.sock", "csi_volume": "volume"}


def read(relative):
    with open(os.path.join(ROOT, relative), encoding="utf-8") as f:
        return f.read()


def help_options():
    """(the options a user gives, the ones the CSI plugin sets) as --help lists them."""
    text = subprocess.run([BIN, "--help"], stdout=subprocess.PIPE, text=True, check=True).stdout
    section = text[text.index("  -o OPT[,OPT...]"):text.index("\n  --cache-size")]
    user = re.findall(r"^ {23}([a-z_]+)=", section, re.M)
    daemon_line = next(line for line in section.splitlines() if "set by the CSI plugin" in line)
    daemon_start = section.index(daemon_line)
    daemon = re.findall(r"([a-z_]+)=", section[daemon_start:section.index("\n", section.index("csi_volume"))])
    return user, daemon


class OneListOfOptions(unittest.TestCase):
    def setUp(self):
        self.user, self.daemon = help_options()
        self.all = set(self.user) | set(self.daemon)

    def test_help_lists_some_of_each(self):
        self.assertIn("cache_size", self.user)
        self.assertIn("export_dtype", self.user)
        self.assertIn("csi_volume", self.daemon)
        self.assertFalse(set(self.user) & set(self.daemon))

    def test_the_parser_takes_every_option_help_names_and_refuses_others(self):
        for name in sorted(self.all):
            with self.subTest(option=name):
                # model= is for a folder SOURCE: the vectors' folder, picking the same file.
                source = os.path.dirname(SOURCE) if name == "model" else SOURCE
                read_end, write_end = os.pipe()   # log_fd= takes an open descriptor
                value = str(write_end) if name == "log_fd" else VALID[name]
                try:
                    result = subprocess.run([BIN, "ls", source, "-o", f"{name}={value}"], stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True, pass_fds=(write_end,))
                finally:
                    os.close(read_end)
                    os.close(write_end)
                self.assertEqual(result.returncode, 0, result.stderr)
        result = subprocess.run([BIN, "ls", SOURCE, "-o", "cache_sise=64M"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.assertEqual(result.returncode, 1)
        self.assertIn("cache_sise", result.stderr)

    def test_configuration_md_names_them_all(self):
        text = read("docs/configuration.md")
        table = text[text.index("### tensorfs's own options"):]
        table = table[:table.index("\n#")]
        named = set()
        for row in table.splitlines()[3:]:
            if row.startswith("| "):
                named |= set(re.findall(r"`([a-z_]+)`", row.split("|")[1]))
        self.assertEqual(named, self.all)

    def test_the_manual_names_them_all(self):
        text = read("docs/tensorfs.1")
        section = text[text.index(".SH MOUNT OPTIONS"):]
        section = section[:section.index("\n.SH ", 1)]
        items = section.split(".TP\n")[1:]
        named = set()
        for item in items:
            head = item.splitlines()[0]
            if "allow_other" in head:   # libfuse's and mount(8)'s options follow
                break
            named |= set(re.findall(r"([a-z_]+)=", head))
        self.assertEqual(named, self.all)

    def test_the_completion_offers_the_users_options(self):
        text = read("completion/tensorfs.bash")
        words = re.search(r'_tensorfs_mount_options="([^"]*)"', text).group(1).split()
        offered = {word[:-1] for word in words if word.endswith("=")} - LIBFUSE_VALUE_OPTIONS
        self.assertEqual(offered, set(self.user))


if __name__ == "__main__":
    unittest.main()
