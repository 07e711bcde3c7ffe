"""Synthetic hardware counters consistent with a solver solution.

Over an interval of ``dt`` seconds an instance with solution values IPS,
CPU used ``u`` (cores), clock ``f``, LLC references and misses per second
and DRAM bytes per second counts:

* ``instructions = IPS dt``; ``cycles = u f dt`` (cycles while running,
  as perf counts them for a vCPU thread), so IPC = 1 / CPI;
* ``cache_references`` / ``cache_misses``: LLC accesses and misses, so
  MPKI and Merlin's MF = misses / references come out as the model's;
* ``cpu_time_ns = u dt 1e9``; ``vcpu_delay_ns``: the CPU time wanted but
  not given (steal);
* ``mbm_local_bytes`` / ``mbm_total_bytes``: DRAM traffic to the
  instance's vCPU-local nodes / to all nodes (resctrl MBM semantics);
* ``llc_occupancy_bytes``: the solved occupancy (a gauge).

Optional noise multiplies every counter by ``exp(N(0, sigma))`` from a
seeded generator (misses kept <= references, local <= total), so the
same seed gives the same numbers.
"""

import numpy as np

NAMES = ('instructions', 'cycles', 'cache_references', 'cache_misses',
         'cpu_time_ns', 'vcpu_delay_ns', 'mbm_local_bytes',
         'mbm_total_bytes', 'llc_occupancy_bytes')


def deltas(problem, solution, dt, noise=0.0, rng=None):
    """Counter name -> float array over instances, for one interval."""
    freq = problem.host_freq[problem.inst_host]
    s = solution
    out = {
        'instructions': s.ips * dt,
        'cycles': s.cpu_used * freq * dt,
        'cache_references': s.refs_per_s * dt,
        'cache_misses': s.misses_per_s * dt,
        'cpu_time_ns': s.cpu_used * dt * 1e9,
        'vcpu_delay_ns': np.maximum(s.cpu_wanted - s.cpu_used, 0.0)
        * dt * 1e9,
        'mbm_local_bytes': s.bytes_local_per_s * dt,
        'mbm_total_bytes': s.bytes_total_per_s * dt,
        'llc_occupancy_bytes': s.occupancy.copy(),
    }
    if noise > 0:
        if rng is None:
            raise ValueError('noise needs a seeded rng')
        for name in NAMES:
            out[name] = out[name] * np.exp(rng.normal(0.0, noise,
                                                      len(out[name])))
        out['cache_misses'] = np.minimum(out['cache_misses'],
                                         out['cache_references'])
        out['mbm_local_bytes'] = np.minimum(out['mbm_local_bytes'],
                                            out['mbm_total_bytes'])
        out['cpu_time_ns'] = np.minimum(
            out['cpu_time_ns'],
            problem.vcpus * dt * 1e9)
    return out
