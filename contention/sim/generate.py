"""Seeded generator of clusters nobody tuned for (issue 19 item 1).

The nine named scenarios are 4 hosts with 2 sockets, and the strategies
were developed on them. This module draws clusters of another shape, each
a scenario (the dict a scenario file holds, validated by
:func:`contention.sim.scenario.from_dict`), from a seed:

* **hosts**: 8 to 1,000, of the host classes the simulator ships
  (:func:`shipped_classes`: every :class:`~contention.sim.hardware.
  HardwareClass` defined in :mod:`contention.sim.hardware` and every class
  of the shipped scenarios, so a class added there joins the draw without
  a change here); a cluster is of one class or mixes two or three;
* **occupancy**: the share of physical cores allocated to vCPUs, drawn per
  cluster from half-empty (0.5) to completely full (1.0); memory per vCPU
  is the smallest node's memory per core, so a full socket is full in
  cores and RAM at once, as the tester's full hosts were;
* **flavors**: 1 to 32 vCPUs in powers of two, small ones more common,
  from a sixteenth of the largest socket (:func:`_flavor_floor`) up to
  the smallest socket of the cluster. That cap is the seam for
  NUMA-spanning flavors: :data:`SPANNING` is False until the simulator
  places an instance over several nodes or sockets; then a flavor may
  exceed a socket and :func:`_flavor_cap` is the one place that changes;
* **workloads**: a handful of applications (images) per cluster, each
  drawn by :func:`profile` from one of :data:`KINDS` (streaming,
  cache-sensitive with a small or a very large working set, CPU-bound,
  latency services at low and high load, demand in phases), the kinds in
  skewed proportions (a Dirichlet draw with a small concentration, so
  most clusters are dominated by one or two kinds) and the instances of
  the applications in Zipf proportions, as images are in a cloud; each
  application's ``shared_fraction`` (the part of its working set all its
  threads touch, :mod:`contention.sim.profiles`) by
  :func:`shared_fractions`;
* **initial placement**: ``random`` (each socket filled with random
  instances) or ``worst`` (Ahn et al.'s W-W, section 2.2: the instances
  with the most LLC misses share sockets and every instance's memory is
  on another socket of its host). Both are written as the scenario's
  ``explicit`` placement from the generator's own packing, so every
  generated cluster fits by construction, even completely full.

Every parameter value is synthetic (ranges of the order of the shipped
profiles), and every figure obtained from a generated cluster is
simulated.
"""

import dataclasses
import math

import numpy as np

from contention.sim import hardware
from contention.sim import scenario as scenario_mod

#: The kinds of workload the profile generator spans.
KINDS = ('streaming', 'cache_small', 'cache_large', 'cpu_bound',
         'latency_low', 'latency_high', 'phased')

#: Whether the simulator places an instance over several NUMA nodes or
#: sockets (issue 22 item 2). Until it does, flavors stop at a socket.
SPANNING = False

#: The second word of the seed of :func:`shared_fractions`' stream. The
#: simulator's counter noise (off on generated clusters unless a bench
#: asks for it) draws from the same ``[seed, 1]``; the families' figures
#: in ``doc/`` were measured with this draw, so it stays until a change
#: of the draw gives the stream a word of its own.
_SHARED_STREAM = 1

#: Flavor sizes (vCPUs) the generator draws, and their relative weights
#: (small flavors are the common ones).
FLAVORS = (1, 2, 4, 8, 16, 32)
FLAVOR_WEIGHTS = tuple(1.0 / v ** 0.7 for v in FLAVORS)

#: Cluster sizes of the family bands (hosts, inclusive).
SIZES = {'small': (8, 16), 'medium': (17, 64), 'large': (200, 1000)}

#: Initial placements the generator writes.
PLACEMENTS = ('random', 'worst')

MIN_HOSTS, MAX_HOSTS = 8, 1000


class GenerateError(ValueError):
    """A generation request that cannot be met; says which field."""


@dataclasses.dataclass(frozen=True)
class ClusterSpec:
    """What to generate; :func:`draw_spec` draws one for a family."""

    hosts: int = 8
    #: Host class names (of :func:`shipped_classes`); several = mixed.
    classes: tuple = ('xeon-2s4c',)
    occupancy: float = 0.75
    placement: str = 'random'
    #: Applications (distinct images) in the cluster.
    apps: int = 5
    max_vcpus: int = 32
    epochs: int = 8
    epoch_s: float = 60.0
    audit_every: int = 1

    def check(self, known):
        """Raise :class:`GenerateError` naming the first bad field."""
        if not MIN_HOSTS <= self.hosts <= MAX_HOSTS:
            raise GenerateError('hosts: %d is outside %d-%d'
                                % (self.hosts, MIN_HOSTS, MAX_HOSTS))
        if not 0.5 <= self.occupancy <= 1.0:
            raise GenerateError('occupancy: %g is outside 0.5-1.0'
                                % self.occupancy)
        if self.placement not in PLACEMENTS:
            raise GenerateError('placement: %r is not one of %s'
                                % (self.placement, ', '.join(PLACEMENTS)))
        unknown = [c for c in self.classes if c not in known]
        if not self.classes or unknown:
            raise GenerateError('classes: %s unknown (shipped: %s)' % (
                ', '.join(unknown) or '(none given)', ', '.join(known)))
        if self.apps < 1 or self.max_vcpus < 1:
            raise GenerateError('apps and max_vcpus must be at least 1')


def _classes_in(value):
    if isinstance(value, hardware.HardwareClass):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _classes_in(v)
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _classes_in(v)


_SHIPPED = {}


def shipped_classes():
    """{name: HardwareClass} the simulator ships, in a stable order.

    The shipped host classes (``scenarios/hardware/*.yaml``, read by
    :func:`contention.sim.scenario.host_classes`), the classes defined in
    :mod:`contention.sim.hardware` (module-level instances, or mappings
    and sequences of them), then those of the shipped scenarios; the first
    definition of a name wins.
    """
    if _SHIPPED:
        return dict(_SHIPPED)
    found = {}
    for name, spec in scenario_mod.host_classes().items():
        found.setdefault(name, scenario_mod.hardware_class(name, spec))
    for name in sorted(vars(hardware)):
        if not name.startswith('_'):
            for hw in _classes_in(getattr(hardware, name)):
                found.setdefault(hw.name, hw)
    for name in scenario_mod.available():
        for hw in scenario_mod.load(name).hardware.values():
            found.setdefault(hw.name, hw)
    _SHIPPED.update(found)
    return dict(found)


def _plain(value):
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    return value


def hardware_entry(hw):
    """A HardwareClass as a scenario file's ``hardware:`` entry."""
    entry = dataclasses.asdict(hw)
    entry.pop('name')
    return _plain(entry)


def _usable_sockets(hw):
    return [s for s in range(hw.sockets)
            if any(s * hw.nodes_per_socket + k not in hw.reserved_nodes
                   for k in range(hw.nodes_per_socket))]


def _socket_cores(hw):
    """Physical cores of one socket that instances may use."""
    return min(hw.cores_per_node * sum(
        1 for k in range(hw.nodes_per_socket)
        if s * hw.nodes_per_socket + k not in hw.reserved_nodes)
        for s in _usable_sockets(hw))


def _flavor_cap(classes, max_vcpus):
    """The largest flavor the cluster takes (see :data:`SPANNING`)."""
    if SPANNING:
        return max_vcpus
    return min([max_vcpus] + [_socket_cores(hw) for hw in classes])


def _flavor_floor(classes, cap):
    """The smallest flavor: a sixteenth of the largest socket, at most cap.

    Big hosts run bigger flavors (a 64-core socket full of 1-vCPU VMs is
    not a cloud anyone runs, and would cost the simulator for nothing); a
    power of two, so sockets of the shipped classes fill exactly.
    """
    largest = max(_socket_cores(hw) for hw in classes)
    floor = 1
    while floor * 2 <= min(cap, largest / 16.0):
        floor *= 2
    return floor


def _mib_per_vcpu(classes):
    """Memory per vCPU: the smallest node's memory per core, 256 MiB units.

    So a socket full of vCPUs holds as much memory as its node has.
    """
    per_core = min(hw.memory_gib_per_node * 1024.0 / hw.cores_per_node
                   for hw in classes)
    return max(256, int(per_core // 256) * 256)


def _r(rng, low, high, digits=3):
    return round(float(rng.uniform(low, high)), digits)


def profile(kind, rng, vcpus=1, memory_mib=1024):
    """A scenario file's profile entry of ``kind`` (synthetic ranges).

    The ranges are of the order of the shipped profiles
    (``profiles/ahn-spec2006.yaml``, ``profiles/merlin.yaml``) and
    stretch beyond them (a working set several times the LLC, CPU-bound
    codes with almost no LLC traffic), so clusters fall outside what the
    strategies were developed on.
    """
    p = {'kind': kind, 'vcpus': int(vcpus), 'memory_mib': int(memory_mib)}
    if kind == 'streaming':
        p.update(base_cpi=_r(rng, 0.6, 0.9), llc_apki=_r(rng, 20, 40),
                 mr_min=_r(rng, 0.6, 0.9), working_set_mib=_r(rng, 2, 16),
                 mlp=_r(rng, 2.5, 5), dirty_mib_s=_r(rng, 40, 80, 1))
    elif kind == 'cache_small':
        p.update(base_cpi=_r(rng, 0.8, 1.1), llc_apki=_r(rng, 8, 20),
                 mr_min=_r(rng, 0.03, 0.2), working_set_mib=_r(rng, 1, 6),
                 mlp=_r(rng, 1.2, 2))
    elif kind == 'cache_large':
        p.update(base_cpi=_r(rng, 0.8, 1.1), llc_apki=_r(rng, 12, 30),
                 mr_min=_r(rng, 0.1, 0.35), working_set_mib=_r(rng, 16, 64),
                 mlp=_r(rng, 1.5, 3))
    elif kind == 'cpu_bound':
        p.update(base_cpi=_r(rng, 0.5, 0.9), llc_apki=_r(rng, 0.3, 3),
                 mr_min=_r(rng, 0.01, 0.05), working_set_mib=_r(rng, 0.25, 1))
    elif kind in ('latency_low', 'latency_high'):
        low = kind == 'latency_low'
        p.update(metric='latency',
                 cpu_demand=_r(rng, 0.15, 0.35) if low
                 else _r(rng, 0.6, 0.9),
                 base_cpi=_r(rng, 1.0, 1.3), llc_apki=_r(rng, 6, 18),
                 mr_min=_r(rng, 0.1, 0.3), working_set_mib=_r(rng, 4, 12),
                 mlp=_r(rng, 1.2, 2))
    elif kind == 'phased':
        phases = [[float(rng.choice((60, 120, 300))), _r(rng, 0.3, 1.0, 2)]
                  for _ in range(int(rng.integers(2, 5)))]
        p.update(cpu_demand={'phases': phases},
                 base_cpi=_r(rng, 0.8, 1.0), llc_apki=_r(rng, 5, 25),
                 mr_min=_r(rng, 0.2, 0.6), working_set_mib=_r(rng, 4, 16),
                 mlp=_r(rng, 2, 6), dirty_mib_s=_r(rng, 30, 60, 1))
    else:
        raise GenerateError('kind: %r is not one of %s'
                            % (kind, ', '.join(KINDS)))
    return p


def heaviness(p):
    """LLC misses per instruction alone with a large cache (the W-W order).

    ``llc_apki x mr_min`` per vCPU, times the vCPUs and the demand: the
    order Ahn et al.'s worst case sorts by, without running the solver.
    """
    demand = p.get('cpu_demand', 1.0)
    if isinstance(demand, dict):
        demand = sum(d * v for d, v in demand['phases']) / sum(
            d for d, _ in demand['phases'])
    mid = p['mr_min'] + 0.5 * (0.95 - p['mr_min']) * math.exp(-1.0)
    return p['llc_apki'] * mid * p['vcpus'] * demand / p['base_cpi']


def _apps(spec, rng, classes):
    """{name: profile entry} and the apps' Zipf popularity."""
    weights = rng.dirichlet([0.5] * len(KINDS))
    cap = _flavor_cap(classes, spec.max_vcpus)
    floor = _flavor_floor(classes, cap)
    sizes = [v for v in FLAVORS if floor <= v <= cap] or [floor]
    fw = np.array([FLAVOR_WEIGHTS[FLAVORS.index(v)] for v in sizes])
    mib = _mib_per_vcpu(classes)
    apps = {}
    for k in range(spec.apps):
        kind = KINDS[int(rng.choice(len(KINDS), p=weights))]
        vcpus = int(rng.choice(sizes, p=fw / fw.sum()))
        name = 'app%d-%s-%dv' % (k, kind.replace('_', '-'), vcpus)
        apps[name] = profile(kind, rng, vcpus, vcpus * mib)
    if not any(p['vcpus'] == sizes[0] for p in apps.values()):
        # One application of the smallest flavor, so sockets fill exactly.
        kind = KINDS[int(rng.choice(len(KINDS), p=weights))]
        name = 'app%d-%s-%dv' % (len(apps), kind.replace('_', '-'),
                                 sizes[0])
        apps[name] = profile(kind, rng, sizes[0], sizes[0] * mib)
    popularity = np.array([1.0 / (r + 1) ** 1.2 for r in range(len(apps))])
    return apps, popularity / popularity.sum()


def shared_fractions(apps, seed):
    """Set each application's ``shared_fraction`` in place.

    No paper gives the share of a working set that a VM's threads have in
    common, so the generator spans it: uniform in 0-1 for every kind,
    drawn per application. A 1-vCPU application's one thread touches all
    its data, so it is 1 by definition. The draw uses its own stream of
    ``seed``, so the rest of a cluster is what the same seed gave before
    the field existed.
    """
    rng = np.random.default_rng([seed, _SHARED_STREAM])
    for name in sorted(apps):
        share = _r(rng, 0.0, 1.0, 2)
        apps[name]['shared_fraction'] = (1.0 if apps[name]['vcpus'] == 1
                                         else share)


def _hosts(spec, rng, classes):
    """[(host name, class name)]: one class, or two or three mixed."""
    names = [hw.name for hw in classes]
    share = rng.dirichlet([2.0] * len(names)) if len(names) > 1 else [1.0]
    counts = np.maximum(1, np.round(np.array(share) * spec.hosts)).astype(int)
    while counts.sum() > spec.hosts:
        counts[int(np.argmax(counts))] -= 1
    while counts.sum() < spec.hosts:
        counts[int(np.argmin(counts))] += 1
    hosts = []
    for name, n in zip(names, counts):
        hosts += [('%s-%d' % (name, j), name) for j in range(int(n))]
    return hosts


def _pack(spec, rng, hosts, by_name, apps, popularity):
    """[(host, socket, app)]: each socket filled to its share of cores.

    A socket's share is the cluster's occupancy, jittered per host by up
    to 0.1 (clipped to 0.5-1.0), in whole cores; the socket is filled with
    instances drawn by popularity among the applications that still fit.
    """
    names = list(apps)
    slots = []
    for host, cls in hosts:
        hw = by_name[cls]
        occ = float(np.clip(spec.occupancy + rng.uniform(-0.1, 0.1),
                            0.5, 1.0)) if spec.occupancy < 1.0 else 1.0
        for s in _usable_sockets(hw):
            room = int(round(occ * hw.cores_per_node * sum(
                1 for k in range(hw.nodes_per_socket)
                if s * hw.nodes_per_socket + k not in hw.reserved_nodes)))
            while room > 0:
                fit = [i for i, n in enumerate(names)
                       if apps[n]['vcpus'] <= room]
                if not fit:
                    break
                w = popularity[fit] / popularity[fit].sum()
                app = names[fit[int(rng.choice(len(fit), p=w))]]
                slots.append((host, s, app))
                room -= apps[app]['vcpus']
    return slots


def _worst(slots, apps, by_host_class):
    """W-W from a packing: same slots, heaviest instances first.

    Each flavor size keeps its slots (so everything still fits); within a
    size, the instances with the most LLC misses take the first sockets
    of the cluster, and every instance's memory goes to the next usable
    socket of its host.
    """
    out = []
    by_size = {}
    for k, (host, s, app) in enumerate(slots):
        by_size.setdefault(apps[app]['vcpus'], []).append(k)
    placed = [None] * len(slots)
    for size, ks in by_size.items():
        heavy = sorted((slots[k][2] for k in ks),
                       key=lambda a: -heaviness(apps[a]))
        for k, app in zip(ks, heavy):
            placed[k] = (slots[k][0], slots[k][1], app)
    for host, s, app in placed:
        sockets = by_host_class[host]
        mem = sockets[(sockets.index(s) + 1) % len(sockets)]
        out.append((host, s, app, mem))
    return out


def generate(spec, seed, name=None):
    """The scenario data (a scenario file's mapping) of ``spec``/``seed``."""
    known = shipped_classes()
    spec.check(known)
    rng = np.random.default_rng(seed)
    classes = [known[c] for c in spec.classes]
    hosts = _hosts(spec, rng, classes)
    apps, popularity = _apps(spec, rng, classes)
    shared_fractions(apps, seed)
    slots = _pack(spec, rng, hosts, known, apps, popularity)
    host_sockets = {h: _usable_sockets(known[c]) for h, c in hosts}
    if spec.placement == 'worst':
        placed = _worst(slots, apps, host_sockets)
    else:
        placed = [(h, s, a, s) for h, s, a in slots]
    used = sorted({a for _, _, a, _ in placed})
    counts = {a: 0 for a in used}
    instances = []
    for host, s, app, mem in placed:
        counts[app] += 1
        instances.append({'profile': app, 'name': '%s-%d' % (app,
                                                             counts[app]),
                          'host': host, 'socket': s, 'memory_socket': mem})
    name = name or 'gen-%d' % seed
    kinds = sorted({apps[a]['kind'] for a in used})
    return {
        'format': scenario_mod.FORMAT,
        'name': name,
        'description': '%d hosts of %s, occupancy %.2f, %d instances of %d '
                       'applications (%s), %s start; generated, seed %d'
                       % (len(hosts), ' + '.join(spec.classes),
                          spec.occupancy, len(instances), len(used),
                          ', '.join(kinds), spec.placement, seed),
        'synthetic': True, 'seed': int(seed), 'epochs': spec.epochs,
        'epoch_s': spec.epoch_s, 'audit_every': spec.audit_every,
        'placement': 'explicit',
        'hardware': {c: hardware_entry(known[c]) for c in spec.classes},
        'hosts': [
            {'class': c, 'names': [h for h, k in hosts if k == c]}
            for c in spec.classes if any(k == c for _, k in hosts)],
        'profiles': {a: apps[a] for a in used},
        'instances': instances,
    }


def scenario(spec, seed, name=None):
    """The :class:`contention.sim.Scenario` of ``spec`` and ``seed``."""
    data = generate(spec, seed, name)
    return scenario_mod.from_dict(data, '<generated %s>' % data['name'])


def draw_spec(rng, band='small', epochs=8):
    """A :class:`ClusterSpec` of a size band of :data:`SIZES`.

    One host class in two clusters of three, two or three mixed in the
    others; occupancy uniform in 0.5-1.0 with a quarter of the clusters
    completely full; half the clusters start from W-W.
    """
    known = sorted(shipped_classes())
    low, high = SIZES[band]
    mixed = len(known) > 1 and rng.uniform() < 1.0 / 3.0
    k = int(rng.integers(2, min(3, len(known)) + 1)) if mixed else 1
    classes = tuple(sorted(rng.choice(known, size=k, replace=False)))
    full = rng.uniform() < 0.25
    return ClusterSpec(
        hosts=int(rng.integers(low, high + 1)),
        classes=tuple(str(c) for c in classes),
        occupancy=1.0 if full else round(float(rng.uniform(0.5, 1.0)), 2),
        placement=str(rng.choice(PLACEMENTS)),
        apps=int(rng.integers(3, 9)), epochs=epochs)


def family(seed, small=0, medium=0, large=0, epochs=8):
    """[(spec, cluster seed, name)]: a reproducible family of clusters.

    Cluster ``k`` of a band is drawn from ``(seed, band, k)`` alone, so a
    larger family extends a smaller one with the same first clusters.
    """
    out = []
    for band, count in (('small', small), ('medium', medium),
                        ('large', large)):
        for k in range(count):
            rng = np.random.default_rng([seed, list(SIZES).index(band), k])
            spec = draw_spec(rng, band, epochs)
            out.append((spec, int(rng.integers(2 ** 31)),
                        'gen-%s-%03d' % (band, k)))
    return out


# -- ``contention-sim generate`` ---------------------------------------------

HELP = 'generate a seeded cluster scenario (YAML) nobody tuned for'


def add_arguments(parser):
    parser.add_argument('--seed', type=int, default=None,
                        help='seed (required): the same seed and options '
                             'give the same scenario')
    parser.add_argument('--band', choices=sorted(SIZES), default=None,
                        help='draw every option from the seed, with a size '
                             'of this band (%s); the options below are '
                             'then ignored' % ', '.join(
                                 '%s %d-%d hosts' % (b, lo, hi)
                                 for b, (lo, hi) in SIZES.items()))
    parser.add_argument('--hosts', type=int, default=8,
                        help='hosts, %d-%d' % (MIN_HOSTS, MAX_HOSTS))
    parser.add_argument('--classes', default=None,
                        help='comma-separated host classes (several = a '
                             'mixed cluster); default: the first shipped '
                             '(contention-sim generate --list-classes)')
    parser.add_argument('--occupancy', type=float, default=0.75,
                        help='share of physical cores allocated, 0.5-1.0')
    parser.add_argument('--placement', choices=PLACEMENTS, default='random',
                        help='initial placement (worst = Ahn et al. W-W)')
    parser.add_argument('--apps', type=int, default=5,
                        help='applications (images) in the cluster')
    parser.add_argument('--epochs', type=int, default=8)
    parser.add_argument('--name', default=None,
                        help='scenario name (default gen-SEED)')
    parser.add_argument('--output', default=None,
                        help='file to write (default: standard output)')
    parser.add_argument('--list-classes', action='store_true',
                        help='list the shipped host classes and exit')


def dumps(data):
    """The YAML text of a generated scenario (the simulator's writer)."""
    return scenario_mod.dump(scenario_mod.from_dict(data, data['name']))


def run_command(args):
    """``contention-sim generate``: write one scenario, say what it is."""
    import sys

    known = shipped_classes()
    if args.list_classes:
        for name, hw in known.items():
            print('%-14s %d sockets x %d nodes x %d cores, %s'
                  % (name, hw.sockets, hw.nodes_per_socket,
                     hw.cores_per_node, hw.cpu_model))
        return 0
    if args.seed is None:
        raise GenerateError('--seed is required')
    if args.band:
        spec = draw_spec(np.random.default_rng(args.seed), args.band,
                         args.epochs)
    else:
        classes = tuple(c.strip() for c in (
            args.classes or next(iter(known))).split(',') if c.strip())
        spec = ClusterSpec(hosts=args.hosts, classes=classes,
                           occupancy=args.occupancy,
                           placement=args.placement, apps=args.apps,
                           epochs=args.epochs)
    data = generate(spec, args.seed, args.name)
    text = dumps(data)
    if args.output:
        with open(args.output, 'w', encoding='utf-8') as fh:
            fh.write(text)
        print('[simulated] %s: %s' % (args.output, data['description']),
              file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
