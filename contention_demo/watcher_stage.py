"""Stage 4: a Watcher audit, run by Watcher's own code, on the demo store.

What runs is Watcher's:

* its database (a SQLite file in the demo's output directory, schema from
  ``watcher.db.sqlalchemy.migration``), with goals and strategies
  registered from their entry points by the decision engine's
  ``Syncer``, as ``watcher-db-manage`` / the decision engine do;
* a ONESHOT audit with goal ``contention_reduction`` and strategy
  ``cache_aware_swap`` stored there;
* strategy selection and execution by the decision engine's
  ``DefaultStrategyContext`` (parameter defaults from the strategy's
  schema, ``execute`` = pre/do/post execute, efficacy indicators);
* the ``contention_sequential`` planner, loaded by Watcher's planner
  loader, writing the action plan, its actions and indicators.

Only two things are the demo's: the compute model, which Watcher's Nova
collector would build from Nova, is built from the emulated cluster
(:func:`watcher_strategies.peers.datasource.compute_model_from_view`), and the
strategy's clock is the emulated cluster's. The strategy reads the
telemetry store the demo's collector wrote, through its
``[watcher_strategies.cache_aware_swap] connection`` option.
"""

import uuid as uuidlib

import oslo_messaging
from oslo_config import cfg

from watcher import conf as watcher_conf
from watcher.common import context as watcher_context
from watcher.common import rpc
from watcher.decision_engine.loading import default as loading
from watcher.decision_engine.strategy.context import default as ctx_default
from watcher.decision_engine import sync
from watcher.db.sqlalchemy import migration
from watcher import objects

from contention import cluster
from watcher_strategies.peers import datasource as simulated

CONF = watcher_conf.CONF
GOAL = 'contention_reduction'
STRATEGY = 'cache_aware_swap'
PLANNER = 'contention_sequential'


class _Context(ctx_default.DefaultStrategyContext):
    """The decision engine's strategy context on an emulated model."""

    def __init__(self, compute_model, clock):
        super().__init__()
        self.compute_model = compute_model
        self.clock = clock
        self.strategy = None

    def select_strategy(self, audit, request_context):
        strategy = loading.DefaultStrategyLoader().load(STRATEGY)
        strategy._compute_model = self.compute_model
        strategy.clock = self.clock
        self.strategy = strategy
        return strategy


def setup(database_url, store_url):
    """Point Watcher at its database and our strategy at the store."""
    objects.register_all()
    CONF([], project='watcher', default_config_files=[])
    CONF.set_override('connection', database_url, group='database')
    # Watcher's objects emit notifications; in the demo they go nowhere.
    if rpc.NOTIFIER is None:
        transport = oslo_messaging.get_notification_transport(
            CONF, url='fake://')
        rpc.NOTIFICATION_TRANSPORT = transport
        rpc.NOTIFIER = oslo_messaging.Notifier(transport, driver='noop')
    group = 'watcher_strategies.%s' % STRATEGY
    from watcher_strategies import strategies
    try:
        CONF.register_opts(strategies.strategy_opts(), group=group)
    except cfg.DuplicateOptError:  # an earlier run in this process
        pass
    CONF.set_override('connection', store_url, group=group)
    strategies._STORES.clear()
    migration.create_schema()
    sync.Syncer().sync()


def audit(view, clock, parameters):
    """Run the audit; return (action plan, actions, indicators, strategy)."""
    context = watcher_context.make_context(is_admin=True)
    goal = objects.Goal.get_by_name(context, GOAL)
    strategy_obj = objects.Strategy.get_by_name(context, STRATEGY)
    audit_obj = objects.Audit(
        context, uuid=str(uuidlib.uuid4()), name='contention-demo',
        audit_type=objects.audit.AuditType.ONESHOT.value,
        state=objects.audit.State.ONGOING, goal_id=goal.id,
        strategy_id=strategy_obj.id, parameters=dict(parameters), scope=[],
        auto_trigger=False)
    audit_obj.create()
    strategy_ctx = _Context(simulated.compute_model_from_view(view), clock)
    solution = strategy_ctx.do_execute_strategy(audit_obj, context)
    planner = loading.DefaultPlannerLoader().load(PLANNER)
    plan = planner.schedule(context, audit_obj.id, solution)
    audit_obj.state = objects.audit.State.SUCCEEDED
    audit_obj.save()
    plan = objects.ActionPlan.get_by_uuid(context, plan.uuid)
    actions = objects.Action.list(context, filters={
        'action_plan_uuid': plan.uuid})
    indicators = objects.EfficacyIndicator.list(context, filters={
        'action_plan_uuid': plan.uuid})
    return plan, _ordered(actions), indicators, strategy_ctx.strategy


def _ordered(actions):
    """Actions in the order the plan runs them (parents first)."""
    by_parent = {}
    for action in actions:
        parent = action.parents[0] if action.parents else None
        by_parent.setdefault(parent, []).append(action)
    ordered, current = [], None
    while by_parent.get(current):
        action = by_parent[current].pop(0)
        ordered.append(action)
        current = action.uuid
    done = {a.uuid for a in ordered}
    return ordered + [a for a in actions if a.uuid not in done]


def to_plan(actions, cpu_sockets=None):
    """The simulator's Plan for Watcher's actions, in order.

    ``contention_swap`` -> Swap of two Migrates, each landing on the socket
    of its ``destination_cpus`` (where the destination's agent re-pins it;
    ``cpu_sockets`` is {host: {cpu: socket}}); ``migrate`` and
    ``contention_migrate`` -> Migrate;
    ``contention_repin`` -> Repin and ``contention_cpu_quota`` -> CpuQuota
    (the agent's local actions). Anything
    else is listed as skipped, with the reason.
    """
    cpu_sockets = cpu_sockets or {}

    def socket_of(host, cpus):
        found = {cpu_sockets.get(host, {}).get(cpu) for cpu in cpus or ()}
        return found.pop() if len(found) == 1 else None

    steps, skipped = [], []
    for action in actions:
        p = dict(action.input_parameters)
        subject = p.get('resource_id')
        if action.action_type == 'contention_swap':
            steps.append(cluster.Swap(
                cluster.Migrate(subject, p['source_node'],
                                p['destination_node'],
                                socket_of(p['destination_node'],
                                          p.get('destination_cpus'))),
                cluster.Migrate(p['partner_id'], p['partner_source_node'],
                                p['partner_destination_node'],
                                socket_of(p['partner_destination_node'],
                                          p.get('partner_destination_cpus')))))
        elif action.action_type == 'migrate':
            steps.append(cluster.Migrate(subject, p['source_node'],
                                         p['destination_node']))
        elif action.action_type == 'contention_migrate':
            steps.append(cluster.Migrate(
                subject, p['source_node'], p['destination_node'],
                socket_of(p['destination_node'], p.get('destination_cpus'))))
        elif action.action_type == 'contention_repin':
            steps.append(cluster.Repin(subject, p['host'], p['socket'],
                                       move_memory=bool(
                                           p.get('move_memory'))))
        elif action.action_type == 'contention_cpu_quota':
            steps.append(cluster.CpuQuota(subject, p['host'],
                                          float(p['quota'])))
        else:
            skipped.append(cluster.Skipped(
                subject or '?', 'action type %s is not emulated'
                % action.action_type))
    return cluster.Plan(actions=tuple(steps), skipped=tuple(skipped))
