"""The agent's RPC server: the contract of :mod:`contention.agent_rpc`.

Watcher's applier (the ``contention_repin`` / ``contention_cpu_quota``
actions) and operators call the agent of one host through
:class:`contention.agent_rpc.AgentClient`; the agent serves
:class:`AgentEndpoint` on the contract's exchange, topic and version, with
oslo.messaging's threading executor so calls are answered while the
collection loop runs.
"""

import libvirt
from oslo_log import log as logging
import oslo_messaging

from compute_agent import actions
from contention import agent_rpc
from contention.collector import inflate

LOG = logging.getLogger(__name__)

#: Decompressed bytes an RPC request to the agent may have: a call is a
#: few hundred bytes, and kombu inflates a compressed message whole before
#: the caller's role is checked (issue 21 item 7, on the agent's side).
MAX_REQUEST_BYTES = 1 << 20


class AgentEndpoint(object):
    """``repin_instance``, ``set_cpu_quota`` and ``get_report``.

    Every method first checks the caller's request context
    (:func:`contention.agent_rpc.authorise`). Refusals and failures raise
    :class:`compute_agent.actions.ActionError` with a message of at most
    :data:`contention.agent_rpc.MAX_ERROR_CHARS` characters (an expected
    exception: no traceback in the agent's log; the caller gets the
    message).
    """

    target = oslo_messaging.Target(version=agent_rpc.VERSION)

    def __init__(self, local_actions, latest_report):
        self._actions = local_actions
        self._latest_report = latest_report

    @staticmethod
    def _authorise(ctxt, method):
        try:
            agent_rpc.authorise(ctxt, method)
        except agent_rpc.NotAuthorised as exc:
            raise actions.ActionError(str(exc)) from None

    def _run(self, ctxt, name, method, *args, **kwargs):
        """Run one action; its outcome goes to the agent's log too.

        The host's own record of what was changed on it, and by whom,
        beside the caller's.
        """
        self._authorise(ctxt, name)
        caller = _who(ctxt)
        try:
            result = method(*args, **kwargs)
        except libvirt.libvirtError as exc:
            error = actions.ActionError(agent_rpc.short(
                'libvirt refused: %s' % exc.get_error_message()))
        except actions.ActionError as exc:
            error = actions.ActionError(agent_rpc.short(exc))
        else:
            LOG.info('%s for %s: %s', name, caller, result)
            return result
        LOG.warning('%s for %s refused: %s', name, caller, error)
        raise error

    @oslo_messaging.expected_exceptions(actions.ActionError)
    def repin_instance(self, ctxt, instance_uuid, node=None, cpus=None,
                       move_memory=False):
        return self._run(ctxt, agent_rpc.REPIN_INSTANCE,
                         self._actions.repin_instance, instance_uuid,
                         node=node, cpus=cpus, move_memory=move_memory)

    @oslo_messaging.expected_exceptions(actions.ActionError)
    def set_cpu_quota(self, ctxt, instance_uuid, quota_us):
        return self._run(ctxt, agent_rpc.SET_CPU_QUOTA,
                         self._actions.set_cpu_quota, instance_uuid,
                         quota_us)

    @oslo_messaging.expected_exceptions(actions.ActionError)
    def get_report(self, ctxt):
        """The latest report as a dict, or None before the first one.

        It holds the host's whole inventory (instances, projects, images,
        flavors): service callers only.
        """
        self._authorise(ctxt, agent_rpc.GET_REPORT)
        report = self._latest_report()
        return report.to_dict() if report is not None else None


def _who(ctxt):
    """The caller and request of a context, for the log (clipped)."""
    ctxt = ctxt if isinstance(ctxt, dict) else {}
    return '%s %s' % tuple(repr(ctxt.get(k))[:80]
                           for k in ('user_name', 'request_id'))


def make_server(transport, host, endpoint):
    """The RPC server of the agent on ``host`` (the contract's target).

    Installs the bounded decompression (:mod:`contention.collector.inflate`)
    in this process first.
    """
    inflate.install(MAX_REQUEST_BYTES)
    return oslo_messaging.get_rpc_server(transport, agent_rpc.target(host),
                                         [endpoint], executor='threading')
