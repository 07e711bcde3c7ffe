"""Run Watcher strategies, unchanged, on a simulated cluster.

The demo and the evaluation compare our strategies with Watcher's own
(``workload_stabilization``, ``workload_balance``, ``noisy_neighbor``) on the
simulator. To compare the code operators actually run, each strategy gets a
real Watcher compute model (:class:`ModelRoot`) built from a
:class:`contention.cluster.ClusterView`, and a datasource that answers
Watcher's metric queries from the same view. Its solution is translated back
into a :class:`contention.cluster.Plan` the simulator can apply.

Translation is honest: a migration whose destination is not a compute host
name (``noisy_neighbor`` puts node uuids there, which Nova refuses) is not
applied but reported as skipped, as it would fail in a real cloud.
"""

import datetime
import uuid as uuidlib

from watcher import conf as watcher_conf  # noqa: F401  (registers options)
from watcher.common import utils
from watcher.decision_engine.datasources import base as ds_base
from watcher.decision_engine.model import element
from watcher.decision_engine.model import model_root

from contention import cluster

#: Namespace for the compute node uuids of simulated hosts. Watcher tells
#: nodes by uuid and Nova tells hosts by name; keeping them different keeps
#: a strategy that confuses the two from working by accident.
_NODE_NAMESPACE = uuidlib.UUID('6f1d1bb4-4c55-4f0e-9a8e-0b8a4a7c2f10')
_PROJECT = '00000000-0000-4000-8000-000000000000'


def node_uuid(host_name):
    return str(uuidlib.uuid5(_NODE_NAMESPACE, host_name))


def compute_model_from_view(view):
    """A Watcher compute model holding the view's hosts and instances."""
    model = model_root.ModelRoot()
    created = datetime.datetime.fromtimestamp(view.now or 0,
                                              datetime.timezone.utc)
    nodes = {}
    for index, host in enumerate(view.hosts):
        node = nodes[host.name] = element.ComputeNode(
            id=index,
            uuid=node_uuid(host.name),
            hostname=host.name,
            memory=int(host.memory_mib_total),
            memory_mb_reserved=0,
            memory_ratio=float(host.ram_allocation_ratio),
            disk=int(host.disk_gb_total),
            disk_gb_reserved=0,
            disk_ratio=float(host.disk_allocation_ratio),
            vcpus=int(host.vcpus_total),
            vcpu_reserved=0,
            vcpu_ratio=float(host.cpu_allocation_ratio),
            state='up' if host.enabled else 'down',
            status='enabled' if host.enabled else 'disabled',
            disabled_reason=None if host.enabled else host.skip_reason)
        model.add_node(node)
    for inst in view.instances:
        instance = element.Instance(
            uuid=inst.uuid,
            name=inst.uuid,
            state='active' if inst.movable else 'paused',
            memory=int(inst.memory_mib),
            disk=int(inst.disk_gb),
            vcpus=int(inst.vcpus),
            project_id=_PROJECT,
            host=inst.host,
            hypervisor_hostname=inst.host,
            locked=not inst.movable,
            metadata={},
            created=created,
            flavor_extra_specs=({'hw:numa_nodes': '1'}
                                if inst.has_numa_topology else {}))
        model.add_instance(instance)
        # (a dict, not model.get_node_by_name, which scans every node)
        model.map_instance(instance, nodes[inst.host])
    return model


class SimulatedDatasource(ds_base.DataSourceBase):
    """Watcher datasource answering from a ClusterView.

    Units follow Watcher's datasource contract: CPU in percent, host RAM in
    KiB, instance RAM in MB, L3 cache usage in bytes. Metrics the view does
    not carry raise ``MetricNotAvailable``, as a real datasource would.
    """

    NAME = 'simulated'
    METRIC_MAP = dict(
        host_cpu_usage='host_cpu_usage',
        host_ram_usage='host_ram_usage',
        host_outlet_temp=None,
        host_inlet_temp=None,
        host_airflow=None,
        host_power=None,
        instance_cpu_usage='instance_cpu_usage',
        instance_ram_usage='instance_ram_usage',
        instance_ram_allocated='instance_ram_allocated',
        instance_l3_cache_usage='instance_l3_cache_usage',
        instance_root_disk_size='instance_root_disk_size',
    )

    def __init__(self, view):
        super().__init__()
        self._instances = {i.uuid: i for i in view.instances}
        self._hosts = {}
        for host in view.hosts:
            self._hosts[node_uuid(host.name)] = host
        self._by_host = {}
        for inst in view.instances:
            self._by_host.setdefault(inst.host, []).append(inst)
        #: Every query, for tests and for reports on what a peer asked.
        self.queries = []

    def list_metrics(self):
        return {k for k, v in self.METRIC_MAP.items() if v}

    def check_availability(self):
        return 'available'

    def statistic_series(self, resource=None, resource_type=None,
                         meter_name=None, start_time=None, end_time=None,
                         granularity=300):
        value = self._statistic_aggregation(resource, resource_type,
                                            meter_name)
        return {end_time or 0: value}

    def _statistic_aggregation(self, resource=None, resource_type=None,
                               meter_name=None, period=300,
                               aggregate='mean', granularity=300):
        self._get_meter(meter_name)
        self.queries.append((resource_type, meter_name))
        if resource_type == 'compute_node':
            return self._host_metric(resource, meter_name)
        return self._instance_metric(resource, meter_name)

    def _host_metric(self, resource, meter_name):
        host = self._hosts[resource.uuid]
        instances = self._by_host.get(host.name, ())
        if meter_name == 'host_cpu_usage':
            used = sum(i.vcpus * (i.cpu_util or 0.0) for i in instances)
            return 100.0 * min(1.0, used / max(host.vcpus_total, 1))
        if meter_name == 'host_ram_usage':
            return 1024.0 * sum(i.memory_mib for i in instances)
        raise ValueError('host metric %s is not simulated' % meter_name)

    def _instance_metric(self, resource, meter_name):
        inst = self._instances[resource.uuid]
        if meter_name == 'instance_cpu_usage':
            return 100.0 * min(1.0, inst.cpu_util or 0.0)
        if meter_name in ('instance_ram_usage', 'instance_ram_allocated'):
            return float(inst.memory_mib)
        if meter_name == 'instance_root_disk_size':
            return float(inst.disk_gb)
        if meter_name == 'instance_l3_cache_usage':
            if inst.llc_occupancy_bytes is None:
                raise ValueError('no LLC occupancy for %s' % inst.uuid)
            return inst.llc_occupancy_bytes
        raise ValueError('instance metric %s is not simulated' % meter_name)

    def _get(self, meter, resource, resource_type, period, aggregate,
             granularity):
        return self.statistic_aggregation(resource, resource_type, meter,
                                          period, aggregate, granularity)

    def get_host_cpu_usage(self, resource, period=300, aggregate='mean',
                           granularity=None):
        return self._get('host_cpu_usage', resource, 'compute_node',
                         period, aggregate, granularity)

    def get_host_ram_usage(self, resource, period=300, aggregate='mean',
                           granularity=None):
        return self._get('host_ram_usage', resource, 'compute_node',
                         period, aggregate, granularity)

    def get_instance_cpu_usage(self, resource, period=300, aggregate='mean',
                               granularity=None):
        return self._get('instance_cpu_usage', resource, 'instance',
                         period, aggregate, granularity)

    def get_instance_ram_usage(self, resource, period=300, aggregate='mean',
                               granularity=None):
        return self._get('instance_ram_usage', resource, 'instance',
                         period, aggregate, granularity)

    def get_instance_ram_allocated(self, resource, period=300,
                                   aggregate='mean', granularity=None):
        return self._get('instance_ram_allocated', resource, 'instance',
                         period, aggregate, granularity)

    def get_instance_l3_cache_usage(self, resource, period=300,
                                    aggregate='mean', granularity=None):
        return self._get('instance_l3_cache_usage', resource, 'instance',
                         period, aggregate, granularity)

    def get_instance_root_disk_size(self, resource, period=300,
                                    aggregate='mean', granularity=None):
        return self._get('instance_root_disk_size', resource, 'instance',
                         period, aggregate, granularity)

    def _not_simulated(self, *args, **kwargs):
        return None

    get_host_outlet_temp = _not_simulated
    get_host_inlet_temp = _not_simulated
    get_host_airflow = _not_simulated
    get_host_power = _not_simulated


def default_parameters(strategy_cls):
    """The defaults of a strategy's JSON-schema parameters."""
    properties = strategy_cls.get_schema().get('properties', {})
    return {name: spec['default'] for name, spec in properties.items()
            if 'default' in spec}


def run_strategy(strategy_cls, view, parameters=None, model=None,
                 datasource=None):
    """Execute a Watcher strategy on the view; return its solution.

    ``model`` and ``datasource`` default to the ones built from the view;
    pass them to reuse one across runs (building Watcher's model is the
    expensive part at scale).
    """
    strategy = strategy_cls(config=utils.Struct())
    strategy._compute_model = (model if model is not None
                               else compute_model_from_view(view))
    strategy._datasource_backend = (datasource if datasource is not None
                                    else SimulatedDatasource(view))
    params = default_parameters(strategy_cls)
    params.update(parameters or {})
    strategy.input_parameters = utils.Struct(params)
    return strategy.execute()


def plan_from_solution(solution, view):
    """The simulator plan for a Watcher solution's migrations.

    Migrations whose source or destination is not one of the view's host
    names, and actions the simulator cannot apply, become ``Skipped``
    entries naming the problem.
    """
    hosts = {host.name for host in view.hosts}
    actions = []
    skipped = []
    for action in solution.actions:
        kind = action['action_type']
        params = action.get('input_parameters') or {}
        subject = action.get('resource_id') or params.get('resource_id', '?')
        if kind != 'migrate':
            skipped.append(cluster.Skipped(
                subject, 'action type %s is not simulated' % kind))
            continue
        source = params.get('source_node')
        dest = params.get('destination_node')
        bad = [name for name in (source, dest) if name not in hosts]
        if bad:
            skipped.append(cluster.Skipped(
                subject, 'migration names %s, which is not a compute host '
                'name; Nova would refuse it' % ', '.join(map(str, bad))))
            continue
        actions.append(cluster.Migrate(instance=subject, source_host=source,
                                       dest_host=dest))
    return cluster.Plan(actions=tuple(actions), skipped=tuple(skipped))
