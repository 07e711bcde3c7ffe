"""``contention-collector``: run the collector, or migrate the store.

    contention-collector --config-file /etc/contention/collector.conf
    contention-collector --config-file ... --upgrade-db
"""

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
    conf = parse_args(sys.argv[1:] if argv is None else argv)
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
    collector = service.CollectorService(conf, store)
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    collector.start()
    stopping.wait()
    LOG.info('Stopping')
    collector.stop()
    store.dispose()
    return 0


if __name__ == '__main__':
    sys.exit(main())
