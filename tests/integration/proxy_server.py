"""Debian's squid as the HTTP proxy of the proxy tests, on 127.0.0.1 only, started by them and stopped with them
(never by name). It caches nothing, so every request it is sent reaches the server, and it logs each one with the
method, URL, status, body bytes, Range header and X-Dragonfly-Use-P2P header it carried."""
import os
import pwd
import re
import shutil
import subprocess
import tempfile

from remote_servers import _die_with_parent, free_port, port_answers
from tensorfs_mount import wait_until

SQUID = "/usr/sbin/squid"
LOG_LINE = re.compile(r'^(\S+) (\S+) (\d+) (\d+) "([^"]*)" "([^"]*)"$')


class Squid:
    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="tensorfs-squid-")
        # squid drops root for its own user, which must write its logs here.
        proxy = pwd.getpwnam("proxy")
        os.chown(self.folder, proxy.pw_uid, proxy.pw_gid)
        self.log_path = os.path.join(self.folder, "access.log")
        for attempt in range(5):
            self.port = free_port()
            with open(os.path.join(self.folder, "squid.conf"), "w") as f:
                f.write(f"""
http_port 127.0.0.1:{self.port}
pid_filename {self.folder}/squid.pid
cache_log {self.folder}/cache.log
coredump_dir {self.folder}
netdb_filename none
cache deny all
cache_mem 8 MB
shutdown_lifetime 0 seconds
logformat requests %rm %ru %>Hs %<st "%{{Range}}>h" "%{{X-Dragonfly-Use-P2P}}>h"
access_log stdio:{self.log_path} logformat=requests
http_access allow localhost
http_access deny all
""")
            self.process = subprocess.Popen([SQUID, "-N", "-f", os.path.join(self.folder, "squid.conf")],
                                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.PIPE, preexec_fn=_die_with_parent)
            if wait_until(lambda: self.process.poll() is not None or port_answers(self.port), 60) \
                    and self.process.poll() is None:
                self.url = f"http://127.0.0.1:{self.port}"
                return
            self.process.wait(timeout=30)  # a port taken meanwhile: try another
        raise RuntimeError("squid did not start: " + self.process.stderr.read().decode(errors="replace"))

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=60)
        self.process.stderr.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def requests(self):
        """(method, URL, status, body bytes, range, X-Dragonfly-Use-P2P) of each request squid logged ("-" for a
        header the request did not carry)."""
        if not os.path.exists(self.log_path):
            return []
        with open(self.log_path) as f:
            return [(m[1], m[2], int(m[3]), int(m[4]), m[5], m[6]) for m in map(LOG_LINE.match, f) if m]
