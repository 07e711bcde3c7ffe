"""The contention agent's RPC contract: one place for both ends.

Modelled on Nova's ``nova/compute/rpcapi.py``: the topic, the exchange,
the version and the method names live here, with the client that calls
them; the agent's server (``compute_agent/rpc.py``) builds its target from
the same constants and checks callers with :func:`authorise`. The module
is libvirt-free so that Watcher's applier imports it without the agent's
dependencies.

**The exchange is explicit.** oslo.messaging otherwise puts a target on
the transport's ``[DEFAULT] control_exchange``, which is ``openstack`` for
the agent but ``watcher`` inside Watcher's applier: the applier's calls
went to an exchange nobody listened on. Both ends name
:data:`EXCHANGE`, so no configuration has to agree.

**Authorisation.** Like Nova's and Watcher's RPC APIs, a call carries a
request context, and the agent acts only for a context holding one of
:data:`SERVICE_ROLES` (the role OpenStack gives service users, or admin).
An anonymous call (``{}``) is refused before anything is read. The broker
is the trust boundary (anyone with broker credentials can write any
context), so this is what Nova's own RPC gives: it stops anonymous and
accidental callers, and the agent's other checks (uuid, Nova instance,
CPU bounds) hold whoever calls.
"""

import uuid

import oslo_messaging

TOPIC = 'contention_agent'
EXCHANGE = 'contention'
VERSION = '1.0'

REPIN_INSTANCE = 'repin_instance'
SET_CPU_QUOTA = 'set_cpu_quota'
GET_REPORT = 'get_report'
METHODS = (REPIN_INSTANCE, SET_CPU_QUOTA, GET_REPORT)

#: A caller's context must hold one of these roles.
SERVICE_ROLES = frozenset(['service', 'admin'])

#: Longest error message the agent returns (and a client reports).
MAX_ERROR_CHARS = 300


class NotAuthorised(Exception):
    """The caller's request context holds no service role."""


def short(text, limit=MAX_ERROR_CHARS):
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    text = str(text)
    if len(text) <= limit:
        return text
    return '%s... (%d more characters)' % (text[:limit], len(text) - limit)


def roles_of(ctxt):
    """The roles of a request context, a dict as it crosses the bus."""
    if not isinstance(ctxt, dict):
        return frozenset()
    roles = ctxt.get('roles')
    if not isinstance(roles, (list, tuple)):
        return frozenset()
    return frozenset(r for r in roles if isinstance(r, str))


def authorise(ctxt, method):
    """Raise :class:`NotAuthorised` unless ``ctxt`` holds a service role."""
    if not roles_of(ctxt) & SERVICE_ROLES:
        user = ctxt.get('user_name') if isinstance(ctxt, dict) else None
        raise NotAuthorised(
            '%s refused: the request context (user %s) holds none of the '
            'roles %s' % (method, short(user, 60),
                          ', '.join(sorted(SERVICE_ROLES))))


def service_context(caller):
    """The request context a service sends: the service role, who calls."""
    return {'roles': ['service'], 'user_name': caller,
            'request_id': 'req-%s' % uuid.uuid4()}


def target(host=None):
    """The target of the agent on ``host`` (the server's if host given)."""
    return oslo_messaging.Target(exchange=EXCHANGE, topic=TOPIC,
                                 server=host, version=VERSION)


class AgentClient(object):
    """Calls the agent on ``host`` with a service context.

    A refusal comes back as ``RemoteError`` (or the agent's exception when
    the transport's ``allowed_remote_exmods`` lists its module).
    """

    def __init__(self, transport, host, timeout=60,
                 caller='contention-client'):
        self.host = host
        self._caller = caller
        self._client = oslo_messaging.get_rpc_client(
            transport, target(host), timeout=timeout)

    def _call(self, method, **kwargs):
        return self._client.call(service_context(self._caller), method,
                                 **kwargs)

    def repin_instance(self, instance_uuid, node=None, cpus=None,
                       move_memory=False):
        return self._call(REPIN_INSTANCE, instance_uuid=instance_uuid,
                          node=node, cpus=cpus, move_memory=move_memory)

    def set_cpu_quota(self, instance_uuid, quota_us):
        return self._call(SET_CPU_QUOTA, instance_uuid=instance_uuid,
                          quota_us=quota_us)

    def get_report(self):
        return self._call(GET_REPORT)
