"""Pausing Python's cyclic garbage collector around allocation bursts."""

import contextlib
import gc


@contextlib.contextmanager
def paused():
    """No cyclic garbage collection inside the block.

    Validating, encoding or decoding a batch of reports allocates tens of
    thousands of small objects, none in a cycle; each allocation burst
    makes the collector walk everything the process holds (previous
    batches, decoded reports), which cost about a third of a 10,000-host
    read and of the collector's validation. Reference counting still frees
    what is dropped, and the collector runs again as soon as the block
    ends. Threads may nest blocks: only the one that paused it resumes it.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
