"""Telemetry store: ingest rate and the all-hosts read.

    python -m bench.run_all store       # writes doc/benchmarks/store.md
    python -m bench.store               # prints the same Markdown

Reports are realistic: a 2-socket host with 16 cores and 2 threads per
socket (64 CPUs, 32 L2 and 2 L3 caches in the topology) and 40 instances
with every counter and metric set, about 48 KiB of JSON each.

Measured:

* **ingest**: ``TelemetryStore.ingest`` of already validated reports in
  batches of 100 (the collector's default ``batch_size``), into a SQLite
  file and into PostgreSQL on localhost; and the collector's whole path
  per batch (``ReportEndpoint.handle``: ``HostReport.from_dict``
  validation of the payload, JSON-decoded as it comes off the bus, then
  ingest) into PostgreSQL. Both again with 1 and 2 processes writing at
  once, as ``[collector] workers`` runs them, with instance samples
  stored as configured by default (``[store] instance_sample_interval``
  = 60 s) and for every report (0). Hosts report every 10 s, each at its
  own phase, as agents started at different times do, so with the
  default about one report in six carries sample rows. The broker is not
  involved.
* **all-hosts read**: ``latest_reports(with_instances=False)`` (the
  node-level view the Nova weigher needs: topology and node aggregates)
  with 1,000 and 10,000 hosts stored, and ``latest_reports()`` (whole
  reports, with instances) with 1,000. *cold*: a new store object, so
  every report is fetched and decoded, and for the node-level view one
  topology per hardware model (the first read of a scheduler process);
  *refresh*: the same object after every host's timestamp moved on
  (every report is new, topologies unchanged: the steady state of a
  reader refreshing once per agent interval, e.g. the weigher's cache
  after its TTL with agents reporting every 10 s), five times: the
  median, and the worst, which includes a full garbage collection of the
  process when one falls in it; *warm*: the same
  object again with nothing new (one query of hosts and timestamps).
  The 1,000 hosts are the ones ingested above;
  the other 9,000 are copies of one stored report under other host names,
  written straight into ``latest_reports`` to keep the setup short (the
  read does not know the difference).

* **roll-back read**: what Watcher's measured roll-back reads from the
  history each audit (``StoreMoveLog.seen_before``: each instance's last
  sample before our first move on its host, and its host's report for
  where its memory was), for every instance of ``ROLLBACK_HOSTS`` hosts
  our moves landed on within the cool-down (``cooldown_s``), one call per
  host as :func:`contention.swap.rollback.plan` makes it; the median of
  ``REFRESHES`` runs. It grows with the hosts our recent moves touched,
  not with the cloud.

PostgreSQL is the shared local server (``CONTENTION_TEST_PG_URL``), in a
throwaway database. Every figure is wall-clock time on this machine,
which other jobs share: the load average is printed with the figures.
"""

import contextlib
import json
import multiprocessing
import os
import platform
import random
import statistics
import tempfile
import time
import uuid

import sqlalchemy as sa

from bench import corun
from contention.collector import endpoint as endpoint_mod
from contention import report as report_mod
from contention import store as api
from contention.store import models
from contention.store import open_store
from contention.store import write
from contention import swap
from contention import topology as topo_mod

PG_ADMIN_URL = os.environ.get(
    'CONTENTION_TEST_PG_URL',
    'postgresql+psycopg2://postgres@127.0.0.1:5432/postgres')
INSTANCES = 40
BATCH = 100
INGEST_REPORTS = 1000
COLLECTOR_REPORTS = 200
#: Whole reports decode at a few ms each: at 10,000 hosts that read alone
#: would take minutes, so it is measured at 1,000 only.
WHOLE_MAX_HOSTS = 1000
HOSTS = (INGEST_REPORTS, 10000)
INGEST_TARGET = 1000.0        # reports/s into PostgreSQL
#: Collector processes ([collector] workers) measured side by side.
PROCESSES = (1, 2)
PARALLEL_REPORTS = 1200
REFRESHES = 5
#: Hosts the roll-back judges in the roll-back read (our moves landed on
#: them within the cool-down).
ROLLBACK_HOSTS = 20
READ_TARGET_MS = 200.0        # all hosts, 10,000 stored


def topology(host, sockets=2, cores=16, threads=2):
    ncores = sockets * cores

    def cpus_of(core_ids):
        return tuple(sorted(c + t * ncores for c in core_ids
                            for t in range(threads)))
    caches, l2, l3 = [], {}, {}
    for core in range(ncores):
        for cpu in cpus_of([core]):
            l2[cpu] = len(caches)
        caches.append(topo_mod.Cache(id=len(caches), level=2,
                                     cpus=cpus_of([core]), size_kib=2048))
    for s in range(sockets):
        group = cpus_of(range(s * cores, (s + 1) * cores))
        for cpu in group:
            l3[cpu] = len(caches)
        caches.append(topo_mod.Cache(id=len(caches), level=3, cpus=group,
                                     size_kib=49152))
    cpus = tuple(topo_mod.Cpu(
        id=cpu, node=(cpu % ncores) // cores, socket=(cpu % ncores) // cores,
        core=cpu % ncores, siblings=cpus_of([cpu % ncores]), l2=l2[cpu],
        l3=l3[cpu]) for cpu in range(ncores * threads))
    nodes = tuple(topo_mod.NumaNode(
        id=n, cpus=cpus_of(range(n * cores, (n + 1) * cores)),
        memory_mib=262144, socket=n) for n in range(sockets))
    return topo_mod.HostTopology(
        hostname=host, cpu_vendor='intel', cpu_model='Xeon Gold 6130',
        nodes=nodes, cpus=cpus, caches=tuple(caches),
        distances=((10, 21), (21, 10)))


#: Agents' reporting interval, and the phase spread of their timestamps.
AGENT_INTERVAL_S = 10.0
#: [store] instance_sample_interval values measured side by side.
SAMPLE_INTERVALS = (api.DEFAULT_SAMPLE_INTERVAL_S, 0.0)


def phase(host_index):
    """A host's offset in seconds: hosts spread evenly over a minute."""
    return (host_index * 7.3) % 60.0


def host_report(host, timestamp, rng):
    topo = topology(host)
    instances = []
    for i in range(INSTANCES):
        node = i % 2
        vcpus = rng.choice((1, 2, 4))
        r = rng.random
        instances.append(report_mod.InstanceRecord(
            uuid=str(uuid.UUID(int=rng.getrandbits(128))),
            name='instance-%08x' % rng.getrandbits(32), vcpus=vcpus,
            memory_mib=4096 * vcpus, flavor='m1.large',
            image_id='image-%d' % (i % 10), project_id='%032x' % (i % 7),
            vcpu_cpus=tuple(rng.sample(topo.nodes[node].cpus, vcpus)),
            cpuset=topo.nodes[node].cpus,
            memory_mib_per_node={node: 4096.0 * vcpus},
            counters=report_mod.Counters(
                instructions=rng.randrange(10 ** 11),
                cycles=rng.randrange(10 ** 11),
                cache_references=rng.randrange(10 ** 9),
                cache_misses=rng.randrange(10 ** 8),
                cpu_time_ns=rng.randrange(10 ** 10),
                vcpu_delay_ns=rng.randrange(10 ** 8),
                mbm_local_bytes=rng.randrange(10 ** 10),
                mbm_total_bytes=rng.randrange(10 ** 10),
                llc_occupancy_bytes=rng.randrange(10 ** 7)),
            metrics=report_mod.Metrics(
                ipc=2 * r(), mpki=20 * r(), mf=r(), llc_misses_per_s=1e7 * r(),
                cpu_util=r(), mem_bw_local_bps=1e9 * r(),
                mem_bw_total_bps=1e9 * r(), remote_memory_ratio=0.0),
            merlin_class=rng.choice(('low/low', 'medium/low', 'high/high'))))
    nodes = tuple(report_mod.NodeAggregate(
        node=n, instances=INSTANCES // 2, vcpus=40.0, mpki_sum=150.0,
        llc_misses_per_s=1e8, mf=0.3, mem_bw_bps=1e10,
        llc_occupancy_bytes=30 << 20, memory_mib=81920.0,
        overhead=report_mod.NodeOverhead(1, 1, 0, 0), mc_ic_pressure=True,
        classes={'low/low': 7, 'medium/low': 7, 'high/high': 6})
        for n in range(2))
    return report_mod.HostReport(
        host=host, timestamp=float(timestamp), interval_s=10.0,
        topology=topo, nodes=nodes, instances=tuple(instances),
        sources=(report_mod.SourceStatus('libvirt', True),
                 report_mod.SourceStatus('resctrl', True),
                 report_mod.SourceStatus('numa_memory', True)))


@contextlib.contextmanager
def postgres_database():
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level='AUTOCOMMIT')
    name = 'contention_bench_%s' % uuid.uuid4().hex[:12]
    with admin.connect() as conn:
        conn.execute(sa.text('CREATE DATABASE %s' % name))
    try:
        yield str(sa.engine.make_url(PG_ADMIN_URL).set(database=name)
                  .render_as_string(hide_password=False))
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text('DROP DATABASE IF EXISTS %s WITH (FORCE)'
                                 % name))
        admin.dispose()


def ingest_rate(store, reports):
    start = time.perf_counter()
    for i in range(0, len(reports), BATCH):
        store.ingest(reports[i:i + BATCH])
    return len(reports) / (time.perf_counter() - start)


def collector_rate(store, payloads):
    endpoint = endpoint_mod.ReportEndpoint(store)
    start = time.perf_counter()
    for i in range(0, len(payloads), BATCH):
        assert endpoint.handle(payloads[i:i + BATCH]) == endpoint_mod.HANDLED
    return len(payloads) / (time.perf_counter() - start)


def payload(report):
    """What the collector gets off the bus: the report's JSON, decoded."""
    return json.loads(json.dumps(report.to_dict()))


def _parallel_worker(url, seed, hosts, collector, sample_interval_s, ready,
                     start, done, finish):
    """One process of :func:`parallel_rate`: its own reports and store."""
    rng = random.Random(seed)
    now = time.time()
    reports = [host_report(host, now + phase(index), rng)
               for index, host in hosts]
    store = open_store(url, sample_interval_s=sample_interval_s)
    endpoint = endpoint_mod.ReportEndpoint(store)
    payloads = [payload(r) for r in reports] if collector else None
    ready.put(os.getpid())
    start.wait()
    began, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(reports), BATCH):
        if collector:
            assert endpoint.handle(payloads[i:i + BATCH]) == (
                endpoint_mod.HANDLED)
        else:
            store.ingest(reports[i:i + BATCH])
    done.put((time.perf_counter() - began, time.process_time() - cpu))
    # Connected until the parent has read the server's CPU time: a
    # backend's time leaves /proc with it.
    finish.wait()
    store.dispose()


def postgres_cpu_s():
    """CPU seconds used so far by the local PostgreSQL server's processes.

    From /proc (0 where it cannot be read): what the database costs per
    report, beside what the collector's own processes cost.
    """
    total = 0
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name) as fh:
                stat = fh.read()
        except OSError:
            continue
        comm = stat[stat.index('(') + 1:stat.rindex(')')]
        if comm.startswith('postgres'):
            fields = stat.rsplit(')', 1)[1].split()
            total += int(fields[11]) + int(fields[12])   # utime, stime
    return total / os.sysconf('SC_CLK_TCK')


def parallel_rate(url, processes, collector, sample_interval_s,
                  total=PARALLEL_REPORTS):
    """Reports/s of ``processes`` processes writing ``total`` reports.

    What ``[collector] workers = processes`` does: each process has its
    own connections and writes its share, in batches of ``BATCH``, at the
    same time as the others (``collector``: through the endpoint, with
    validation; else ``store.ingest`` of validated reports). The rate is
    the total over the slowest process's time.
    """
    context = multiprocessing.get_context('spawn')
    ready, done = context.Queue(), context.Queue()
    start, finish = context.Event(), context.Event()
    tag = 'collector' if collector else 'ingest'
    procs = [context.Process(target=_parallel_worker, args=(
        url, k, [(i, '%s-%d-%05d' % (tag, processes, i))
                 for i in range(k, total, processes)],
        collector, sample_interval_s, ready, start, done, finish))
        for k in range(processes)]
    for proc in procs:
        proc.start()
    for _ in procs:
        ready.get(timeout=600)
    database = postgres_cpu_s()
    start.set()
    times = [done.get(timeout=600) for _ in procs]
    database = postgres_cpu_s() - database
    finish.set()
    for proc in procs:
        proc.join()
    slowest = max(wall for wall, _cpu in times)
    python_ms = sum(cpu for _wall, cpu in times) * 1000 / total
    return total / slowest, python_ms, database * 1000 / total


def add_copies(store, template, first, count):
    """``count`` more hosts whose latest report is ``template`` renamed.

    Only their ``latest_reports`` rows: enough for the node-level read,
    which is all that is measured at 10,000 hosts. The template's
    topology row, stored when it was ingested, serves them all.
    """
    row = api.latest_row(template, template.timestamp)
    old = json.dumps(template.host)
    rows = []
    for i in range(first, first + count):
        host = 'copy-%05d' % i
        rows.append(dict(row, host=host, summary=row['summary'].replace(
            old, json.dumps(host))))
    with store.engine.begin() as conn:
        for i in range(0, len(rows), 1000):
            conn.execute(sa.insert(models.latest_reports), rows[i:i + 1000])


def read_ms(url, hosts, with_instances):
    """(cold, refresh median, refresh max, warm) ms of latest_reports().

    *refresh* is measured ``REFRESHES`` times, each after every host
    reported again: the median is the steady state, the maximum includes
    the occasional full garbage collection over the whole process that
    the decoded reports' allocations trigger.
    """
    store = open_store(url)
    latest, history = models.latest_reports, models.reports
    try:
        start = time.perf_counter()
        got = store.latest_reports(with_instances=with_instances)
        cold = time.perf_counter() - start
        assert len(got) == hosts, (len(got), hosts)
        refreshes = []
        for _ in range(REFRESHES):
            # Every host reported again (same topology): the steady state
            # of a reader refreshing once per agent interval. The latest
            # report and its history row move together.
            with store.engine.begin() as conn:
                conn.execute(sa.update(history).where(sa.exists().where(
                    latest.c.host == history.c.host,
                    latest.c.timestamp == history.c.timestamp)).values(
                    timestamp=history.c.timestamp + 10))
                conn.execute(sa.update(latest).values(
                    timestamp=latest.c.timestamp + 10))
            start = time.perf_counter()
            store.latest_reports(with_instances=with_instances)
            refreshes.append(time.perf_counter() - start)
        start = time.perf_counter()
        store.latest_reports(with_instances=with_instances)
        warm = time.perf_counter() - start
    finally:
        store.dispose()
    return (cold * 1000, statistics.median(refreshes) * 1000,
            max(refreshes) * 1000, warm * 1000)


def rollback_read_ms(url, reports):
    """Median ms of the roll-back's history read over ``ROLLBACK_HOSTS``.

    The hosts are ones whose ingested report stored instance samples
    (``[store] instance_sample_interval``), so each instance is found.
    """
    store = open_store(url)
    cooldown_s = swap.SwapParameters().cooldown_s
    judged = [r for r in reports if write.sampled(
        r, api.DEFAULT_SAMPLE_INTERVAL_S)][:ROLLBACK_HOSTS]
    log = swap.StoreMoveLog(store)
    times = []
    try:
        for _ in range(REFRESHES):
            start = time.perf_counter()
            for r in judged:
                seen = log.seen_before({
                    i.uuid: (r.timestamp + 1, r.timestamp - cooldown_s)
                    for i in r.instances})
                assert len(seen) == len(r.instances), (r.host, len(seen))
            times.append(time.perf_counter() - start)
    finally:
        store.dispose()
    return len(judged), statistics.median(times) * 1000


def reads(url, hosts, results, name):
    results['nodes', name, hosts] = read_ms(url, hosts, False)
    if hosts <= WHOLE_MAX_HOSTS:
        results['read', name, hosts] = read_ms(url, hosts, True)


def _sampling(interval_s):
    return ('every report' if not interval_s
            else 'every %g s (default)' % interval_s)


def run(url, reports, payloads, results, name):
    store = open_store(url)
    store.upgrade()
    try:
        results['ingest', name] = ingest_rate(store, reports)
        if payloads:
            moved = [dict(p, timestamp=p['timestamp'] + 10)
                     for p in payloads]
            results['collector', name] = collector_rate(store, moved)
        reads(url, HOSTS[0], results, name)
        results['rollback', name] = rollback_read_ms(url, reports)
        add_copies(store, reports[0], 0, HOSTS[1] - len(reports))
        reads(url, HOSTS[1], results, name)
    finally:
        store.dispose()


def main():
    rng = random.Random(42)
    now = time.time()
    reports = [host_report('compute-%05d' % i, now + phase(i), rng)
               for i in range(INGEST_REPORTS)]
    payloads = [payload(r) for r in reports[:COLLECTOR_REPORTS]]
    size = len(json.dumps(payloads[0]))
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        run('sqlite:///%s/bench.sqlite' % tmp, reports, None, results,
            'SQLite')
    with postgres_database() as url:
        run(url, reports, payloads, results, 'PostgreSQL')
    for sample in SAMPLE_INTERVALS:
        for processes in PROCESSES:
            for collector in (False, True):
                # Each in a database of its own, all starting empty.
                with postgres_database() as url:
                    store = open_store(url)
                    store.upgrade()
                    store.dispose()
                    results['parallel', collector, processes, sample] = (
                        parallel_rate(url, processes, collector, sample))
    load = os.getloadavg()

    ing_pg = results['ingest', 'PostgreSQL']
    nodes_10k = results['nodes', 'PostgreSQL', HOSTS[1]]
    full_1k = results['read', 'PostgreSQL', HOSTS[0]]
    print('## Telemetry store\n')
    print('Measured %s on %s, %d CPUs (%s).\n' % (
        time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()),
        corun.machine()['model'] or platform.machine(), os.cpu_count(),
        platform.platform()))
    print('Reports of %d instances (%.0f KiB of JSON each), batches of %d. '
          'Load average after the run: %.1f %.1f %.1f on %d CPUs (the '
          'machine is shared with other jobs).\n' % (
              INSTANCES, size / 1024, BATCH, load[0], load[1], load[2],
              os.cpu_count()))
    print('| ingest | reports/s |')
    print('|---|---|')
    print('| store.ingest, SQLite file | %.0f |' % results['ingest', 'SQLite'])
    print('| store.ingest, PostgreSQL | %.0f |' % ing_pg)
    print('| collector path (validate + ingest), PostgreSQL | %.0f |'
          % results['collector', 'PostgreSQL'])
    print()
    print('Side by side, as `[collector] workers` runs them: %s reports '
          'written by N processes at once into one PostgreSQL database '
          '(the database runs on the same %d CPUs). Instance samples: '
          '`[store] instance_sample_interval`, %g s by default (hosts at '
          'spread phases, so about one report in %g carries sample rows) '
          'or 0 (every report).\n'
          % (format(PARALLEL_REPORTS, ','), os.cpu_count(),
             SAMPLE_INTERVALS[0], SAMPLE_INTERVALS[0] / AGENT_INTERVAL_S))
    print('| path | instance samples | processes | reports/s | CPU ms per '
          'report: writers | CPU ms per report: PostgreSQL |')
    print('|---|---|---|---|---|---|')
    for collector, label in ((False, 'store.ingest'),
                             (True, 'collector (validate + ingest)')):
        for sample in SAMPLE_INTERVALS:
            for processes in PROCESSES:
                print('| %s | %s | %d | %.0f | %.2f | %.2f |' % (
                    (label, _sampling(sample), processes)
                    + results['parallel', collector, processes, sample]))
    print()
    for sample in SAMPLE_INTERVALS:
        cpu = [sum(results['parallel', True, n, sample][1:])
               for n in PROCESSES]
        print('With instance samples %s, the collector path costs %.1f-%.1f '
              'ms of CPU per report in all (its processes and the database '
              'together): %d CPUs can store at most about %.0f reports/s '
              'whatever the number of processes.' % (
                  _sampling(sample), min(cpu), max(cpu), os.cpu_count(),
                  os.cpu_count() * 1000 / min(cpu)))
    print('More CPUs, for more workers or for the database on its own '
          'host, raise that ceiling.\n')
    print('| all hosts, `latest_reports(...)` | hosts | cold ms | '
          'refresh ms, median of %d | refresh ms, max | warm ms |'
          % REFRESHES)
    print('|---|---|---|---|---|---|')
    for name in ('SQLite', 'PostgreSQL'):
        for kind, label in (('nodes', 'with_instances=False'),
                            ('read', 'whole reports')):
            for hosts in HOSTS:
                if (kind, name, hosts) not in results:
                    continue
                cold, refresh, worst, warm = results[kind, name, hosts]
                print('| %s, %s | %s | %.0f | %.0f | %.0f | %.1f |' % (
                    name, label, format(hosts, ','), cold, refresh, worst,
                    warm))
    print()
    print('| roll-back read (`StoreMoveLog.seen_before`) | hosts judged | '
          'instances | ms, median of %d |' % REFRESHES)
    print('|---|---|---|---|')
    for name in ('SQLite', 'PostgreSQL'):
        judged, ms = results['rollback', name]
        print('| %s | %d | %d | %.0f |'
              % (name, judged, judged * INSTANCES, ms))
    print()

    def verdict(ok):
        return 'met' if ok else '**missed**'
    print('Targets (PostgreSQL):\n')
    default = SAMPLE_INTERVALS[0]
    best = max(PROCESSES,
               key=lambda n: results['parallel', True, n, default][0])
    rate = results['parallel', True, best, default][0]
    print('- ingest >= %.0f reports/s, the collector\'s whole path '
          '(validation and store) with the default settings: %s (%.0f/s '
          'with %d processes, %.0f/s with 1; store.ingest of validated '
          'reports alone: %.0f/s with %d processes; with the samples of '
          'every report stored, the whole path: %.0f/s with %d processes)'
          % (INGEST_TARGET, verdict(rate >= INGEST_TARGET), rate, best,
             results['parallel', True, PROCESSES[0], default][0],
             results['parallel', False, PROCESSES[-1], default][0],
             PROCESSES[-1],
             results['parallel', True, PROCESSES[-1], 0.0][0],
             PROCESSES[-1]))
    print('- all-hosts read at 10,000 hosts < %.0f ms, node-level view '
          '(what the weigher needs), every host with a new report: %s '
          '(refresh %.0f ms, median of %d, %.0f ms at worst; %.0f ms for '
          'the first read of a process, which also decodes the '
          'topologies; %.1f ms when nothing is new)'
          % (READ_TARGET_MS, verdict(nodes_10k[1] < READ_TARGET_MS),
             nodes_10k[1], REFRESHES, nodes_10k[2], nodes_10k[0],
             nodes_10k[3]))
    print('- whole reports: %s (not measured at 10,000 hosts; refresh at '
          '1,000 hosts already %.0f ms)' % (verdict(False), full_1k[1]))


if __name__ == '__main__':
    main()
