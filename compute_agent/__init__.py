"""contention-agent: per-instance cache, memory and NUMA telemetry.

The agent runs on native threads (the publisher's sending thread and
oslo.messaging's ``threading`` executor for RPC). oslo.messaging imports
oslo.service, which picks its eventlet backend unless told otherwise;
registering threading as the *default* (not forcing it), as the collector
does, keeps it from choosing eventlet and lets a process that already chose
a backend (Nova, Watcher, oslo-config-generator) keep its choice.
"""

import warnings

from oslo_service import backend

backend.register_backend_default_hook(lambda: backend.BackendType.THREADING)
# futurist imports eventlet where it is installed (Nova's and Watcher's
# environments), and eventlet's deprecation notice then preceded every
# --help and error message of the command with nine lines about a library
# the command does not run on.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
