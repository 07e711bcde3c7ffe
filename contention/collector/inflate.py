"""Decompression with a size limit, and a count of what it refused.

The agent sends its reports gzip-compressed (``kombu_compression``), and
kombu inflates a message whole before anyone looks at it: a 2 MB message
that inflates to 2 GiB took the collector from 98 MB to 4.3 GB (issue 21).
:func:`install` replaces kombu's decoders in this process with ones that
stop at ``limit`` bytes; a message over it fails to decode, oslo.messaging
logs and rejects it, and it is counted here (``too_large``) until the
endpoint adds the count to the store's counters with its next batch. A
compression the agent never uses (brotli, zstd, ...) is refused the same
way (``bad_compression``).
"""

import bz2
import collections
import lzma
import threading
import zlib

from kombu import compression
from oslo_log import log as logging

LOG = logging.getLogger(__name__)

#: Decompressed bytes a report may have by default: a report is about
#: 0.9 KiB of JSON per instance, so this is room for thousands.
DEFAULT_LIMIT = 16 * 1024 * 1024

_lock = threading.Lock()
_refused = collections.Counter()


class TooLarge(ValueError):
    """A message inflates past the limit."""


def _refuse(reason, message):
    with _lock:
        _refused[reason] += 1
    LOG.warning('Refused a message: %s', message)
    raise TooLarge(message)


def _bounded(make, limit, name):
    def decode(body):
        inflater = make()
        out = inflater.decompress(body, limit + 1)
        if len(out) > limit:
            _refuse('too_large', '%s body of %d bytes inflates past %d '
                    'bytes' % (name, len(body), limit))
        return out
    return decode


def _unsupported(name):
    def decode(body):
        _refuse('bad_compression', 'compression %s is not accepted' % name)
    return decode


def install(limit=DEFAULT_LIMIT):
    """Make kombu's decoders in this process stop at ``limit`` bytes."""
    bounded = {
        'application/x-gzip': _bounded(zlib.decompressobj, limit, 'gzip'),
        'application/x-bz2': _bounded(bz2.BZ2Decompressor, limit, 'bzip2'),
        'application/x-lzma': _bounded(lzma.LZMADecompressor, limit, 'lzma'),
    }
    for content_type in list(compression._decoders):
        decoder = bounded.get(content_type, _unsupported(content_type))
        compression._decoders[content_type] = decoder


def take_refused():
    """{reason: n} refused since the last call, and forget them."""
    with _lock:
        counts = dict(_refused)
        _refused.clear()
    return counts


def give_back(rejections):
    """Keep the refusals of a batch that was not stored, for the next."""
    with _lock:
        for reason in ('too_large', 'bad_compression'):
            if rejections.get(reason):
                _refused[reason] += rejections[reason]
