"""The agent's RPC interface (topic ``contention_agent``, server = host).

Watcher's applier (the ``contention_repin`` action) and operators call the
agent of one host through :class:`AgentClient`; the agent serves
:class:`AgentEndpoint` with oslo.messaging's threading executor, so calls
are answered while the collection loop runs.
"""

import libvirt
import oslo_messaging

from compute_agent import actions

TOPIC = 'contention_agent'
VERSION = '1.0'


class AgentEndpoint(object):
    """``repin_instance``, ``set_cpu_quota`` and ``get_report``.

    Refusals and failures raise :class:`compute_agent.actions.ActionError`
    (an expected exception: no traceback in the agent's log; the caller
    gets the message).
    """

    target = oslo_messaging.Target(version=VERSION)

    def __init__(self, local_actions, latest_report):
        self._actions = local_actions
        self._latest_report = latest_report

    def _run(self, method, *args, **kwargs):
        try:
            return method(*args, **kwargs)
        except libvirt.libvirtError as exc:
            raise actions.ActionError('libvirt refused: %s'
                                      % exc.get_error_message()) from None

    @oslo_messaging.expected_exceptions(actions.ActionError)
    def repin_instance(self, ctxt, instance_uuid, node=None, cpus=None,
                       move_memory=False):
        return self._run(self._actions.repin_instance, instance_uuid,
                         node=node, cpus=cpus, move_memory=move_memory)

    @oslo_messaging.expected_exceptions(actions.ActionError)
    def set_cpu_quota(self, ctxt, instance_uuid, quota_us):
        return self._run(self._actions.set_cpu_quota, instance_uuid,
                         quota_us)

    def get_report(self, ctxt):
        """The latest report as a dict, or None before the first one."""
        report = self._latest_report()
        return report.to_dict() if report is not None else None


def make_server(transport, host, endpoint, topic=TOPIC):
    target = oslo_messaging.Target(topic=topic, server=host)
    return oslo_messaging.get_rpc_server(transport, target, [endpoint],
                                         executor='threading')


class AgentClient(object):
    """Calls the agent on ``host``.

    Errors come back as :class:`compute_agent.actions.ActionError` when the
    transport allows ``compute_agent.actions`` as a remote exception module
    (``allowed_remote_exmods``), otherwise as ``RemoteError``.
    """

    def __init__(self, transport, host, topic=TOPIC, timeout=60):
        target = oslo_messaging.Target(topic=topic, server=host,
                                       version=VERSION)
        self._client = oslo_messaging.get_rpc_client(transport, target,
                                                     timeout=timeout)

    def repin_instance(self, instance_uuid, node=None, cpus=None,
                       move_memory=False):
        return self._client.call({}, 'repin_instance',
                                 instance_uuid=instance_uuid, node=node,
                                 cpus=cpus, move_memory=move_memory)

    def set_cpu_quota(self, instance_uuid, quota_us):
        return self._client.call({}, 'set_cpu_quota',
                                 instance_uuid=instance_uuid,
                                 quota_us=quota_us)

    def get_report(self):
        return self._client.call({}, 'get_report')
