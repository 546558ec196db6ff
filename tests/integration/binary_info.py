"""What the tensorfs binary under test was built with, for tests whose limits only hold without sanitizers."""
import functools

from tensorfs_mount import BIN


@functools.lru_cache(maxsize=None)
def asan_instrumented():
    """True when the binary carries AddressSanitizer: it reserves terabytes of virtual memory for its shadow and
    keeps freed memory in quarantine, so address-space limits and RSS bounds mean nothing for it."""
    with open(BIN, "rb") as f:
        return b"__asan_init" in f.read()
