"""contention-collector: host reports from the message bus into the store.

The collector runs on native threads (oslo.messaging's ``threading``
executor). oslo.messaging imports oslo.service, which picks its eventlet
backend unless told otherwise. Registering threading as the *default* (not
forcing it) lets the collector share a process with Nova and Watcher, which
choose threading themselves, and with tools such as oslo-config-generator
that may already have chosen a backend before importing us.
"""

from oslo_service import backend

backend.register_backend_default_hook(lambda: backend.BackendType.THREADING)
