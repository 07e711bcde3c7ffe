"""Every policy on a 1,000-host cluster: wall time of a whole evaluation.

``python -m bench.sim_scale [--hosts 1000] [--epochs 3]`` builds (seeded)
a format-2 scenario of mixed shipped host classes (``intel-2s``,
``intel-2s-snc2``, ``amd-2s-nps4``, ``intel-4s``), filled to about half
their cores with single- to 8-vCPU instances of the Ahn profile library
(some with ``hw:numa_nodes`` and dedicated CPUs), and runs each policy for
a few epochs, timing the run (placement, solving, decisions, applying)
and printing the markdown table kept in ``doc/benchmarks.md``. The
best-known reference (``oracle``) cannot search this exactly, so it runs
its local search, bounded in tries and compositions solved an audit.

All performance figures are simulated; the times are real wall-clock
times on the machine that ran it.
"""

import argparse
import time

import numpy as np

from contention.sim import scenario as scenario_mod
from contention.sim import simulator

CLASSES = ('intel-2s', 'intel-2s-snc2', 'amd-2s-nps4', 'intel-4s')
POLICIES = ('none', 'random', 'local', 'low_cost', 'merlin', 'cache_aware_swap',
            'numa_aware_swap', 'oracle')
PROFILES = ('GemsFDTD', 'milc', 'omnetpp', 'lbm', 'soplex', 'hmmer',
            'namd', 'gobmk', 'sjeng', 'povray')
FLAVORS = ({'vcpus': 1, 'memory_mib': 2048},
           {'vcpus': 2, 'memory_mib': 4096},
           {'vcpus': 4, 'memory_mib': 8192},
           {'vcpus': 8, 'memory_mib': 16384, 'numa_nodes': 1,
            'cpu_policy': 'dedicated'})


def build(n_hosts, seed=0, fill=0.5):
    """A scenario mapping: ``n_hosts`` hosts, instances to ``fill``."""
    rng = np.random.default_rng(seed)
    lib = scenario_mod._library('ahn-spec2006', 'bench')
    profs = {}
    for name in PROFILES:
        for k, flavor in enumerate(FLAVORS):
            spec = dict(lib[name])
            spec.pop('description', None)
            spec.update(flavor)
            profs['%s.f%d' % (name, k)] = spec
    classes = scenario_mod.host_classes()
    hosts, instances = [], []
    for h in range(n_hosts):
        cls = CLASSES[h % len(CLASSES)]
        hosts.append({'class': cls, 'names': ['h%04d' % h]})
        spec = classes[cls]
        cores = spec['sockets'] * spec['nodes_per_socket'] * spec[
            'cores_per_node']
        budget = cores * fill
        while budget > 0:
            k = int(rng.choice(len(FLAVORS), p=(0.4, 0.3, 0.2, 0.1)))
            name = '%s.f%d' % (PROFILES[int(rng.integers(len(PROFILES)))],
                               k)
            instances.append({'profile': name, 'host': 'h%04d' % h,
                              'name': 'vm%06d' % len(instances)})
            budget -= FLAVORS[k]['vcpus']
    return {'format': 2, 'name': 'scale-%d' % n_hosts, 'synthetic': True,
            'seed': seed, 'epochs': 3, 'placement': 'nova_spread',
            'hardware': {c: {'base': c} for c in CLASSES},
            'hosts': hosts, 'profiles': profs, 'instances': instances}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--policies', default=','.join(POLICIES))
    args = parser.parse_args(argv)
    start = time.perf_counter()
    scen = scenario_mod.from_dict(build(args.hosts), 'bench')
    built = time.perf_counter() - start
    print('Scenario: %d hosts (%s, round robin), %d instances, %d epochs; '
          'built in %.1f s. Performance figures simulated; times real.'
          % (len(scen.hosts), ', '.join(CLASSES), len(scen.instances),
             args.epochs, built))
    print()
    print('| policy | wall s | decision s | solver s | perf mean '
          '[simulated] | migrations | rejected (by kind) |')
    print('|---|---:|---:|---:|---:|---:|---|')
    for name in args.policies.split(','):
        start = time.perf_counter()
        result = simulator.run(scen, name, epochs=args.epochs)
        wall = time.perf_counter() - start
        kinds = ', '.join('%s %d' % kv for kv in result.rejected_reasons)
        print('| %s | %.1f | %.1f | %.1f | %.3f | %d | %d%s |'
              % (name, wall, result.decision_wall_s, result.solver_wall_s,
                 result.perf_mean, result.migrations,
                 result.rejected_actions,
                 ' (%s)' % kinds if kinds else ''), flush=True)


if __name__ == '__main__':
    main()
