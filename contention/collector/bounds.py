"""What no machine can report: physical bounds, clock skew, sender.

The schema (:mod:`contention.schema`) checks types and signs; a report can
still be well-typed and impossible: an MPKI of 1e300 turned an image's
profile into 1.9e299 and a value past float32's range made the Nova
weigher raise (issue 21). These rules refuse such a report as a whole
before it is stored, with a reason the collector counts
(``rejected:<reason>``):

* ``out_of_bounds``: a counter or rate beyond what the hardware can do
  over the report's interval with the instance's vCPUs, or a derived
  metric beyond its definition;
* ``future``: a timestamp ahead of the collector's clock by more than the
  allowed skew (it would become the host's latest and make every real
  report after it stale);
* ``sender``: the report's host is not the agent that published it.

The bounds are generous on purpose, an order of magnitude past today's
hardware, so that no real report is refused: they stop absurd values, and
the store's robust image profiles stop plausible lies from one host.
"""

#: Fastest clock of any core, Hz (no CPU ships above about 6 GHz).
MAX_CPU_HZ = 10e9
#: Instructions a core retires per cycle (today's widest retire 8).
MAX_IPC = 16.0
#: Cache events per cycle and core (one per cycle is already absurd).
MAX_CACHE_EVENTS_PER_CYCLE = 1.0
#: Misses per 1000 instructions: ten misses per instruction.
MAX_MPKI = 10000.0
#: Misses / references; multiplexed counters can push it a little past 1.
MAX_MF = 2.0
#: CPU used / CPU allocated; a little past 1 from sampling alignment.
MAX_CPU_UTIL = 2.0
#: CPU time per vCPU and second of interval (same slack), ns.
MAX_CPU_NS_PER_S = MAX_CPU_UTIL * 1e9
#: DRAM bandwidth of one host, bytes/s (ten times today's largest).
MAX_MEM_BW_BPS = 1e13
#: LLC occupancy, bytes (the largest L3 today is about 1 GiB).
MAX_LLC_BYTES = 1 << 36
#: Memory of one instance, MiB (an exbibyte).
MAX_MEMORY_MIB = 1 << 40
#: vCPUs of one instance (KVM's limit is in the thousands).
MAX_VCPUS = 16384
#: An instance's CPU cap as a fraction of each vCPU.
MAX_CPU_QUOTA = 1e6
#: The longest interval a report may cover, s (agents report every few
#: seconds to minutes; a huge interval would lift every rate bound).
MAX_INTERVAL_S = 86400.0
#: The shortest interval counted for rate bounds: a report with a 0 s
#: interval is judged as if it covered 1 s.
MIN_RATE_INTERVAL_S = 1.0

PUBLISHER_PREFIX = 'contention-agent.'


class Violation(Exception):
    """A report broke a rule: ``reason`` (counted), ``path``, ``problem``."""

    def __init__(self, reason, path, problem):
        super().__init__('%s: %s' % (path, problem))
        self.reason = reason
        self.path = path
        self.problem = problem


def check_sender(report, publisher_id):
    """Raise unless ``publisher_id`` is the agent of ``report.host``.

    The agent publishes as ``contention-agent.<[agent] host>``. A broker
    user can forge the publisher id too: this binds a report to what its
    sender claims to be, so one host's agent (or anyone reusing its
    configuration) cannot write other hosts' telemetry by mistake, and a
    forger must lie twice. Binding to the broker identity needs per-host
    broker users (see doc/telemetry.md).
    """
    expected = PUBLISHER_PREFIX + report.host
    if publisher_id != expected:
        raise Violation('sender', 'report.host',
                        'published by %s, not by %s'
                        % (str(publisher_id or '(no publisher id)')[:120],
                           expected[:120]))


def check_time(report, now, max_skew_s):
    """Raise if ``report`` is dated more than ``max_skew_s`` after now."""
    if report.timestamp > now + max_skew_s:
        raise Violation('future', 'report.timestamp',
                        '%.3f is %.0f s ahead of the collector\'s clock '
                        '(allowed skew %.0f s)'
                        % (report.timestamp, report.timestamp - now,
                           max_skew_s))


def _over(value, limit, path, what):
    if value is not None and value > limit:
        raise Violation('out_of_bounds', path,
                        '%s %.6g is over the physical bound %.6g'
                        % (what, value, limit))


def check_physics(report):
    """Raise :class:`Violation` at the first value no machine produces."""
    _over(report.interval_s, MAX_INTERVAL_S, 'report.interval_s', 'interval')
    seconds = max(report.interval_s, MIN_RATE_INTERVAL_S)
    host_cpus = max(len(report.topology.cpus), 1)
    for i, node in enumerate(report.topology.nodes):
        _over(node.memory_bandwidth_bps, MAX_MEM_BW_BPS,
              'report.topology.nodes[%d].memory_bandwidth_bps' % i,
              'memory bandwidth')
    for i, rec in enumerate(report.instances):
        path = 'report.instances[%d]' % i
        _over(rec.vcpus, MAX_VCPUS, path + '.vcpus', 'vCPUs')
        _over(rec.memory_mib, MAX_MEMORY_MIB, path + '.memory_mib', 'memory')
        _over(rec.cpu_quota, MAX_CPU_QUOTA, path + '.cpu_quota', 'CPU quota')
        cycles = seconds * rec.vcpus * MAX_CPU_HZ
        c, m = rec.counters, rec.metrics
        cpath, mpath = path + '.counters.', path + '.metrics.'
        _over(c.cycles, cycles, cpath + 'cycles', 'cycles')
        _over(c.instructions, cycles * MAX_IPC, cpath + 'instructions',
              'instructions')
        events = cycles * MAX_CACHE_EVENTS_PER_CYCLE
        _over(c.cache_references, events, cpath + 'cache_references',
              'cache references')
        _over(c.cache_misses, events, cpath + 'cache_misses', 'cache misses')
        cpu_ns = seconds * rec.vcpus * MAX_CPU_NS_PER_S
        _over(c.cpu_time_ns, cpu_ns, cpath + 'cpu_time_ns', 'CPU time')
        _over(c.vcpu_delay_ns, cpu_ns, cpath + 'vcpu_delay_ns', 'vCPU delay')
        _over(c.mbm_local_bytes, seconds * MAX_MEM_BW_BPS,
              cpath + 'mbm_local_bytes', 'memory traffic')
        _over(c.mbm_total_bytes, seconds * MAX_MEM_BW_BPS,
              cpath + 'mbm_total_bytes', 'memory traffic')
        _over(c.llc_occupancy_bytes, MAX_LLC_BYTES,
              cpath + 'llc_occupancy_bytes', 'LLC occupancy')
        _over(m.ipc, MAX_IPC, mpath + 'ipc', 'IPC')
        _over(m.mpki, MAX_MPKI, mpath + 'mpki', 'MPKI')
        _over(m.mf, MAX_MF, mpath + 'mf', 'memory factor')
        _over(m.cpu_util, MAX_CPU_UTIL, mpath + 'cpu_util', 'CPU utilisation')
        _over(m.llc_misses_per_s, rec.vcpus * MAX_CPU_HZ,
              mpath + 'llc_misses_per_s', 'LLC misses per second')
        _over(m.mem_bw_local_bps, MAX_MEM_BW_BPS, mpath + 'mem_bw_local_bps',
              'memory bandwidth')
        _over(m.mem_bw_total_bps, MAX_MEM_BW_BPS, mpath + 'mem_bw_total_bps',
              'memory bandwidth')
        _over(m.remote_memory_ratio, 1.0, mpath + 'remote_memory_ratio',
              'remote memory ratio')
    for i, node in enumerate(report.nodes):
        path = 'report.nodes[%d].' % i
        _over(node.mpki_sum, MAX_MPKI * max(node.instances, 1),
              path + 'mpki_sum', 'summed MPKI')
        _over(node.llc_misses_per_s, host_cpus * MAX_CPU_HZ,
              path + 'llc_misses_per_s', 'LLC misses per second')
        _over(node.mf, MAX_MF, path + 'mf', 'memory factor')
        _over(node.mem_bw_bps, MAX_MEM_BW_BPS, path + 'mem_bw_bps',
              'memory bandwidth')
        _over(node.llc_occupancy_bytes, MAX_LLC_BYTES,
              path + 'llc_occupancy_bytes', 'LLC occupancy')


def check(report, publisher_id, now, max_skew_s, check_publisher=True):
    """Every rule of this module; raise :class:`Violation` at the first."""
    if check_publisher:
        check_sender(report, publisher_id)
    check_time(report, now, max_skew_s)
    check_physics(report)
