"""``contention-collector``: run the collector, or migrate the store.

    contention-collector --config-file /etc/contention/collector.conf
    contention-collector --config-file ... --upgrade-db

``[collector] workers`` > 1 runs that many collector processes under this
one, which restarts any that dies.
"""

import gc
import multiprocessing
import signal
import sys
import threading

from oslo_config import cfg
from oslo_log import log as logging

from contention.collector import opts
from contention.collector import service
from contention.store import opts as store_opts

LOG = logging.getLogger(__name__)

cli_opts = [
    cfg.BoolOpt('upgrade-db', default=False,
                help='Create or migrate the store schema (alembic upgrade '
                     'head) and exit.'),
]


def parse_args(argv, conf=None):
    conf = conf or cfg.ConfigOpts()
    logging.register_options(conf)
    opts.register(conf)
    conf.register_cli_opts(cli_opts)
    conf(argv, project='contention', prog='contention-collector')
    logging.setup(conf, 'contention-collector')
    return conf


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    conf = parse_args(argv)
    store = store_opts.open_from_conf(conf)
    if conf.upgrade_db:
        store.upgrade()
        LOG.info('Store schema is at revision %s', store.schema_revision())
        return 0
    revision, head = store.schema_revision(), store.head_revision()
    if revision != head:
        LOG.error('The store at [store] connection is at schema revision '
                  '%s, this collector needs %s; run contention-collector '
                  '--upgrade-db first', revision or '(none)', head)
        return 1
    if conf.collector.workers == 1:
        return serve(conf, store)
    # Each worker opens its own connections: none may cross a fork.
    store.dispose()
    return supervise(argv, conf.collector.workers)


#: Seconds one collector has to stop its listener after SIGTERM.
LISTENER_STOP_TIMEOUT = 20.0


def _in_thread(target, name):
    # Daemon: a thread stuck in the broker's reconnect loop (and the
    # driver threads it starts, which inherit the flag) cannot keep the
    # process alive.
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    return thread


def serve(conf, store, retention=True):
    """Run one collector until SIGTERM or SIGINT, whatever the broker does.

    Starting and stopping the listener talk to the broker, and
    oslo.messaging retries an unreachable broker for ever: in the main
    thread that made the collector deaf to SIGTERM for as long as the
    broker was away. Both run in threads; the main thread only waits for
    a signal. A listener that cannot stop in
    :data:`LISTENER_STOP_TIMEOUT` is left behind: whatever batch it held
    is unacknowledged, so the broker delivers it again.
    """
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    collector = service.CollectorService(conf, store, retention=retention)
    # What start-up imported and built lives as long as the process: out
    # of the garbage collector's sight, a full collection no longer walks
    # it while reports are being validated.
    gc.freeze()
    LOG.info('Starting the listener (it waits for the broker)')
    starting = _in_thread(collector.start, 'collector-start')
    stopping.wait()
    LOG.info('Stopping')
    if starting.is_alive():
        LOG.warning('Stopping before the broker was reached: nothing was '
                    'consumed')
        collector.endpoint.stop()
    else:
        stopper = _in_thread(collector.stop, 'collector-stop')
        stopper.join(LISTENER_STOP_TIMEOUT)
        if stopper.is_alive():
            LOG.warning('The listener did not stop within %.0f s (broker '
                        'unreachable?); exiting, the broker redelivers '
                        'what was not acknowledged', LISTENER_STOP_TIMEOUT)
    store.dispose()
    return 0


def _worker(argv, index):
    conf = parse_args(argv)
    sys.exit(serve(conf, store_opts.open_from_conf(conf),
                   retention=index == 0))


#: Seconds between checks on the workers, and before restarting one.
SUPERVISE_INTERVAL = 1.0
#: Seconds a worker has to finish its batches after SIGTERM.
STOP_TIMEOUT = 60.0


def supervise(argv, workers):
    """Run ``workers`` collector processes, restart any that dies.

    They are started fresh ('spawn'), each reading the configuration
    itself, so no connection or thread crosses a fork. SIGTERM or SIGINT
    stops them (each finishes the batches it holds), then this returns.
    """
    context = multiprocessing.get_context('spawn')
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())

    def start(index):
        proc = context.Process(target=_worker, args=(argv, index),
                               name='contention-collector-%d' % index)
        proc.start()
        LOG.info('Started collector worker %d (pid %d)', index, proc.pid)
        return proc
    procs = [start(i) for i in range(workers)]
    while not stopping.wait(SUPERVISE_INTERVAL):
        for index, proc in enumerate(procs):
            if not proc.is_alive() and not stopping.is_set():
                LOG.error('Collector worker %d (pid %d) exited with %s; '
                          'restarting it', index, proc.pid, proc.exitcode)
                procs[index] = start(index)
    LOG.info('Stopping %d collector workers', workers)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(STOP_TIMEOUT)
        if proc.is_alive():
            LOG.error('Collector worker pid %d did not stop in %.0f s; '
                      'killing it', proc.pid, STOP_TIMEOUT)
            proc.kill()
            proc.join()
    return 0


if __name__ == '__main__':
    sys.exit(main())
