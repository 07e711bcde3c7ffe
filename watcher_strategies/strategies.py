"""Strategies ``cache_aware_swap`` and ``numa_aware_swap``.

Adapters that only translate: Watcher's (audit-scoped) compute model
becomes the core's inventory (:mod:`watcher_strategies.view`), the
telemetry store supplies the latest reports and the move log
(:class:`contention.swap.StoreMoveLog`), the core builds the view
(:func:`contention.reportview.view_from_reports`) and runs the audit
(:func:`contention.swap.run_audit`: cool-down, repercussion check, model
check, phases), with parameters from the audit
(:mod:`contention.swap.params`, which also writes :meth:`get_schema`).
The plan becomes Watcher actions, in order:

* a swap between hosts becomes one ``contention_swap`` action (both legs,
  the second only if the first landed, the first undone if the second
  fails);
* a one-way move becomes a ``contention_migrate`` action (a live
  migration that records itself in the move log, as every action here
  does);
* a re-pin (the local phase, or a NUMA-aware swap between two sockets of
  one host) becomes a ``contention_repin`` action run by the host's agent;
* a CPU quota raise (the quota phase, :mod:`contention.swap.quota`) becomes a
  ``contention_cpu_quota`` action run by the host's agent.

The strategies use the ``contention_sequential`` planner, which chains the
actions in the order the core chose them (each step was planned on the
state the previous ones leave).

If telemetry is missing for more than ``max_missing_ratio`` of the
instances in scope (:func:`contention.reportview.check_telemetry`), the
audit fails with a message saying so (in the audit's ``status_message``
and the decision engine's log) rather than proposing moves from a partial
picture.
"""

import collections
import functools
import os
import threading
import time

from oslo_config import cfg
from sqlalchemy.engine import url as sa_url
from oslo_log import log
from watcher.common import exception
from watcher.decision_engine.solution import default as default_solution
from watcher.decision_engine.strategy.strategies import base
from watcher import conf as watcher_conf

from contention import cluster
from contention import gc_pause
from contention import opts as core_opts
from contention.perfmodel import mixes
from contention.perfmodel import persist
from contention import reportview
from contention import swap
from contention import store as store_api
from contention.swap import params as params_mod
from watcher_strategies import goal
from watcher_strategies import planner
from watcher_strategies import view as view_mod

LOG = log.getLogger(__name__)

SWAP_ACTION = 'contention_swap'
MIGRATE_ACTION = 'contention_migrate'
REPIN_ACTION = 'contention_repin'
QUOTA_ACTION = 'contention_cpu_quota'

_STORES = {}
_STORES_LOCK = threading.Lock()


class TelemetryMissing(exception.WatcherException):
    msg_fmt = '%(message)s'


_REPERCUSSION = next(f for f in params_mod.fields()
                     if f.name == 'repercussion_interval')


def strategy_opts():
    return [
        cfg.StrOpt('connection', default=store_api.DEFAULT_URL, secret=True,
                   help='SQLAlchemy URL of the telemetry store the '
                        'contention-collector writes (the [store] '
                        'connection of contention-collector.conf).'),
        cfg.IntOpt('repercussion_interval',
                   default=int(_REPERCUSSION.default), min=0,
                   help=_REPERCUSSION.metadata['help']),
        cfg.StrOpt('mix_model',
                   help='A contention-train model file (trained with '
                        '--copies-samples) for the model check: a swap is '
                        'also taken only if the model predicts the '
                        'sockets it touches to perform better after it. '
                        'Unset: no check. A file that cannot be loaded is '
                        'logged and the audit runs without the check.'),
    ]


def _store(url):
    with _STORES_LOCK:
        store = _STORES.get(url)
        if store is None:
            store = _STORES[url] = store_api.open_store(url)
        return store


def _mix_model(path):
    """The interference model of a model file, loaded once per version.

    A file replaced by a retrained model (a new modification time) is
    loaded again at the next audit; the decision engine need not restart.
    """
    try:
        version = os.stat(path).st_mtime_ns
    except OSError:
        version = None  # persist.load says what is wrong with it
    return _load_mix_model(path, version)


@functools.lru_cache(maxsize=4)
def _load_mix_model(path, version):
    return persist.load(path).interference


def category(reason):
    """The most specific category word of a skip reason.

    ``"not_movable: locked: ..."`` is counted as ``locked``.
    """
    parts = reason.split(': ')
    while (len(parts) > 1 and parts[0] in ('not_movable', 'host_disabled')
           and parts[1] and ' ' not in parts[1]):
        parts = parts[1:]
    return parts[0].split(':')[0]


def _legs(action):
    if isinstance(action, cluster.Swap):
        return (action.first, action.second)
    return (action,)


def _undo(params, action):
    """``params``, marked as the measured roll-back's way back if so.

    The action records the mark in the move log, so the roll-back never
    undoes an undo and holds its hosts for the cool-down.
    """
    return dict(params, undo=True) if action.undo else params


class ContentionSwapBase(base.BaseStrategy):
    """What both swap strategies share."""

    #: :data:`contention.swap.CACHE_AWARE` or ``NUMA_AWARE``.
    algorithm = None

    def __init__(self, config, osc=None):
        super().__init__(config, osc)
        self.planner = planner.NAME
        self._telemetry_store = None
        self.plan = None
        self.built = None
        self._quotas = {}
        self.clock = time.time

    @classmethod
    def get_goal_name(cls):
        return goal.NAME

    @classmethod
    def get_config_opts(cls):
        return strategy_opts()

    @classmethod
    def get_schema(cls):
        return params_mod.schema(cls.algorithm)

    @property
    def telemetry_store(self):
        if self._telemetry_store is None:
            self._telemetry_store = _store(self.config.connection)
        return self._telemetry_store

    @telemetry_store.setter
    def telemetry_store(self, store):
        self._telemetry_store = store

    def parameters(self):
        """The audit's :class:`contention.swap.SwapParameters`.

        What the audit leaves unset takes the algorithm's default (Watcher
        passes no parameters to an audit that sets none);
        ``repercussion_interval`` is this strategy's configuration option.
        """
        given = {}
        for name in params_mod.schema(type(self).algorithm)['properties']:
            given[name] = self.input_parameters.get(name)
        given['repercussion_interval'] = getattr(
            self.config, 'repercussion_interval', None)
        return params_mod.from_input(type(self).algorithm, given)

    def pre_execute(self):
        # Not BaseStrategy._pre_execute: it logs the whole model as XML at
        # debug level, computed even when debug is off (seconds per 10,000
        # instances).
        LOG.info('Initializing %s', self.get_display_name())
        if not self.compute_model:
            raise exception.ClusterStateNotDefined()

    def build_view(self, now, params=None):
        params = params or self.parameters()
        reports = self.telemetry_store.latest_reports(now=now)
        return view_mod.build_view(self.compute_model, reports, now,
                                   params.freshness)

    def move_log(self):
        return swap.StoreMoveLog(self.telemetry_store)

    def _fail(self, audit, message):
        """Fail the audit with ``message`` in its status_message."""
        LOG.error(message)
        if audit is not None:
            audit.status_message = message[:255]
            try:
                audit.save()
            except Exception:  # the audit row is best effort here
                LOG.warning('could not record the reason on audit %s',
                            getattr(audit, 'uuid', '?'))
        raise TelemetryMissing(message=message)

    def do_execute(self, audit=None):
        # Building the view and planning allocate objects by the hundred
        # thousand, none in a cycle; each burst made the cyclic collector
        # walk everything the decision engine holds (Watcher's model, the
        # decoded reports), a tenth of the decision time at 10,000 hosts
        # (bench/watcher.py: 5.5 -> 5.0 s). As for store reads
        # (contention.gc_pause), it runs again when the audit ends.
        with gc_pause.paused():
            self._decide(audit)

    def _decide(self, audit):
        now = self.clock()
        params = self.parameters()
        try:
            self.built = built = self.build_view(now, params)
            reportview.check_telemetry(built, params.max_missing_ratio,
                                       self.get_name())
        except exception.WatcherException:
            raise
        except reportview.TelemetryMissing as exc:
            self._fail(audit, str(exc))
        except Exception as exc:
            url = getattr(self.config, 'connection', None)
            try:
                url = sa_url.make_url(url).render_as_string(
                    hide_password=True)
            except Exception:
                url = '(unparsable URL)'
            self._fail(audit, '%s cannot read the telemetry store %s: %s: '
                       '%s' % (self.get_name(), url, type(exc).__name__,
                               exc))
        self._audit = audit
        unknown = sum(1 for i in built.view.instances
                      if (i.skip_reason or '').startswith('unknown_to_nova'))
        if not built.in_scope and (unknown or not built.view.hosts):
            # Watcher's model is empty or misses what the agents report:
            # an empty plan here would read as "balanced".
            self._fail(audit, '%s proposes nothing: Watcher\'s compute model '
                       'has no instance in the audit\'s scope (%d host(s)) '
                       'while the agents report %d; the decision engine\'s '
                       'Nova collector failed or its model is stale: see '
                       'its log' % (self.get_name(), len(built.view.hosts),
                                    unknown))
        try:
            # The decision engine's [contention_thresholds], as the agents
            # have theirs: Merlin's rules read them.
            thresholds, _overhead = core_opts.thresholds_from_conf(
                watcher_conf.CONF)
        except ValueError as exc:
            self._fail(audit, '%s: %s' % (self.get_name(), exc))
        self.plan = swap.run_audit(
            built.view, params, self.move_log(), type(self).algorithm,
            self.mix_values(built.view), thresholds)
        self._quotas = {i.uuid: i.cpu_quota for i in built.view.instances
                        if i.cpu_quota is not None}
        for action in self.plan.actions:
            self._add_action(action)

    def mix_values(self, view):
        """The model check's MixValues for ``view``, or None."""
        path = getattr(self.config, 'mix_model', None)
        if not path:
            return None
        try:
            model = _mix_model(path)
        except persist.ModelFileError as exc:
            LOG.error('%s: mix_model unusable, the audit runs without the '
                      'model check: %s', self.get_name(), exc)
            return None
        return mixes.MixValues(model, mixes.class_profiles(
            view.instances, swap.mix_class))

    def _solution_add(self, action_type, resource_id, input_parameters):
        """solution.add_action without its quadratic duplicate search.

        DefaultSolution.add_action compares each new action with every
        earlier one (seconds for thousands of re-pins); the core never
        proposes the same action twice, so append directly when the
        solution is Watcher's default one.
        """
        actions = getattr(self.solution, '_actions', None)
        if not isinstance(self.solution, default_solution.DefaultSolution) \
                or not isinstance(actions, list):
            self.solution.add_action(action_type=action_type,
                                     resource_id=resource_id,
                                     input_parameters=input_parameters)
            return
        params = dict(input_parameters)
        params['resource_id'] = resource_id
        actions.append({'action_type': action_type,
                        'input_parameters': params})

    def _leg_cpus(self, host, socket):
        if socket is None:
            return None
        return self.built.socket_cpus.get(host, {}).get(socket)

    def _add_action(self, action):
        if isinstance(action, cluster.Swap):
            first, second = action.first, action.second
            params = {
                'migration_type': 'live',
                'source_node': first.source_host,
                'destination_node': first.dest_host,
                'partner_id': second.instance,
                'partner_source_node': second.source_host,
                'partner_destination_node': second.dest_host,
            }
            # The plan (and its predicted spread) puts each instance on a
            # socket of its destination; the destination's agent re-pins it
            # there once it has landed.
            params['destination_cpus'] = self._leg_cpus(
                first.dest_host, first.dest_socket)
            params['partner_destination_cpus'] = self._leg_cpus(
                second.dest_host, second.dest_socket)
            self._solution_add(SWAP_ACTION, first.instance,
                               _undo(params, first))
        elif isinstance(action, cluster.Migrate):
            params = {'migration_type': 'live',
                      'source_node': action.source_host,
                      'destination_node': action.dest_host,
                      'resource_name': action.instance}
            # Nova chooses the cells; the destination's agent then moves
            # the instance and its memory to the planned socket (both
            # algorithms plan one: contention.swap.feasibility.landing).
            params['destination_cpus'] = self._leg_cpus(
                action.dest_host, action.dest_socket)
            self._solution_add(MIGRATE_ACTION, action.instance,
                               _undo(params, action))
        elif isinstance(action, cluster.Repin):
            params = {'host': action.host, 'socket': action.dest_socket,
                      'move_memory': bool(action.move_memory)}
            nodes = self.built.socket_nodes.get(action.host, {}).get(
                action.dest_socket, ())
            if len(nodes) == 1:
                params['node'] = nodes[0]
            else:
                params['cpus'] = self._leg_cpus(action.host,
                                                action.dest_socket)
            self._solution_add(REPIN_ACTION, action.instance,
                               _undo(params, action))
        elif isinstance(action, cluster.CpuQuota):
            old = self._quotas.get(action.instance)
            self._solution_add(QUOTA_ACTION, action.instance, {
                'host': action.host, 'quota': float(action.quota),
                'old_quota': None if old is None else float(old)})
        else:
            raise TypeError('%s cannot run %r' % (self.get_name(), action))

    def skipped_summary(self):
        """Every skip (the core's and the view's) counted by reason."""
        plan = self.plan
        seen = set()
        entries = []
        for item in plan.skipped:
            seen.add(item.subject)
            entries.append(item)
        for host in self.built.view.hosts:
            if not host.enabled and host.name not in seen:
                entries.append(cluster.Skipped(
                    host.name, 'host_disabled: %s' % host.skip_reason))
        for inst in self.built.view.instances:
            if not inst.movable and inst.uuid not in seen:
                entries.append(cluster.Skipped(
                    inst.uuid, 'not_movable: %s' % inst.skip_reason))
        counts = collections.Counter(category(e.reason) for e in entries)
        return entries, counts

    def post_execute(self):
        plan = self.plan
        ind = plan.indicators
        self.solution.set_efficacy_indicators(
            instances_count=int(ind['instances']),
            instance_migrations_count=int(ind['migrations']),
            swaps_count=int(ind['swaps']),
            repins_count=int(ind['repins']),
            llc_miss_spread_before=float(ind['spread_before']),
            llc_miss_spread_after=float(ind['spread_after']),
            predicted_gain=float(ind['predicted_gain']),
            memory_to_migrate=float(ind['memory_to_migrate_gb']),
            predicted_mean_performance_change=float(
                ind['perf_mean_change']),
            predicted_worst_performance_change=float(
                ind['perf_min_change']),
        )
        entries, counts = self.skipped_summary()
        for entry in entries:
            LOG.info('%s skipped %s: %s', self.get_name(), entry.subject,
                     entry.reason)
        summary = '%d action(s)' % len(self.solution.actions)
        if plan.reason:
            summary += '; %s' % plan.reason
        if counts:
            summary += '; skipped: ' + ', '.join(
                '%d %s' % (n, r) for r, n in sorted(counts.items()))
        # The contention_sequential planner writes this to the action
        # plan's status_message, where the CLI and Horizon show it.
        self.solution.contention_summary = summary
        LOG.info('%s: %s', self.get_name(), summary)
        self._report_to_audit(summary)

    def _report_to_audit(self, summary):
        """Put the summary in the audit's status_message too.

        The audit is what an operator looks at first (``openstack optimize
        audit show``); with the summary only in the action plan, an audit
        whose every candidate was skipped looked like a clean success.
        """
        audit = getattr(self, '_audit', None)
        if audit is None:
            return
        audit.status_message = summary[:255]
        try:
            audit.save()
        except Exception:  # the audit row is best effort here
            LOG.warning('could not record the summary on audit %s',
                        getattr(audit, 'uuid', '?'))


class CacheAwareSwap(ContentionSwapBase):
    """Cache-aware swap (Ahn et al. Algorithm 1, Merlin arbitration)

    *Description*

    Repairs instances whose memory is on another node than their vCPUs,
    re-pins each host's instances so its sockets have even LLC misses,
    then swaps the instance with the most misses on the most loaded host
    with one with few misses on the least loaded host (``extreme``, the
    papers' rule, or Merlin's ``sensitivity_cost``) while they differ by
    more than ``threshold``, then gives capped instances that use what
    they are allocated more CPU where free cores allow (Merlin).
    Every plan passes the harm check (``max_vm_harm``,
    ``max_latency_harm``) before Watcher sees it; its efficacy
    indicators include the harm check's predicted change of the
    instances' performance, on average and for the one it treats worst.

    *Requirements*

    contention-agent on every compute host in scope and
    contention-collector writing to the store; live migration between the
    hosts; two or more sockets per host for the re-pins.

    *Limitations*

    LLC misses are a proxy for performance: where no placement model
    values an instance, the harm check bounds estimates (co-runner
    misses, CPU past the cores, misses left remote), not the instance's
    speed. Memory-controller load is not estimated, nor what other
    hardware does to an instance's own speed (so moves stay among hosts
    of one CPU model unless ``across_cpu_models``). A NUMA repair is
    credited with the remote penalty times the instance's Memory Factor,
    less than the simulator gives back: some plans that repair a VM and
    bring it a neighbour would pay and are refused (2-7 % of the summed
    gain on three generated families, simulated). Each step is planned on
    the counters measured before the plan. It balances and never
    segregates: where every host runs the same mix (streamers beside
    sensitive services on every socket) nothing moves, although
    gathering the sensitive instances apart would pay (doc/watcher.md,
    "What balance leaves").
    """

    algorithm = swap.CACHE_AWARE

    @classmethod
    def get_name(cls):
        return 'cache_aware_swap'

    @classmethod
    def get_display_name(cls):
        return 'Cache-aware swap'

    @classmethod
    def get_translatable_display_name(cls):
        return 'Cache-aware swap'


class NumaAwareSwap(ContentionSwapBase):
    """NUMA-aware swap (Ahn et al. Algorithm 2, Merlin arbitration)

    *Description*

    Repairs instances whose memory is on another node than their vCPUs,
    then swaps instances, with their memory, between the sockets with the
    most and fewest LLC misses across the cloud (a re-pin pair within a
    host, a pair of live migrations between hosts), keeping NUMA
    affinity, then swaps for predicted contention alone and gives capped
    instances more CPU (Merlin). Every plan passes the harm check
    (``max_vm_harm``, ``max_latency_harm``) before Watcher sees it.

    *Requirements*

    contention-agent on every compute host in scope and
    contention-collector writing to the store; live migration between the
    hosts.

    *Limitations*

    As ``cache_aware_swap``: LLC misses are a proxy, the harm check
    bounds estimates where no placement model values an instance, memory-
    controller load and other hardware's speed are not estimated, each
    step is planned on the counters measured before the plan, and it
    balances, never segregates.
    """

    algorithm = swap.NUMA_AWARE

    @classmethod
    def get_name(cls):
        return 'numa_aware_swap'

    @classmethod
    def get_display_name(cls):
        return 'NUMA-aware swap'

    @classmethod
    def get_translatable_display_name(cls):
        return 'NUMA-aware swap'
