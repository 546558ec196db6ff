"""`tensorfs status`: every tensorfs mount of the machine, from the mount table and each mount's stats.json; a mount
whose daemon was killed is shown as gone, with the command that clears it, and never holds the command up. Other
tensorfs mounts of the machine (other test runs) may be listed too: the checks look at the mounts made here."""
import json
import os
import signal
import time
import unittest

from tensorfs_mount import VECTORS, Mount, daemon_pids, is_mounted, read_file, run, unmount, wait_until

GGUF = os.path.join(VECTORS, "gguf/tiny-llama-Q4_K_M.gguf")
SAFETENSORS = os.path.join(VECTORS, "safetensors/all_dtypes.safetensors")


def status_of(mountpoint):
    result = run("status", "--json")
    assert result.returncode == 0, result.stderr
    found = [entry for entry in json.loads(result.stdout) if entry["mountpoint"] == mountpoint]
    assert len(found) == 1, result.stdout
    return found[0]


def is_running(pid):
    """False once `pid` is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Status(unittest.TestCase):
    def test_a_live_mount(self):
        started = time.time()
        with Mount(GGUF) as mount:
            served = len(read_file(os.path.join(mount.path, "model.json")))
            entry = status_of(mount.path)
            self.assertEqual(entry["source"], GGUF)
            self.assertEqual(entry["state"], "serving")
            self.assertEqual([entry["pid"]], daemon_pids(mount.path))
            self.assertLessEqual(entry["uptime_seconds"], time.time() - started + 1)
            self.assertGreaterEqual(entry["bytes_served"], served)
            self.assertEqual(entry["read_errors"], 0)
            self.assertIsNone(entry["bytes_fetched"])  # a local source fetches nothing
            self.assertIsNone(entry["clear_with"])

            table = run("status")
            self.assertEqual(table.returncode, 0, table.stderr)
            rows = [line.split() for line in table.stdout.splitlines()]
            self.assertEqual(rows[0], ["MOUNTPOINT", "SOURCE", "STATE", "PID", "UPTIME", "SERVED", "FETCHED", "DISK",
                                       "HITS", "ERRORS"])
            row = next(r for r in rows if r[0] == mount.path)
            self.assertEqual(row[1:4], [GGUF, "serving", str(entry["pid"])])

    def test_a_relative_source_is_shown_absolute(self):
        with Mount(os.path.relpath(SAFETENSORS)) as mount:
            self.assertEqual(status_of(mount.path)["source"], SAFETENSORS)

    def test_a_mount_whose_daemon_does_not_answer(self):
        with Mount(GGUF) as mount:
            pids = daemon_pids(mount.path)
            self.assertEqual(len(pids), 1)
            os.kill(pids[0], signal.SIGSTOP)
            try:
                entry = status_of(mount.path)   # given up on after its bounded wait, not held up
            finally:
                os.kill(pids[0], signal.SIGCONT)
            self.assertEqual(entry["state"], "not answering")
            self.assertEqual(entry["clear_with"], f"fusermount3 -uz {mount.path}")
            self.assertEqual(status_of(mount.path)["state"], "serving")

    def test_a_mount_whose_daemon_was_killed(self):
        mount = Mount(GGUF)
        with mount:
            pids = daemon_pids(mount.path)
            self.assertEqual(len(pids), 1)
            os.kill(pids[0], signal.SIGKILL)
            self.assertTrue(wait_until(lambda: not is_running(pids[0])))
            entry = status_of(mount.path)
            self.assertEqual(entry["state"], "daemon gone")
            self.assertEqual(entry["clear_with"], f"fusermount3 -u {mount.path}")
            self.assertIsNone(entry["pid"])
            table = run("status")
            self.assertIn(f"{mount.path}: its daemon is gone; clear the mount with: fusermount3 -u {mount.path}\n",
                          table.stdout)
            # The command it gives does clear it.
            self.assertEqual(unmount(mount.path).returncode, 0)
            self.assertFalse(is_mounted(mount.path))


if __name__ == "__main__":
    unittest.main()
