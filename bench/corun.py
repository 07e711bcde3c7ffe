"""Co-run bench: real contention on this machine's silicon, and the
simulator's prediction of it.

``python -m bench.corun`` (part of ``tox -e bench``; about 3-4 minutes).
These machines expose no hardware counters, but their cores share a real
last-level cache and a real memory controller, so a slowdown two programs
inflict on each other is real and measurable. The microbenchmarks
(``bench/microbench/corun.c``, compiled with the machine's ``gcc`` into a
temporary directory) are:

* ``chase-N``: a dependent random pointer chase over N MiB (N below, at
  and above the LLC), in ns per access;
* ``triad``: a STREAM-like triad over three 32 MiB arrays, in GB/s;
* ``cpu``: integer work in registers, in Mops/s;
* ``service``: a request/response service (Poisson arrivals at half its
  capacity alone, exponentially sized requests of lookups in an 8 MiB
  table), its mean response time in us; its target is the response time
  alone (performance = alone / measured, as the simulator's latency VMs).

Each runs alone and beside every other (and itself), the two pinned to
the two CPUs with ``os.sched_setaffinity``, ``REPEATS`` times in a
shuffled order; the figures are medians with their spread (min-max over
repeats), because the machine is shared with other users' jobs.

The simulator is then given a host class read from the machine itself
(:func:`host_from_machine`: cores, threads and L3 size from sysfs; the
unloaded miss latency and the memory bandwidth from the chase and triad
alone) and profiles derived by one rule per microbenchmark kind
(:func:`profiles_for`), never from a pair's result, and it predicts
every pair. :func:`compare` reports both side by side with Spearman's
rank correlation and the median relative error of the slowdowns. Every
simulator figure is labelled simulated.
"""

import dataclasses
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from contention.sim import scenario as scenario_mod
from contention.sim import simulator

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      'microbench', 'corun.c')
REPEATS = 3
SECONDS = 1.0
#: Triad arrays (each); three of them are well above any LLC here.
TRIAD_MIB = 32
SERVICE_MIB = 8
#: Utilisation of the service alone: arrivals at half its capacity.
SERVICE_LOAD = 0.5


@dataclasses.dataclass(frozen=True)
class Workload:
    """One microbenchmark: its name, command and how to read its result."""

    name: str
    kind: str            # chase, triad, cpu, service
    mib: int = 0
    #: True when a larger figure is better (rates); False for times.
    higher_is_better: bool = False
    unit: str = ''

    def argv(self, binary, seconds, gap_us=None):
        args = [binary, self.kind, str(self.mib), '%.3f' % seconds]
        if self.kind == 'service':
            args.append('%.3f' % gap_us)
        return args


def workloads(l3_mib):
    """The set run here: chases below, at and above the LLC, and the rest."""
    sizes = sorted({4, max(8, int(l3_mib // 2)), max(12, int(l3_mib * 3
                                                             // 4)),
                    int(2 * l3_mib)})
    chases = [Workload('chase-%d' % s, 'chase', s, False, 'ns/access')
              for s in sizes]
    return chases + [
        Workload('triad', 'triad', TRIAD_MIB, True, 'GB/s'),
        Workload('cpu', 'cpu', 0, True, 'Mops/s'),
        Workload('service', 'service', SERVICE_MIB, False, 'us')]


# -- the machine ----------------------------------------------------------


def _read(path, default=None):
    try:
        with open(path, encoding='utf-8') as fh:
            return fh.read().strip()
    except OSError:
        return default


def _size_kib(text):
    text = (text or '').strip().upper()
    if text.endswith('K'):
        return float(text[:-1])
    if text.endswith('M'):
        return float(text[:-1]) * 1024
    return float(text) / 1024 if text else 0.0


def machine():
    """Cores, threads per core, LLC size and model, read from sysfs."""
    cpus = sorted(os.sched_getaffinity(0))
    base = '/sys/devices/system/cpu/cpu%d' % cpus[0]
    llc_kib, llc_shared = 0.0, ''
    for index in sorted(os.listdir(os.path.join(base, 'cache'))):
        if not index.startswith('index'):
            continue
        level = _read(os.path.join(base, 'cache', index, 'level'), '0')
        kind = _read(os.path.join(base, 'cache', index, 'type'), '')
        if int(level) >= 3 and kind in ('Unified', 'Data'):
            llc_kib = _size_kib(_read(os.path.join(base, 'cache', index,
                                                   'size')))
            llc_shared = _read(os.path.join(base, 'cache', index,
                                            'shared_cpu_list'), '')
    siblings = _read(os.path.join(base, 'topology',
                                  'thread_siblings_list'), str(cpus[0]))
    threads = len(_cpu_list(siblings)) or 1
    model = ''
    for line in (_read('/proc/cpuinfo', '') or '').splitlines():
        if line.startswith('model name'):
            model = line.split(':', 1)[1].strip()
            break
    return dict(cpus=cpus, cores=max(1, len(cpus) // threads),
                threads=threads, l3_mib=llc_kib / 1024.0,
                l3_shared=llc_shared, model=model)


def _cpu_list(text):
    out = []
    for part in (text or '').split(','):
        if '-' in part:
            a, b = part.split('-')
            out.extend(range(int(a), int(b) + 1))
        elif part.strip():
            out.append(int(part))
    return out


# -- running --------------------------------------------------------------


def compile_binary(tmpdir):
    gcc = shutil.which('gcc') or shutil.which('cc')
    if gcc is None:
        raise RuntimeError('bench.corun needs gcc (apt-get install gcc)')
    binary = os.path.join(tmpdir, 'corun')
    subprocess.run([gcc, '-O2', '-o', binary, SOURCE, '-lm'], check=True)
    return binary


def _pinned(cpu):
    return lambda: os.sched_setaffinity(0, {cpu})


def run_together(binary, jobs, seconds=SECONDS, gap_us=None):
    """Start ``jobs`` [(workload, cpu)] at once; return their results."""
    procs = []
    for work, cpu in jobs:
        procs.append(subprocess.Popen(
            work.argv(binary, seconds, gap_us), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, preexec_fn=_pinned(cpu)))
    for proc in procs:               # every one has finished its setup
        if proc.stdout.readline().strip() != 'ready':
            raise RuntimeError('microbenchmark did not start')
    for proc in procs:
        proc.stdin.write('g')
        proc.stdin.flush()
    results = []
    for proc in procs:
        out, _ = proc.communicate(timeout=seconds * 10 + 30)
        line = [x for x in out.splitlines() if x.startswith('RESULT')]
        if proc.returncode or not line:
            raise RuntimeError('microbenchmark failed: %r' % out)
        results.append(float(line[-1].split()[1]))
    return results


def measure(binary, works, cpus, repeats=REPEATS, seconds=SECONDS,
            seed=0):
    """Every workload alone and in every pair; returns raw samples.

    ``{('alone', a): [v, ...], (a, b): [v of a beside b, ...]}``, plus
    the service's arrival gap and the triad pair's bandwidth.
    """
    # The service's capacity alone sets its arrival rate (half of it).
    service = [w for w in works if w.kind == 'service'][0]
    calib = run_together(binary, [(service, cpus[0])], seconds,
                         gap_us=1e9)
    # With no queueing the response time is the mean service time.
    gap_us = calib[0] / SERVICE_LOAD
    configs = [(w,) for w in works]
    configs += [(a, b) for i, a in enumerate(works) for b in works[i:]]
    samples = {}
    rng = random.Random(seed)
    for _ in range(repeats):
        order = list(configs)
        rng.shuffle(order)
        for config in order:
            jobs = [(w, cpus[j]) for j, w in enumerate(config)]
            values = run_together(binary, jobs, seconds, gap_us)
            if len(config) == 1:
                samples.setdefault(('alone', config[0].name),
                                   []).append(values[0])
            else:
                a, b = config
                samples.setdefault((a.name, b.name), []).append(values[0])
                samples.setdefault((b.name, a.name), []).append(values[1])
    return samples, gap_us


# -- the simulator's side -------------------------------------------------


def host_from_machine(info, alone):
    """The simulator's hardware class for this machine.

    ``alone`` holds the medians of the microbenchmarks alone. The layout
    (one socket, one NUMA node, the cores and threads, the L3 size) is
    sysfs's. Two speeds are measured: ``local_latency_ns``, the extra
    latency of a dependent load that misses the LLC (the chase at twice
    the LLC minus the chase well inside it), and ``mc_bandwidth_gbs``,
    the DRAM bytes per second of the triad alone (STREAM's 24 bytes per
    element plus the write-allocate read, 32 bytes). The clock is 1 GHz
    by convention: profiles below count cycles as nanoseconds.
    """
    chases = sorted((w for w in alone if w.startswith('chase-')),
                    key=lambda n: int(n.split('-')[1]))
    hit_ns = alone[chases[0]]
    miss_ns = max(alone[chases[-1]] - hit_ns, 1.0)
    bw = alone['triad'] * 32.0 / 24.0
    return {
        'sockets': 1, 'nodes_per_socket': 1,
        'cores_per_node': info['cores'],
        'threads_per_core': info['threads'],
        'l3_mib_per_node': info['l3_mib'],
        'memory_gib_per_node': 16, 'cpu_vendor': 'unknown',
        'cpu_model': info['model'] or 'this machine',
        'perf': {'freq_ghz': 1.0, 'mc_bandwidth_gbs': bw,
                 'local_latency_ns': miss_ns,
                 'l3_mib_per_node': info['l3_mib']},
    }, hit_ns


def profiles_for(works, hit_ns):
    """One simulator profile per microbenchmark, by kind (see module doc).

    One "instruction" is one unit of the benchmark's work: a chase
    access, a triad cache line read, a CPU op. A chase reads one line per
    access, each dependent on the last (``mlp`` 1), costs ``hit_ns`` when
    it hits the LLC, and its miss-ratio curve is the exponential the
    simulator supports that agrees with uniform random access at half its
    working set (``working_set_mib = N / (2 ln 2)``, no miss floor). The
    triad streams (every line misses), reads three lines per written one
    (``writeback_ratio`` 1/3) and keeps many misses in flight (``mlp`` 8,
    what a core's fill buffers allow). The service is an 8 MiB chase whose
    metric is latency at ``SERVICE_LOAD`` utilisation.
    """
    out = {}
    for w in works:
        if w.kind in ('chase', 'service'):
            prof = dict(base_cpi=hit_ns, llc_apki=1000.0, mr_min=0.0,
                        mr_max=1.0,
                        working_set_mib=w.mib / (2.0 * math.log(2.0)),
                        footprint_mib=float(w.mib), mlp=1.0,
                        writeback_ratio=0.0)
            if w.kind == 'service':
                prof.update(metric='latency', cpu_demand=SERVICE_LOAD)
        elif w.kind == 'triad':
            prof = dict(base_cpi=1.0, llc_apki=1000.0, mr_min=1.0,
                        mr_max=1.0, working_set_mib=1.0,
                        footprint_mib=float(3 * w.mib), mlp=8.0,
                        writeback_ratio=1.0 / 3.0)
        else:
            prof = dict(base_cpi=1.0, llc_apki=0.001, mr_min=0.0,
                        mr_max=0.0, working_set_mib=0.01,
                        footprint_mib=0.01, mlp=1.0)
        prof.update(vcpus=1, memory_mib=max(64, 3 * w.mib))
        out[w.name] = prof
    return out


def predict(hw, profs, pairs):
    """Simulated slowdown (time alone -> beside) of a in every (a, b)."""
    out = {}
    for a, b in pairs:
        insts = [{'profile': a, 'name': 'a', 'host': 'here', 'socket': 0},
                 {'profile': b, 'name': 'b', 'host': 'here', 'socket': 0}]
        scen = scenario_mod.from_dict({
            'name': 'corun', 'placement': 'explicit', 'epochs': 1,
            'hardware': {'here': hw},
            'hosts': [{'class': 'here', 'names': ['here']}],
            'profiles': profs, 'instances': insts}, 'corun')
        sim = simulator.Simulator(scen)
        perf = sim.step()
        by_name = {i.name: perf[i.uuid] for i in sim.state.instances}
        out[(a, b)] = 1.0 / max(by_name['a'], 1e-9)
    return out


# -- comparing ------------------------------------------------------------


def spearman(x, y):
    """Spearman's rank correlation (average ranks for ties)."""
    def ranks(v):
        v = np.asarray(v, dtype=float)
        order = np.argsort(v, kind='mergesort')
        r = np.empty(len(v))
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            r[order[i:j + 1]] = (i + j) / 2.0
            i = j + 1
        return r
    rx, ry = ranks(x), ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return float('nan')
    return float(np.corrcoef(rx, ry)[0, 1])


def slowdowns(samples, works):
    """Measured slowdowns (time beside / time alone): median, min, max."""
    by_name = {w.name: w for w in works}
    alone = {w.name: float(np.median(samples[('alone', w.name)]))
             for w in works}
    out = {}
    for key, values in samples.items():
        if key[0] == 'alone':
            continue
        w = by_name[key[0]]
        ratios = [(alone[w.name] / v if w.higher_is_better
                   else v / alone[w.name]) for v in values]
        out[key] = (float(np.median(ratios)), float(min(ratios)),
                    float(max(ratios)))
    return alone, out


def compare(measured, predicted):
    """Rows, Spearman's rho and the median relative error."""
    keys = sorted(measured)
    m = [measured[k][0] for k in keys]
    p = [predicted[k] for k in keys]
    rel = [abs(pp - mm) / mm for pp, mm in zip(p, m)]
    return keys, spearman(m, p), float(np.median(rel))


def _loadavg():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float('nan')


def main(argv=None):
    info = machine()
    if len(info['cpus']) < 2:
        print('bench.corun needs two CPUs; this process may use %s'
              % info['cpus'])
        return
    cpus = info['cpus'][:2]
    works = workloads(info['l3_mib'])
    load_before = _loadavg()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix='corun-') as tmp:
        binary = compile_binary(tmp)
        samples, gap_us = measure(binary, works, cpus)
    wall = time.monotonic() - start
    load_after = _loadavg()
    alone, measured = slowdowns(samples, works)
    hw, hit_ns = host_from_machine(info, alone)
    profs = profiles_for(works, hit_ns)
    predicted = predict(hw, profs, sorted(measured))
    keys, rho, mre = compare(measured, predicted)
    report(info, works, samples, alone, measured, predicted, keys, rho, mre,
           hw, gap_us, wall, (load_before, load_after))


def report(info, works, samples, alone, measured, predicted, keys, rho,
           mre, hw, gap_us, wall, load):
    by_name = {w.name: w for w in works}
    print('Machine: %s; %d cores x %d threads; L3 %.0f MiB shared by CPUs '
          '%s (sysfs). Pinned to CPUs %s; %d repeats of %.1f s each, '
          'shuffled; %.0f s in all. **The machine is shared**: load '
          'average %.1f before and %.1f after, so every figure is a median '
          'with its min-max over repeats, and rates are per second of the '
          'benchmark\'s own CPU time (median over short chunks).\n'
          % (info['model'], info['cores'], info['threads'], info['l3_mib'],
             info['l3_shared'], info['cpus'][:2], REPEATS, SECONDS, wall,
             load[0], load[1]))
    print('Alone (measured):\n')
    print('| workload | median | min-max |')
    print('|---|---|---|')
    for w in works:
        v = samples[('alone', w.name)]
        print('| %s | %.1f %s | %.1f-%.1f |' % (w.name, alone[w.name],
                                               w.unit, min(v), max(v)))
    perf = hw['perf']
    print('\nHost class given to the simulator (from the machine): %d '
          'cores, L3 %.0f MiB, miss latency %.0f ns (chase at 2x the LLC '
          'minus chase at 4 MiB), memory bandwidth %.1f GB/s (triad alone, '
          'DRAM bytes). Service arrivals every %.0f us on average '
          '(utilisation %.1f alone).\n'
          % (hw['cores_per_node'], hw['l3_mib_per_node'],
             perf['local_latency_ns'], perf['mc_bandwidth_gbs'], gap_us,
             SERVICE_LOAD))
    print('Slowdown of the first workload beside the second (time beside '
          '/ time alone; measured median and min-max, and simulated):\n')
    print('| workload | beside | measured | min-max | simulated | '
          'relative error |')
    print('|---|---|---|---|---|---|')
    for k in keys:
        med, lo, hi = measured[k]
        print('| %s | %s | %.2f | %.2f-%.2f | %.2f | %+.0f %% |'
              % (k[0], k[1], med, lo, hi, predicted[k],
                 100.0 * (predicted[k] - med) / med))
    print('\nOver %d ordered pairs: Spearman rank correlation %.2f '
          '(target >= 0.8), median relative error %.0f %% (target <= '
          '25 %%). Simulated figures are the simulator\'s (simulated); '
          'measured figures are real.' % (len(keys), rho, 100.0 * mre))
    del by_name


if __name__ == '__main__':
    main(sys.argv[1:])
