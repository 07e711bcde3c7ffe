"""contention-collector: host reports from the message bus into the store.

The collector runs on native threads (oslo.messaging's ``threading``
executor). oslo.messaging imports oslo.service, which picks its eventlet
backend unless told otherwise. Registering threading as the *default* (not
forcing it) lets the collector share a process with Nova and Watcher, which
choose threading themselves, and with tools such as oslo-config-generator
that may already have chosen a backend before importing us.
"""

import warnings

from oslo_service import backend

backend.register_backend_default_hook(lambda: backend.BackendType.THREADING)
# futurist imports eventlet where it is installed (Nova's and Watcher's
# environments), and eventlet's deprecation notice then preceded every
# --help and error message of the command with nine lines about a library
# the command does not run on.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
