"""Actions ``contention_swap``, ``contention_repin``, ``contention_cpu_quota``.

``contention_swap`` exchanges two instances' hosts with two live
migrations, in order: leg one (``resource_id`` from ``source_node`` to
``destination_node``), then, only if leg one landed where planned, leg two
(``partner_id`` from ``partner_source_node`` to
``partner_destination_node``). If leg two fails, leg one is migrated back,
so a failed swap leaves both instances where they were. Where each
instance ended is checked with Nova after every migration, not inferred
from the API call's return. If Nova cannot say (lookups keep failing, or
the migration still runs after the wait), the location is UNKNOWN, never
"not landed": nothing more is moved (leg one put back could land next to
its partner) and the action fails naming the instances to check. The
optional ``destination_cpus`` /
``partner_destination_cpus`` ask the destination's agent to re-pin the
instance (and its memory) to the planned socket once it has landed;
that step is best effort (the migration stands, the next audit sees where
it runs). Every leg is recorded in the telemetry store's move log
(:class:`contention.swap.StoreMoveLog`), which the strategies read for
their cool-down and repercussion check: a leg that landed, one that
failed, one left half done (moved and not moved back), and one whose
instance's location is unknown (recorded on its destination), so no
instance a swap touched escapes the cool-down. A Nova error never escapes
as anything but a failed action that says which leg, where each instance
is, and what was recorded; a migration still running when Watcher's wait
ends is aborted (and, if the abort does not take, its end awaited).

``contention_migrate`` is a one-way live migration with the same
handling and recording (the strategies' one-way moves; Watcher's own
``migrate`` action records nothing).

``contention_repin`` asks the agent on ``host`` (oslo.messaging RPC, the
contract of :mod:`contention.agent_rpc`: its exchange and topic, server =
host, a service request context) to move an instance's vCPUs to a node
or a CPU list, optionally with its memory.

``contention_cpu_quota`` asks the agent on ``host``, over the same RPC, to
set an instance's CPU cap (``set_cpu_quota``): Merlin's cheapest
reconfiguration (sections 3.3-3.5), which the strategies use to give a
capped instance that needs it one more core.
"""

import threading
import time

import oslo_messaging
from oslo_config import cfg
from oslo_log import log
from watcher.applier.actions import base
from watcher.common import exception
from watcher.common import nova_helper
from watcher import conf as watcher_conf

from contention import agent_rpc
from contention import store as store_api
from contention import swap

LOG = log.getLogger(__name__)
CONF = watcher_conf.CONF

_UUID = ('^([a-fA-F0-9]){8}-([a-fA-F0-9]){4}-([a-fA-F0-9]){4}-'
         '([a-fA-F0-9]){4}-([a-fA-F0-9]){12}$')
_CPU_LIST = {'type': 'array', 'minItems': 1,
             'items': {'type': 'integer', 'minimum': 0}}
_CPUS = {'anyOf': [_CPU_LIST, {'type': 'null'}]}

_HOST = {'type': 'string', 'minLength': 1}


class _Unknown:
    """Where an instance is when Nova cannot say (see ``_locate``)."""

    def __str__(self):
        return ('an UNKNOWN host (Nova cannot tell, or it is still '
                'migrating)')


UNKNOWN = _Unknown()


def _check(uuids):
    """The end of a failed swap's message: who needs an operator."""
    return '; an operator must check %s' % ', '.join(uuids) if uuids else ''


#: The measured roll-back's way back (``contention.swap.rollback``): the
#: move log records it as an undo, which is never undone.
_UNDO = {'type': 'boolean'}


def _migration_schema(**partner):
    """The input schema of a live migration, and of its partner's leg.

    Every property given in ``partner`` (a swap's second instance) is
    required except its CPUs, as the first instance's are.
    """
    properties = {
        'resource_id': {'type': 'string', 'pattern': _UUID},
        'resource_name': {'type': 'string'},
        'source_node': _HOST,
        'destination_node': _HOST,
        'migration_type': {'type': 'string', 'enum': ['live']},
        'destination_cpus': _CPUS,
        'undo': _UNDO,
    }
    properties.update(partner)
    required = ['resource_id', 'source_node', 'destination_node']
    required += [k for k in partner if not k.endswith('_cpus')]
    return {'type': 'object', 'properties': properties,
            'required': required, 'additionalProperties': False}


class ContentionActionFailed(exception.WatcherException):
    msg_fmt = '%(message)s'


def store_opts():
    return [
        cfg.StrOpt('connection', default=store_api.DEFAULT_URL, secret=True,
                   help='SQLAlchemy URL of the telemetry store, where '
                        'the moves this action makes or attempts are '
                        'recorded for the strategies\' cool-down and '
                        'repercussion check. '
                        'Recording is best effort: a store that cannot be '
                        'reached is logged, the move stands.'),
    ]


def agent_opts():
    return [
        cfg.StrOpt('transport_url', secret=True,
                   help='oslo.messaging transport URL of the bus the '
                        'contention agents listen on. Unset: the applier\'s '
                        'own [DEFAULT] transport_url.'),
        cfg.IntOpt('rpc_timeout', default=60, min=1,
                   help='Seconds to wait for an agent to answer a re-pin '
                        'or CPU quota request.'),
    ]


class _NovaAction(base.BaseAction):
    """Shared Nova and store plumbing."""

    def _nova(self):
        return nova_helper.NovaHelper()

    def _store(self):
        url = getattr(self.config, 'connection', None)
        return store_api.open_store(url) if url else None

    def _record(self, moves):
        """Record ``moves`` (:class:`contention.swap.Move`); best effort."""
        if not moves:
            return
        try:
            store = self._store()
            if store is None:
                return
            try:
                swap.StoreMoveLog(store).record(moves)
            finally:
                store.dispose()
        except Exception as exc:
            LOG.warning('could not record moves %s in the telemetry store: '
                        '%s', [m.uuid for m in moves], exc)

    @staticmethod
    def _where(nova, uuid):
        """The server, or None if it no longer exists.

        Any other Nova error is a failed action naming the instance.
        """
        try:
            return nova.find_instance(uuid)
        except exception.ComputeResourceNotFound:
            return None
        except Exception as exc:
            raise ContentionActionFailed(
                message='Nova cannot tell where instance %s is: %s: %s'
                        % (uuid, type(exc).__name__, exc))


_TRANSPORTS = {}
_TRANSPORTS_LOCK = threading.Lock()


def transport(url=None):
    """One RPC transport per URL for the process (they hold connections)."""
    with _TRANSPORTS_LOCK:
        if url not in _TRANSPORTS:
            _TRANSPORTS[url] = oslo_messaging.get_rpc_transport(CONF,
                                                                url=url)
        return _TRANSPORTS[url]


def agent_client(host, config):
    """The contract's client (:mod:`contention.agent_rpc`) for ``host``."""
    url = getattr(config, 'transport_url', None)
    return agent_rpc.AgentClient(
        transport(url), host, timeout=getattr(config, 'rpc_timeout', 60),
        caller='watcher-applier')


def repin(config, host, uuid, node=None, cpus=None, move_memory=False):
    """Ask the agent on ``host`` to re-pin ``uuid``; return its answer."""
    return agent_client(host, config).repin_instance(
        uuid, node=node, cpus=cpus, move_memory=move_memory)


def set_cpu_quota(config, host, uuid, quota_us):
    """Ask the agent on ``host`` to cap ``uuid``; return its answer."""
    return agent_client(host, config).set_cpu_quota(uuid, quota_us)


def _agent_call(host, call):
    """Run an agent RPC; turn the bus's failures into a failed action."""
    try:
        return call()
    except oslo_messaging.MessagingTimeout:
        raise ContentionActionFailed(
            message='the contention agent on %s did not answer '
                    '(exchange %s, topic %s)'
                    % (host, agent_rpc.EXCHANGE, agent_rpc.TOPIC))
    except oslo_messaging.RemoteError as exc:
        raise ContentionActionFailed(
            message='the contention agent on %s refused: %s'
                    % (host, agent_rpc.short(exc.value)))


def _check_on_host(nova, uuid, host):
    """Skip the action if the instance is gone or no longer on ``host``."""
    server = _NovaAction._where(nova, uuid)
    if server is None:
        raise exception.ActionSkipped('instance %s no longer exists' % uuid)
    if server.host != host:
        raise exception.ActionSkipped(
            'instance %s is on %s, not on %s as planned'
            % (uuid, server.host, host))


class ContentionSwap(_NovaAction):
    """Swap two instances between two hosts by live migration.

    The schema::

        resource_id               leg one's instance (UUID)
        source_node               its compute host now
        destination_node          the host it moves to
        partner_id                leg two's instance (UUID)
        partner_source_node       its compute host now
        partner_destination_node  the host it moves to
        migration_type            "live" (the only type)
        destination_cpus          optional CPU list to re-pin leg one to
        partner_destination_cpus  optional CPU list to re-pin leg two to
        undo                      the measured roll-back's way back
                                  (optional; recorded as an undo)
    """

    ABORT_TRUE = base.BaseAction.ABORT_TRUE + ['ContentionSwap']
    ORIGIN = 'watcher:contention_swap'
    #: Lookups of an instance before its location is UNKNOWN, and the
    #: pause between them: one 503 must not pass for "not landed".
    LOOKUP_TRIES = 3
    LOOKUP_DELAY_S = 2.0

    def __init__(self, config, osc=None):
        super().__init__(config, osc)
        self._running = None
        self.moved = []

    @classmethod
    def get_config_opts(cls):
        return store_opts() + agent_opts()

    @property
    def schema(self):
        return _migration_schema(
            partner_id={'type': 'string', 'pattern': _UUID},
            partner_source_node=_HOST,
            partner_destination_node=_HOST,
            partner_destination_cpus=_CPUS)

    def _legs(self):
        p = self.input_parameters
        return ((p['resource_id'], p['source_node'], p['destination_node'],
                 p.get('destination_cpus')),
                (p['partner_id'], p['partner_source_node'],
                 p['partner_destination_node'],
                 p.get('partner_destination_cpus')))

    def pre_condition(self):
        """Both instances ACTIVE on their sources, both hosts enabled.

        An instance no longer where the plan found it skips the action
        (the plan is out of date); a missing or disabled host, or an
        instance that is not ACTIVE, fails it.
        """
        nova = self._nova()
        for uuid, source, dest, _cpus in self._legs():
            server = self._where(nova, uuid)
            if server is None:
                raise exception.ActionSkipped(
                    'instance %s no longer exists' % uuid)
            if server.host != source:
                raise exception.ActionSkipped(
                    'instance %s is on %s, not on %s as planned'
                    % (uuid, server.host, source))
            if server.status != 'ACTIVE':
                raise ContentionActionFailed(
                    message='instance %s is %s; live migration needs '
                            'ACTIVE' % (uuid, server.status))
            try:
                node = nova.get_compute_node_by_hostname(dest)
            except exception.ComputeNodeNotFound:
                raise ContentionActionFailed(
                    message='destination host %s not found' % dest)
            except Exception as exc:
                raise ContentionActionFailed(
                    message='Nova cannot describe destination host %s: '
                            '%s: %s' % (dest, type(exc).__name__, exc))
            if node.status != 'enabled':
                raise ContentionActionFailed(
                    message='destination host %s is disabled' % dest)

    def _locate(self, nova, uuid):
        """(host, still migrating) of ``uuid``; never raises.

        The host is None if the instance no longer exists. Any other Nova
        error is retried; if it persists the host is UNKNOWN, which the
        caller must not take for "not landed" (the instance may well be
        on its destination).
        """
        for attempt in range(self.LOOKUP_TRIES):
            if attempt:
                time.sleep(self.LOOKUP_DELAY_S)
            try:
                server = nova.find_instance(uuid)
            except exception.ComputeResourceNotFound:
                return None, False
            except Exception as exc:
                LOG.warning('cannot locate instance %s (try %d of %d): '
                            '%s: %s', uuid, attempt + 1, self.LOOKUP_TRIES,
                            type(exc).__name__, exc)
                continue
            task_state = getattr(server, 'task_state', None)
            return (server.host,
                    isinstance(task_state, str) and bool(task_state))
        return UNKNOWN, False

    def _migrate(self, nova, uuid, source, dest):
        """Live-migrate and report where the instance really is.

        Watcher's helper waits a bounded time for the migration; one
        still running after it is aborted (Nova puts the instance back
        on its source), and if the abort does not take, awaited as long
        again. Any Nova error is logged; the answer is where Nova says
        the instance is at the end: None if it no longer exists, UNKNOWN
        if Nova cannot tell or it is still migrating.
        """
        self._running = (uuid, source, dest)
        try:
            try:
                nova.live_migrate_instance(instance_id=uuid,
                                           dest_hostname=dest)
            except Exception as exc:
                LOG.warning('live migration of %s from %s to %s failed: '
                            '%s: %s', uuid, source, dest,
                            type(exc).__name__, exc)
            host, migrating = self._locate(nova, uuid)
            if migrating:
                LOG.warning('live migration of %s from %s to %s still runs '
                            'after the wait; aborting it', uuid, source, dest)
                try:
                    nova.abort_live_migrate(instance_id=uuid, source=source,
                                            destination=dest)
                except Exception as exc:
                    LOG.warning('abort of the migration of %s failed: %s: '
                                '%s', uuid, type(exc).__name__, exc)
                host, migrating = self._locate(nova, uuid)
                if migrating:
                    host = self._await(nova, uuid)
            return host
        finally:
            self._running = None

    def _await(self, nova, uuid):
        """Wait for ``uuid``'s task to end, as long as Watcher's own wait.

        Still migrating at the end is UNKNOWN: it may yet land.
        """
        retry = int(getattr(CONF.nova, 'migration_max_retries', 180) or 1)
        interval = float(getattr(CONF.nova, 'migration_interval', 5) or 1)
        host, migrating = self._locate(nova, uuid)
        while migrating and retry > 0:
            time.sleep(interval)
            retry -= 1
            host, migrating = self._locate(nova, uuid)
        return UNKNOWN if migrating else host

    def _repin(self, uuid, host, cpus):
        if not cpus:
            return
        try:
            repin(self.config, host, uuid, cpus=list(cpus),
                  move_memory=True)
        except Exception as exc:
            LOG.warning('instance %s landed on %s but its agent did not '
                        're-pin it to CPUs %s: %s', uuid, host, cpus, exc)

    def _move(self, uuid, source, where, when, outcome=None, sent_to=None):
        """The move log's record of a leg.

        An instance at an UNKNOWN host is recorded on ``sent_to``, where
        it may be, as ``unknown``: never on its source, and held back by
        the cool-down like any instance that may have moved.
        """
        if where is UNKNOWN:
            where, outcome = sent_to, swap.UNKNOWN
        origin = swap.origin_of(
            self.ORIGIN, bool(self.input_parameters.get('undo')), outcome)
        return swap.Move(uuid, source, where or source, when, origin)

    def execute(self):
        nova = self._nova()
        (uuid1, src1, dst1, cpus1), (uuid2, src2, dst2, cpus2) = self._legs()
        self.moved = []
        try:
            landed = self._migrate(nova, uuid1, src1, dst1)
            if landed != dst1:
                undo, sent_to = '', dst1
                if landed not in (None, src1, UNKNOWN):
                    sent_to = landed
                    landed = self._migrate(nova, uuid1, landed, src1)
                    undo = '; moved it back: now on %s' % landed
                self.moved = [self._move(uuid1, src1, landed, time.time(),
                                         swap.FAILED, sent_to)]
                raise ContentionActionFailed(
                    message='swap leg one failed: %s is on %s, not %s%s; leg '
                            'two (%s) not started; recorded for the '
                            'cool-down%s'
                            % (uuid1, landed, dst1, undo, uuid2,
                               _check([uuid1] if landed != src1 else [])))
            self._repin(uuid1, dst1, cpus1)
            landed2 = self._migrate(nova, uuid2, src2, dst2)
            if landed2 != dst2:
                # Leg one goes back only where the partner surely is not.
                back = dst1
                if landed2 is not UNKNOWN:
                    back = self._migrate(nova, uuid1, dst1, src1)
                partner, sent_to = '', dst2
                if landed2 not in (None, src2, UNKNOWN):
                    sent_to = landed2
                    landed2 = self._migrate(nova, uuid2, landed2, src2)
                    partner = '; %s moved back to %s' % (uuid2, landed2)
                now = time.time()
                undone = back == src1
                self.moved = [
                    self._move(uuid1, src1, back, now,
                               swap.FAILED if undone
                               else swap.HALF_DONE, dst1),
                    self._move(uuid2, src2, landed2, now, swap.FAILED,
                               sent_to)]
                outcome = ('undone: %s is back on %s' % (uuid1, src1)
                           if undone else
                           'NOT undone: %s is on %s' % (uuid1, back))
                astray = [u for u, where, home in ((uuid1, back, src1),
                                                   (uuid2, landed2, src2))
                          if where != home]
                raise ContentionActionFailed(
                    message='swap leg two failed: %s is on %s, not %s; leg '
                            'one %s%s; both recorded for the cool-down%s'
                            % (uuid2, landed2, dst2, outcome, partner,
                               _check(astray)))
            self._repin(uuid2, dst2, cpus2)
            now = time.time()
            self.moved = [self._move(uuid1, src1, dst1, now),
                          self._move(uuid2, src2, dst2, now)]
            return True
        finally:
            self._record(self.moved)

    def revert(self):
        """Put back whichever instance is on its destination.

        Nothing moves while an instance's location is UNKNOWN or it is
        still migrating: the one put back could land next to it.
        """
        nova = self._nova()
        legs = list(reversed(self._legs()))
        found = [self._locate(nova, leg[0]) for leg in legs]
        if any(host is UNKNOWN or migrating for host, migrating in found):
            LOG.warning('not reverting: Nova cannot say where %s are, or '
                        'one is still migrating', [leg[0] for leg in legs])
            return
        for (uuid, source, dest, _cpus), (host, _) in zip(legs, found):
            if host == dest:
                back = self._migrate(nova, uuid, dest, source)
                self._record([self._move(uuid, dest, back, time.time(),
                                         'revert', source)])

    def abort(self):
        running = self._running
        if running is None:
            return True
        uuid, source, dest = running
        try:
            return self._nova().abort_live_migrate(
                instance_id=uuid, source=source, destination=dest)
        except Exception as exc:
            LOG.warning('abort of the migration of %s from %s to %s failed: '
                        '%s: %s', uuid, source, dest, type(exc).__name__, exc)
            return False

    def post_condition(self):
        """Nothing to check: execute() verifies where each instance is."""

    def get_description(self):
        return ('Swap two instances between two compute hosts by live '
                'migration: the first moves, then the second only if the '
                'first landed; if the second fails the first is moved '
                'back.')


class ContentionMigrate(ContentionSwap):
    """Live-migrate one instance, recorded in the move log.

    The schema::

        resource_id       the instance (UUID)
        source_node       its compute host now
        destination_node  the host it moves to
        migration_type    "live" (the only type)
        destination_cpus  optional CPU list to re-pin it to on arrival
        undo              the measured roll-back's way back (optional)

    The same Nova handling as ``contention_swap`` (a migration still
    running after the wait is aborted, any Nova error is a failed action
    saying where the instance is); the move is recorded whatever its
    outcome, so the cool-down holds the instance back.
    """

    ABORT_TRUE = base.BaseAction.ABORT_TRUE + ['ContentionMigrate']
    ORIGIN = 'watcher:contention_migrate'

    @property
    def schema(self):
        return _migration_schema()

    def _legs(self):
        p = self.input_parameters
        return ((p['resource_id'], p['source_node'], p['destination_node'],
                 p.get('destination_cpus')),)

    def execute(self):
        nova = self._nova()
        ((uuid, src, dst, cpus),) = self._legs()
        self.moved = []
        try:
            landed = self._migrate(nova, uuid, src, dst)
            if landed != dst:
                self.moved = [self._move(uuid, src, landed, time.time(),
                                         swap.FAILED, dst)]
                raise ContentionActionFailed(
                    message='live migration of %s from %s to %s failed: it '
                            'is on %s; recorded for the cool-down'
                            % (uuid, src, dst, landed))
            self._repin(uuid, dst, cpus)
            self.moved = [self._move(uuid, src, dst, time.time())]
            return True
        finally:
            self._record(self.moved)

    def get_description(self):
        return ('Live-migrate an instance to another compute host and '
                'record the move for the contention strategies\' '
                'cool-down.')


class _AgentAction(_NovaAction):
    """An action carried out by the contention agent on one host.

    It is one RPC call: nothing to abort midway, and the agent's answer in
    ``execute()`` is the check.
    """

    def abort(self):
        return True

    def post_condition(self):
        """Nothing to check: the agent's answer in execute() is the check."""


class ContentionRepin(_AgentAction):
    """Re-pin an instance's vCPUs (and memory) within its host.

    The schema::

        resource_id  the instance (UUID)
        host         its compute host (the agent's RPC server name)
        socket       the socket planned (informational)
        node         NUMA node to pin to, or
        cpus         host CPU list to pin to
        move_memory  also bind its memory to those CPUs' nodes
        undo         the measured roll-back's way back (optional)
    """

    @classmethod
    def get_config_opts(cls):
        return store_opts() + agent_opts()

    @property
    def schema(self):
        return {
            'type': 'object',
            'properties': {
                'resource_id': {'type': 'string', 'pattern': _UUID},
                'host': {'type': 'string', 'minLength': 1},
                'socket': {'anyOf': [{'type': 'integer', 'minimum': 0},
                                     {'type': 'null'}]},
                'node': {'anyOf': [{'type': 'integer', 'minimum': 0},
                                   {'type': 'null'}]},
                'cpus': _CPUS,
                'move_memory': {'type': 'boolean'},
                'undo': _UNDO,
            },
            'required': ['resource_id', 'host'],
            'additionalProperties': False,
        }

    def pre_condition(self):
        _check_on_host(self._nova(), self.resource_id,
                       self.input_parameters['host'])

    def execute(self):
        p = self.input_parameters
        move_memory = bool(p.get('move_memory', False))
        result = _agent_call(p['host'], lambda: repin(
            self.config, p['host'], self.resource_id, node=p.get('node'),
            cpus=p.get('cpus'), move_memory=move_memory))
        LOG.info('re-pinned %s on %s: %s', self.resource_id, p['host'],
                 result)
        self._record([swap.Move(
            self.resource_id, p['host'], p['host'], time.time(),
            swap.origin_of('watcher:contention_repin',
                           bool(p.get('undo'))))])
        return True

    def revert(self):
        """Nothing to undo.

        A re-pin leaves the instance running, on other CPUs of its own
        host, and the next audit sees where it runs.
        """

    def get_description(self):
        return ('Ask the contention agent on the instance\'s host to move '
                'its vCPUs (and optionally its memory) to another socket.')


def quota_opts():
    return store_opts() + agent_opts() + [
        cfg.IntOpt('cpu_period_us', default=100000, min=1000, max=1000000,
                   help='CFS period (microseconds) of the contention '
                        'agents, their [agent] cpu_period_us: a quota of '
                        'q (fraction of each vCPU) is sent as q x this '
                        'many microseconds.'),
    ]


class ContentionCpuQuota(_AgentAction):
    """Set an instance's CPU cap through its host's agent.

    The schema::

        resource_id  the instance (UUID)
        host         its compute host (the agent's RPC server name)
        quota        fraction of each vCPU it may use, 0 < quota <= 1
                     (1 lifts the cap)
        old_quota    optional: the quota the plan saw, for the log

    The agent (``set_cpu_quota``) takes microseconds per CFS period: the
    action sends ``quota x cpu_period_us`` (``-1``, no cap, for 1).
    """

    @classmethod
    def get_config_opts(cls):
        return quota_opts()

    @property
    def schema(self):
        fraction = {'type': 'number', 'exclusiveMinimum': 0, 'maximum': 1}
        return {
            'type': 'object',
            'properties': {
                'resource_id': {'type': 'string', 'pattern': _UUID},
                'host': {'type': 'string', 'minLength': 1},
                'quota': fraction,
                'old_quota': {'anyOf': [fraction, {'type': 'null'}]},
            },
            'required': ['resource_id', 'host', 'quota'],
            'additionalProperties': False,
        }

    def quota_us(self):
        """The agent's argument for the planned quota."""
        quota = float(self.input_parameters['quota'])
        if quota >= 1.0:
            return -1
        period = int(getattr(self.config, 'cpu_period_us', 100000))
        return max(1000, int(round(quota * period)))

    def pre_condition(self):
        _check_on_host(self._nova(), self.resource_id,
                       self.input_parameters['host'])

    def execute(self):
        p = self.input_parameters
        quota_us = self.quota_us()
        result = _agent_call(p['host'], lambda: set_cpu_quota(
            self.config, p['host'], self.resource_id, quota_us))
        LOG.info('CPU quota of %s on %s: %s (was %s of each vCPU): %s',
                 self.resource_id, p['host'], p['quota'],
                 p.get('old_quota'), result)
        self._record([swap.Move(self.resource_id, p['host'], p['host'],
                                time.time(), 'watcher:contention_cpu_quota')])
        return True

    def revert(self):
        """Nothing to undo: the next audit sees the quota and its effect."""

    def get_description(self):
        return ('Ask the contention agent on the instance\'s host to raise '
                'or lower its CPU cap (CFS quota).')
