"""A real collector process that stops between receiving and committing.

    python -m tests.functional.collector_child CONFIG READY RECEIVED

It runs the collector service from ``CONFIG`` exactly as
``contention-collector`` does, except that its store blocks inside the
ingest transaction (reports inserted, nothing committed) after touching
the file ``RECEIVED``. ``READY`` is touched once the listener consumes.
The test then kills the process with SIGKILL: the database rolls the
transaction back and the broker, seeing the connection drop with the
batch unacknowledged, delivers it again.
"""

import sys
import threading

from contention.collector import cmd
from contention.collector import service
from contention.store import opts as store_opts


def touch(path):
    with open(path, 'w'):
        pass


def main(config, ready, received):
    conf = cmd.parse_args(['--config-file', config])
    store = store_opts.open_from_conf(conf)
    real = store._update_profiles

    def update_profiles_then_hang(conn, reports, now):
        real(conn, reports, now)
        touch(received)
        threading.Event().wait()
    store._update_profiles = update_profiles_then_hang
    service.CollectorService(conf, store).start()
    touch(ready)
    threading.Event().wait()


if __name__ == '__main__':
    main(*sys.argv[1:4])
