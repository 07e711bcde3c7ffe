"""Scenario files: YAML, validated against a JSON schema, then built.

A scenario says which hosts exist (``hardware`` classes and ``hosts``),
which applications run (``profiles``, optionally from a shared
``profile_library`` under ``scenarios/profiles/``), which instances start
and where (``instances`` and ``placement``: ``worst``, ``random``,
``nova_spread``, ``nova_pack`` or ``explicit``), which arrive later
(``arrivals``), how long it runs (``epochs`` of ``epoch_s`` seconds, a
policy audit every ``audit_every`` epochs), the ``seed``, optional
counter ``noise`` and ``migration`` cost parameters. ``doc/simulator.md``
documents every field; :data:`SCHEMA` is the authority.

Errors name the file and the field: ``ahn-wl1.yaml: profiles.milc.
llc_apki: -1 is less than the minimum of 0``.
"""

import dataclasses
import os

import jsonschema
import yaml

from contention.sim import hardware
from contention.sim import migration as migration_mod
from contention.sim import profiles

SCENARIO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            'scenarios')
PROFILE_DIR = os.path.join(SCENARIO_DIR, 'profiles')
PLACEMENTS = ('worst', 'random', 'nova_spread', 'nova_pack', 'explicit')

_NUM = {'type': 'number'}
_POS = {'type': 'number', 'exclusiveMinimum': 0}
_NN = {'type': 'number', 'minimum': 0}
_FRAC = {'type': 'number', 'minimum': 0, 'maximum': 1}
_INT1 = {'type': 'integer', 'minimum': 1}
_NAME = {'type': 'string', 'pattern': '^[A-Za-z0-9_.-]+$'}

PERF_SCHEMA = {
    'type': 'object', 'additionalProperties': False,
    'properties': {
        'freq_ghz': _POS, 'mc_bandwidth_gbs': _POS,
        'link_bandwidth_gbs': _POS, 'local_latency_ns': _POS,
        'mc_queue_ns': _NN, 'link_queue_ns': _NN, 'smt_gain': _FRAC,
        'l3_mib_per_node': _POS,
    },
}

HARDWARE_SCHEMA = {
    'type': 'object', 'additionalProperties': False,
    'properties': {
        'sockets': _INT1, 'nodes_per_socket': _INT1,
        'cores_per_node': _INT1, 'threads_per_core': _INT1,
        'l3_mib_per_node': _POS, 'l3_domains_per_node': _INT1,
        'memory_gib_per_node': _POS,
        'same_socket_distance': {'type': 'integer', 'minimum': 10},
        'remote_distance': {'type': 'integer', 'minimum': 10},
        'cpu_vendor': {'enum': ['intel', 'amd', 'unknown']},
        'cpu_model': {'type': 'string'},
        'reserved_nodes': {'type': 'array',
                           'items': {'type': 'integer', 'minimum': 0}},
        'cpu_allocation_ratio': _POS, 'ram_allocation_ratio': _POS,
        'perf': PERF_SCHEMA,
    },
}

DEMAND_SCHEMA = {
    'oneOf': [
        {'type': 'number', 'minimum': 0, 'maximum': 1},
        {'type': 'object', 'additionalProperties': False,
         'required': ['phases'],
         'properties': {'phases': {
             'type': 'array', 'minItems': 1,
             'items': {'type': 'array', 'minItems': 2, 'maxItems': 2,
                       'items': [_POS, _FRAC]}}}},
    ],
}

PROFILE_SCHEMA = {
    'type': 'object', 'additionalProperties': False,
    'properties': {
        'base_cpi': _POS, 'llc_apki': _NN, 'mr_min': _FRAC, 'mr_max': _FRAC,
        'working_set_mib': _POS, 'mlp': {'type': 'number', 'minimum': 1},
        'writeback_ratio': _NN, 'vcpus': _INT1,
        'memory_mib': _INT1, 'footprint_mib': _POS, 'dirty_mib_s': _NN,
        'cpu_demand': DEMAND_SCHEMA,
        'metric': {'enum': list(profiles.METRICS)},
        'response_cpu_share': _FRAC,
        'kind': {'type': 'string'}, 'desync_phases': {'type': 'boolean'},
        'description': {'type': 'string'},
    },
}

PROFILES_SCHEMA = {'type': 'object',
                   'propertyNames': _NAME,
                   'additionalProperties': PROFILE_SCHEMA}

INSTANCE_SCHEMA = {
    'type': 'object', 'additionalProperties': False, 'required': ['profile'],
    'properties': {
        'profile': {'type': 'string'}, 'count': _INT1, 'name': _NAME,
        'host': {'type': 'string'},
        'socket': {'type': 'integer', 'minimum': 0},
        'memory_socket': {'type': 'integer', 'minimum': 0},
        'quota': {'type': 'number', 'exclusiveMinimum': 0, 'maximum': 1},
        'movable': {'type': 'boolean'},
    },
}

SCHEMA = {
    '$schema': 'http://json-schema.org/draft-07/schema#',
    'title': 'contention-sim scenario',
    'type': 'object', 'additionalProperties': False,
    'required': ['name', 'hardware', 'hosts', 'instances'],
    'properties': {
        'name': _NAME,
        'description': {'type': 'string'},
        'synthetic': {'type': 'boolean'},
        'seed': {'type': 'integer', 'minimum': 0},
        'epochs': _INT1,
        'epoch_s': _POS,
        'audit_every': _INT1,
        'noise': _NN,
        'placement': {'enum': list(PLACEMENTS)},
        'profile_library': _NAME,
        'hardware': {'type': 'object', 'minProperties': 1,
                     'propertyNames': _NAME,
                     'additionalProperties': HARDWARE_SCHEMA},
        'hosts': {'type': 'array', 'minItems': 1, 'items': {
            'type': 'object', 'additionalProperties': False,
            'required': ['class'],
            'properties': {'class': {'type': 'string'}, 'count': _INT1,
                           'prefix': _NAME, 'names': {
                               'type': 'array', 'items': _NAME}}}},
        'profiles': PROFILES_SCHEMA,
        'instances': {'type': 'array', 'items': INSTANCE_SCHEMA},
        'arrivals': {'type': 'array', 'items': {
            'type': 'object', 'additionalProperties': False,
            'required': ['epoch', 'profile'],
            'properties': {'epoch': {'type': 'integer', 'minimum': 0},
                           'profile': {'type': 'string'}, 'count': _INT1,
                           'quota': INSTANCE_SCHEMA['properties']['quota']}}},
        'migration': {
            'type': 'object', 'additionalProperties': False,
            'properties': {'network_gbs': _POS, 'stop_mib': _POS,
                           'max_rounds': _INT1, 'slowdown': _FRAC,
                           'cpu_cores': _NN, 'intra_host_gbs': _POS,
                           'memory_move_slowdown': _FRAC}},
    },
}


class ScenarioError(ValueError):
    """A scenario file is invalid; the message names the file and field."""

    def __init__(self, source, field, problem):
        super().__init__('%s: %s: %s' % (source, field or '(top level)',
                                         problem))
        self.source = source
        self.field = field
        self.problem = problem


@dataclasses.dataclass(frozen=True)
class InstanceSpec:
    profile: str
    name: str
    host: str = None
    socket: int = None
    memory_socket: int = None
    quota: float = 1.0
    movable: bool = True


@dataclasses.dataclass(frozen=True)
class Arrival:
    epoch: int
    profile: str
    count: int = 1
    quota: float = 1.0


@dataclasses.dataclass(frozen=True)
class Scenario:
    """A validated scenario, ready for :class:`contention.sim.Simulator`."""

    name: str
    source: str
    description: str
    hardware: dict
    #: (host name, hardware class name) in order.
    hosts: tuple
    profiles: dict
    instances: tuple
    placement: str = 'nova_spread'
    arrivals: tuple = ()
    seed: int = 0
    epochs: int = 10
    epoch_s: float = 60.0
    audit_every: int = 1
    noise: float = 0.0
    migration: migration_mod.MigrationParams = migration_mod.MigrationParams()


def available():
    """Names of the shipped scenarios."""
    return tuple(sorted(f[:-5] for f in os.listdir(SCENARIO_DIR)
                        if f.endswith('.yaml')))


def resolve(name_or_path):
    """The file of a shipped scenario name, or the path itself."""
    if os.path.exists(name_or_path):
        return name_or_path
    path = os.path.join(SCENARIO_DIR, name_or_path + '.yaml')
    if os.path.exists(path):
        return path
    raise ScenarioError(name_or_path, None, 'no such file, and not a '
                        'shipped scenario (shipped: %s)'
                        % ', '.join(available()))


def load(name_or_path):
    """Load, validate and build a scenario by shipped name or file path."""
    path = resolve(name_or_path)
    source = os.path.basename(path)
    try:
        with open(path, encoding='utf-8') as fh:
            data = yaml.safe_load(fh)
    except yaml.YAMLError as exc:
        raise ScenarioError(source, None, 'not valid YAML: %s' % exc)
    return from_dict(data, source)


def _field(error):
    path = '.'.join(str(p) for p in error.absolute_path)
    return path or None


def validate(data, source, schema=SCHEMA):
    """Raise :class:`ScenarioError` for the first schema violation."""
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(data),
                    key=lambda e: (list(map(str, e.absolute_path)),
                                   e.message))
    if errors:
        error = jsonschema.exceptions.best_match(errors)
        raise ScenarioError(source, _field(error), error.message)


def _profile(name, spec):
    spec = dict(spec)
    spec.pop('description', None)
    demand = spec.get('cpu_demand', 1.0)
    if isinstance(demand, dict):
        spec['cpu_demand'] = profiles.Phases(tuple(
            (float(d), float(v)) for d, v in demand['phases']))
    return profiles.WorkloadProfile(name=name, **spec)


def _library(name, source):
    path = os.path.join(PROFILE_DIR, name + '.yaml')
    if not os.path.exists(path):
        raise ScenarioError(source, 'profile_library',
                            'no profile library %r in %s' % (name,
                                                             PROFILE_DIR))
    with open(path, encoding='utf-8') as fh:
        data = yaml.safe_load(fh) or {}
    lib_source = 'profiles/%s.yaml' % name
    if not isinstance(data, dict) or 'profiles' not in data:
        raise ScenarioError(lib_source, 'profiles', 'missing')
    validate(data['profiles'], lib_source + ': profiles', PROFILES_SCHEMA)
    return data['profiles']


def from_dict(data, source='<scenario>'):
    """Validate a decoded scenario and build a :class:`Scenario`."""
    if not isinstance(data, dict):
        raise ScenarioError(source, None, 'expected a mapping at the top')
    validate(data, source)
    hw = {}
    for name, spec in data['hardware'].items():
        spec = dict(spec)
        perf = hardware.PerfParams(**spec.pop('perf', {}))
        if 'l3_mib_per_node' in spec:
            perf = dataclasses.replace(perf,
                                       l3_mib_per_node=spec['l3_mib_per_node'])
        spec['reserved_nodes'] = tuple(spec.get('reserved_nodes', ()))
        hw[name] = hardware.HardwareClass(name=name, perf=perf, **spec)
        bad = [n for n in hw[name].reserved_nodes if n >= hw[name].nodes]
        if bad:
            raise ScenarioError(source, 'hardware.%s.reserved_nodes' % name,
                                'node %d does not exist (%d nodes)'
                                % (bad[0], hw[name].nodes))
    hosts = []
    for i, entry in enumerate(data['hosts']):
        cls = entry['class']
        if cls not in hw:
            raise ScenarioError(source, 'hosts.%d.class' % i,
                                'unknown hardware class %r (known: %s)'
                                % (cls, ', '.join(sorted(hw))))
        names = entry.get('names')
        if names is None:
            prefix = entry.get('prefix', cls)
            names = ['%s-%d' % (prefix, j)
                     for j in range(entry.get('count', 1))]
        hosts.extend((n, cls) for n in names)
    seen = set()
    for i, (n, _) in enumerate(hosts):
        if n in seen:
            raise ScenarioError(source, 'hosts', 'host name %r is used '
                                'twice' % n)
        seen.add(n)
    raw_profiles = {}
    if 'profile_library' in data:
        raw_profiles.update(_library(data['profile_library'], source))
    raw_profiles.update(data.get('profiles') or {})
    profs = {n: _profile(n, s) for n, s in raw_profiles.items()}
    placement = data.get('placement', 'nova_spread')
    instances = []
    host_names = {h for h, _ in hosts}
    for i, entry in enumerate(data['instances']):
        path = 'instances.%d' % i
        if entry['profile'] not in profs:
            raise ScenarioError(source, path + '.profile',
                                'unknown profile %r' % entry['profile'])
        if placement == 'explicit' and ('host' not in entry
                                        or 'socket' not in entry):
            raise ScenarioError(source, path, 'placement is explicit: '
                                'host and socket are required')
        if 'host' in entry and entry['host'] not in host_names:
            raise ScenarioError(source, path + '.host',
                                'unknown host %r' % entry['host'])
        count = entry.get('count', 1)
        base = entry.get('name', entry['profile'])
        for j in range(count):
            instances.append(InstanceSpec(
                profile=entry['profile'],
                name=base if count == 1 else '%s-%d' % (base, j + 1),
                host=entry.get('host'), socket=entry.get('socket'),
                memory_socket=entry.get('memory_socket'),
                quota=entry.get('quota', 1.0),
                movable=entry.get('movable', True)))
    names = [inst.name for inst in instances]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        # Same profile listed twice: number them cluster-wide instead.
        counters = {}
        renamed = []
        for inst in instances:
            k = counters.get(inst.profile, 0) + 1
            counters[inst.profile] = k
            renamed.append(dataclasses.replace(
                inst, name='%s-%d' % (inst.profile, k)))
        instances = renamed
    arrivals = []
    for i, entry in enumerate(data.get('arrivals') or ()):
        if entry['profile'] not in profs:
            raise ScenarioError(source, 'arrivals.%d.profile' % i,
                                'unknown profile %r' % entry['profile'])
        arrivals.append(Arrival(epoch=entry['epoch'],
                                profile=entry['profile'],
                                count=entry.get('count', 1),
                                quota=entry.get('quota', 1.0)))
    return Scenario(
        name=data['name'], source=source,
        description=data.get('description', ''), hardware=hw,
        hosts=tuple(hosts), profiles=profs, instances=tuple(instances),
        placement=placement, arrivals=tuple(arrivals),
        seed=data.get('seed', 0), epochs=data.get('epochs', 10),
        epoch_s=float(data.get('epoch_s', 60.0)),
        audit_every=data.get('audit_every', 1),
        noise=float(data.get('noise', 0.0)),
        migration=migration_mod.MigrationParams(**(data.get('migration') or {})))
