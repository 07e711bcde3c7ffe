"""Scenario files: YAML, validated against a JSON schema, then built.

A scenario says which hosts exist (``hardware`` classes, optionally
starting from a shipped host class with ``base:``, and ``hosts``), which
applications run (``profiles``, optionally from shared libraries under
``scenarios/profiles/``: ``profile_libraries``), which instances start
and where (``instances`` and ``placement``: ``worst``, ``random``,
``nova_spread``, ``nova_pack`` or ``explicit``), which arrive later
(``arrivals``), how long it runs (``epochs`` of ``epoch_s`` seconds, a
policy audit every ``audit_every`` epochs), the ``seed``, optional
counter ``noise`` and ``migration`` cost parameters. ``doc/simulator.md``
documents every field; :data:`SCHEMA` is the authority.

Errors name the file and the field: ``ahn-wl1.yaml: profiles.milc.
llc_apki: -1 is less than the minimum of 0``.

**Versions.** ``format: 2`` is today's format. A file without ``format``
is format 1, the format before hardware classes had distance matrices,
shipped bases and flavors: :func:`migrate` rewrites it to format 2 with
the same meaning (``profile_library: X`` becomes ``profile_libraries:
[X]``; every other format-1 field means in format 2 what it meant), so
operators' what-if files keep loading. :func:`dump` writes any
:class:`Scenario` as a self-contained format-2 file (hardware classes
expanded, profiles inline, every instance named and placed as the
scenario says) that :func:`loads` reads back into an equal scenario.
"""

import copy
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
HARDWARE_DIR = os.path.join(SCENARIO_DIR, 'hardware')
PLACEMENTS = ('worst', 'random', 'nova_spread', 'nova_pack', 'explicit')
#: The format this module writes; files without ``format`` are format 1.
FORMAT = 2
FORMATS = (1, 2)

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

_MATRIX = {'type': 'array', 'minItems': 1,
           'items': {'type': 'array', 'minItems': 1, 'items': _NN}}

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
        'base': _NAME,
        'distances': {'type': 'array', 'minItems': 1, 'items': {
            'type': 'array', 'minItems': 1,
            'items': {'type': 'integer', 'minimum': 10}}},
        'mc_bandwidth_gbs_per_node': {'type': 'array', 'minItems': 1,
                                      'items': _POS},
        'link_bandwidth_gbs_per_pair': _MATRIX,
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
        'working_set_mib': _POS, 'shared_fraction': _FRAC,
        'mlp': {'type': 'number', 'minimum': 1},
        'writeback_ratio': _NN, 'vcpus': _INT1,
        'memory_mib': _INT1, 'footprint_mib': _POS, 'dirty_mib_s': _NN,
        'cpu_demand': DEMAND_SCHEMA,
        'metric': {'enum': list(profiles.METRICS)},
        'response_cpu_share': _FRAC,
        'kind': {'type': 'string'}, 'desync_phases': {'type': 'boolean'},
        'description': {'type': 'string'},
        'numa_nodes': _INT1,
        'cpu_policy': {'enum': list(profiles.CPU_POLICIES)},
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
        'nodes': {'type': 'array', 'minItems': 1, 'uniqueItems': True,
                  'items': {'type': 'integer', 'minimum': 0}},
        'memory_nodes': {'type': 'array', 'minItems': 1,
                         'uniqueItems': True,
                         'items': {'type': 'integer', 'minimum': 0}},
    },
}

SCHEMA = {
    '$schema': 'http://json-schema.org/draft-07/schema#',
    'title': 'contention-sim scenario',
    'type': 'object', 'additionalProperties': False,
    'required': ['name', 'hardware', 'hosts', 'instances'],
    'properties': {
        'format': {'enum': list(FORMATS)},
        'name': _NAME,
        'description': {'type': 'string'},
        'synthetic': {'type': 'boolean'},
        'seed': {'type': 'integer', 'minimum': 0},
        'epochs': _INT1,
        'epoch_s': _POS,
        'audit_every': _INT1,
        'noise': _NN,
        'placement': {'enum': list(PLACEMENTS)},
        'profile_libraries': {'type': 'array', 'items': _NAME},
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
                           'memory_move_slowdown': _FRAC,
                           'vcpu_move_us': _NN}},
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
    #: Explicit NUMA nodes (host-local ids) for the vCPUs and memory,
    #: overriding ``socket``/``memory_socket``; None = chosen by placement.
    nodes: tuple = None
    memory_nodes: tuple = None


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
    synthetic: bool = False


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
    with open(path, encoding='utf-8') as fh:
        return loads(fh.read(), source)


def loads(text, source='<string>'):
    """Build a scenario from YAML text (any supported format)."""
    try:
        data = yaml.safe_load(text)
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


def migrate(data, source='<scenario>'):
    """A format-1 scenario mapping rewritten to format 2 (module doc).

    Returns a new mapping; a format-2 mapping is returned unchanged.
    """
    version = data.get('format', 1)
    if version not in FORMATS:
        raise ScenarioError(source, 'format', 'unknown format %r (known: %s)'
                            % (version, ', '.join(map(str, FORMATS))))
    if version == FORMAT:
        return data
    out = copy.deepcopy(data)
    out['format'] = FORMAT
    if 'profile_library' in out:
        out['profile_libraries'] = [out.pop('profile_library')]
    return out


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
        raise ScenarioError(source, 'profile_libraries',
                            'no profile library %r in %s' % (name,
                                                             PROFILE_DIR))
    with open(path, encoding='utf-8') as fh:
        data = yaml.safe_load(fh) or {}
    lib_source = 'profiles/%s.yaml' % name
    if not isinstance(data, dict) or 'profiles' not in data:
        raise ScenarioError(lib_source, 'profiles', 'missing')
    validate(data['profiles'], lib_source + ': profiles', PROFILES_SCHEMA)
    return data['profiles']


def host_classes():
    """The shipped host classes: {name: hardware entry mapping}."""
    out = {}
    for fname in sorted(os.listdir(HARDWARE_DIR)):
        if not fname.endswith('.yaml'):
            continue
        with open(os.path.join(HARDWARE_DIR, fname), encoding='utf-8') as fh:
            data = yaml.safe_load(fh) or {}
        lib = 'hardware/%s' % fname
        classes = data.get('host_classes') if isinstance(data, dict) else None
        if not isinstance(classes, dict):
            raise ScenarioError(lib, 'host_classes', 'missing')
        for name, spec in classes.items():
            validate(spec, '%s: %s' % (lib, name), HARDWARE_SCHEMA)
            out[name] = spec
    return out


def _merge_base(name, spec, source):
    """A hardware entry with its ``base`` class's fields under it."""
    if 'base' not in spec:
        return spec
    known = host_classes()
    base = spec['base']
    if base not in known:
        raise ScenarioError(source, 'hardware.%s.base' % name,
                            'unknown host class %r (shipped: %s)'
                            % (base, ', '.join(sorted(known))))
    merged = copy.deepcopy(known[base])
    for key, value in spec.items():
        if key == 'base':
            continue
        if key == 'perf':
            merged.setdefault('perf', {}).update(value)
        else:
            merged[key] = value
    return merged


def hardware_class(name, spec, source='<scenario>'):
    """A :class:`~contention.sim.hardware.HardwareClass` from its entry."""
    spec = dict(_merge_base(name, spec, source))
    perf = hardware.PerfParams(**spec.pop('perf', {}))
    if 'l3_mib_per_node' in spec:
        perf = dataclasses.replace(perf,
                                   l3_mib_per_node=spec['l3_mib_per_node'])
    spec['reserved_nodes'] = tuple(spec.get('reserved_nodes', ()))
    for key in ('distances', 'link_bandwidth_gbs_per_pair'):
        if spec.get(key) is not None:
            spec[key] = tuple(tuple(row) for row in spec[key])
    if spec.get('mc_bandwidth_gbs_per_node') is not None:
        spec['mc_bandwidth_gbs_per_node'] = tuple(
            spec['mc_bandwidth_gbs_per_node'])
    hw = hardware.HardwareClass(name=name, perf=perf, **spec)
    for field, problem in hw.problems():
        raise ScenarioError(source, 'hardware.%s.%s' % (name, field),
                            problem)
    return hw


def _nodes_field(entry, key, hw, path, source):
    nodes = entry.get(key)
    if nodes is None:
        return None
    if hw is None:
        raise ScenarioError(source, '%s.%s' % (path, key),
                            'nodes need a host')
    bad = [n for n in nodes if n >= hw.nodes or n in hw.reserved_nodes]
    if bad:
        raise ScenarioError(source, '%s.%s' % (path, key),
                            'node %d is not a usable node of class %s '
                            '(%d nodes, reserved %s)'
                            % (bad[0], hw.name, hw.nodes,
                               list(hw.reserved_nodes)))
    return tuple(nodes)


def from_dict(data, source='<scenario>'):
    """Validate a decoded scenario (any format) and build a Scenario."""
    if not isinstance(data, dict):
        raise ScenarioError(source, None, 'expected a mapping at the top')
    data = migrate(data, source)
    validate(data, source)
    hw = {name: hardware_class(name, spec, source)
          for name, spec in data['hardware'].items()}
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
    for name in data.get('profile_libraries') or ():
        raw_profiles.update(_library(name, source))
    raw_profiles.update(data.get('profiles') or {})
    profs = {n: _profile(n, s) for n, s in raw_profiles.items()}
    placement = data.get('placement', 'nova_spread')
    instances = []
    host_class = dict(hosts)
    for i, entry in enumerate(data['instances']):
        path = 'instances.%d' % i
        if entry['profile'] not in profs:
            raise ScenarioError(source, path + '.profile',
                                'unknown profile %r' % entry['profile'])
        if placement == 'explicit' and 'host' not in entry:
            raise ScenarioError(source, path, 'placement is explicit: '
                                'host and socket (or nodes) are required')
        if (placement == 'explicit' and 'socket' not in entry
                and 'nodes' not in entry):
            raise ScenarioError(source, path, 'placement is explicit: '
                                'host and socket (or nodes) are required')
        if 'host' in entry and entry['host'] not in host_class:
            raise ScenarioError(source, path + '.host',
                                'unknown host %r' % entry['host'])
        cls = hw[host_class[entry['host']]] if 'host' in entry else None
        nodes = _nodes_field(entry, 'nodes', cls, path, source)
        mem_nodes = _nodes_field(entry, 'memory_nodes', cls, path, source)
        count = entry.get('count', 1)
        base = entry.get('name', entry['profile'])
        for j in range(count):
            instances.append(InstanceSpec(
                profile=entry['profile'],
                name=base if count == 1 else '%s-%d' % (base, j + 1),
                host=entry.get('host'), socket=entry.get('socket'),
                memory_socket=entry.get('memory_socket'),
                quota=entry.get('quota', 1.0),
                movable=entry.get('movable', True),
                nodes=nodes, memory_nodes=mem_nodes))
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
        synthetic=bool(data.get('synthetic', False)),
        migration=migration_mod.MigrationParams(**(data.get('migration') or {})))


# -- writing -------------------------------------------------------------

def _plain(value):
    """Tuples to lists, numpy scalars to Python numbers (for YAML)."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if hasattr(value, 'item'):
        return value.item()
    return value


def _hardware_dict(hw):
    out = {}
    for field in dataclasses.fields(hw):
        if field.name in ('name', 'perf'):
            continue
        value = getattr(hw, field.name)
        if value is None or (hw.distances is not None and field.name in (
                'same_socket_distance', 'remote_distance')):
            continue
        out[field.name] = _plain(value)
    out['perf'] = _plain(dataclasses.asdict(hw.perf))
    return out


def _profile_dict(prof):
    out = {}
    defaults = profiles.WorkloadProfile(name=prof.name)
    for field in dataclasses.fields(prof):
        if field.name == 'name':
            continue
        value = getattr(prof, field.name)
        if value is None:
            continue
        if isinstance(value, profiles.Phases):
            value = {'phases': _plain(value.phases)}
        elif field.name not in ('cpu_demand',) and value == getattr(
                defaults, field.name):
            continue
        out[field.name] = _plain(value)
    return out


def _instance_dict(inst):
    out = {'profile': inst.profile, 'name': inst.name}
    for key in ('host', 'socket', 'memory_socket', 'nodes', 'memory_nodes'):
        value = getattr(inst, key)
        if value is not None:
            out[key] = _plain(value)
    if inst.quota != 1.0:
        out['quota'] = float(inst.quota)
    if not inst.movable:
        out['movable'] = False
    return out


def to_dict(scen):
    """A :class:`Scenario` as a self-contained format-2 mapping."""
    hosts = []
    for name, cls in scen.hosts:
        if hosts and hosts[-1]['class'] == cls:
            hosts[-1]['names'].append(name)
        else:
            hosts.append({'class': cls, 'names': [name]})
    out = {'format': FORMAT, 'name': scen.name}
    if scen.description:
        out['description'] = scen.description
    if scen.synthetic:
        out['synthetic'] = True
    out.update({
        'seed': int(scen.seed), 'epochs': int(scen.epochs),
        'epoch_s': float(scen.epoch_s), 'audit_every': int(scen.audit_every),
        'noise': float(scen.noise), 'placement': scen.placement,
        'hardware': {n: _hardware_dict(h) for n, h in scen.hardware.items()},
        'hosts': hosts,
        'profiles': {n: _profile_dict(p) for n, p in scen.profiles.items()},
        'instances': [_instance_dict(i) for i in scen.instances],
    })
    if scen.arrivals:
        out['arrivals'] = [dict(epoch=a.epoch, profile=a.profile,
                                count=a.count, quota=float(a.quota))
                           for a in scen.arrivals]
    out['migration'] = _plain(dataclasses.asdict(scen.migration))
    return out


def dump(scen):
    """A :class:`Scenario` as format-2 YAML text; :func:`loads` reads it."""
    header = ('# contention-sim scenario, format %d, written by '
              'contention.sim.scenario.dump.\n' % FORMAT)
    if scen.synthetic:
        header += ('# Synthetic: figures from this scenario are '
                   'simulated.\n')
    return header + yaml.safe_dump(to_dict(scen), sort_keys=False,
                                   default_flow_style=None, width=79)
