"""Simulator benchmark: contention-solver time versus cluster size.

``python -m bench.run_all sim`` writes ``doc/benchmarks/sim.md``. Hosts
have 2 sockets x 10 cores x 2 threads and a 14 MiB L3 per socket; each
runs 20 VMs of 1-2 vCPUs drawn (seeded) from 20 synthetic profiles, with
memory local. Timed: building the solver's arrays from the cluster state,
and solving the contention fixed point (plus, as the simulator does every
epoch, the reference "alone" solve). Target (issue 5): 1,000 hosts solve
in under a second. All figures are simulated workloads; the times are
real wall-clock times on this machine.
"""

import time

import numpy as np

from contention.sim import hardware
from contention.sim import profiles
from contention.sim import simulator
from contention.sim import solver
from contention.sim import state

SIZES = (10, 100, 1000, 10000)
VMS_PER_HOST = 20


def build(n_hosts, seed=0):
    rng = np.random.default_rng(seed)
    hw = hardware.HardwareClass('bench-2s', sockets=2, cores_per_node=10,
                                threads_per_core=2, l3_mib_per_node=14,
                                memory_gib_per_node=96)
    model = hardware.host_model('bench', hw)
    profs = [profiles.WorkloadProfile(
        'p%d' % i, base_cpi=rng.uniform(0.5, 1.2),
        llc_apki=rng.uniform(0.5, 30), mr_min=rng.uniform(0.02, 0.9),
        working_set_mib=rng.uniform(0.5, 30), mlp=rng.uniform(1.5, 4),
        vcpus=int(rng.integers(1, 3)), memory_mib=2048) for i in range(20)]
    cs = state.ClusterState([state.SimHost('h%d' % h, model, hw)
                             for h in range(n_hosts)])
    for h in range(n_hosts):
        for j in range(VMS_PER_HOST):
            inst = state.SimInstance('%d-%d' % (h, j), '',
                                     profs[int(rng.integers(0, 20))])
            cs.add(inst)
            cs.place(inst, h, j % 2)
    return cs


def measure(n_hosts, repeats):
    cs = build(n_hosts)
    best_build = best_solve = best_alone = float('inf')
    iterations = 0
    for _ in range(repeats):
        start = time.perf_counter()
        p = cs.problem(0.0)
        built = time.perf_counter()
        ref = solver.solve(solver.alone(p))
        alone_done = time.perf_counter()
        p.cpi_ref = ref.cpi
        sol = solver.solve(p)
        done = time.perf_counter()
        best_build = min(best_build, built - start)
        best_alone = min(best_alone, alone_done - built)
        best_solve = min(best_solve, done - alone_done)
        iterations = sol.iterations
        assert sol.converged
    return best_build, best_alone, best_solve, iterations


def main():
    print('Contention solver (`contention.sim.solver.solve`), 2 sockets and '
          '%d VMs per host; best of 3 runs (1 at 10,000 hosts). Workloads '
          'are simulated; times are wall-clock on this machine.\n'
          % VMS_PER_HOST)
    print('| hosts | VMs | build arrays (s) | alone solve (s) | '
          'contention solve (s) | iterations |')
    print('|---:|---:|---:|---:|---:|---:|')
    solve_1000 = None
    for n in SIZES:
        b, a, s, it = measure(n, 1 if n >= 10000 else 3)
        if n == 1000:
            solve_1000 = s
        print('| %d | %d | %.3f | %.3f | %.3f | %d |'
              % (n, n * VMS_PER_HOST, b, a, s, it))
    print('\nTarget: 1,000 hosts solve in under 1 s: %s (%.3f s).'
          % ('met' if solve_1000 < 1.0 else 'NOT met', solve_1000))
    start = time.perf_counter()
    result = simulator.run('ahn-wl1', 'oracle')
    wall = time.perf_counter() - start
    print('\nWhole run: `contention-sim evaluate --scenario ahn-wl1 --policy '
          'oracle` (%d epochs): %.2f s wall, of which %.2f s deciding; '
          'simulated mean normalised performance %.3f.'
          % (result.epochs, wall, result.decision_wall_s, result.perf_mean))


if __name__ == '__main__':
    main()
