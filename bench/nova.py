"""Weigher cost per scheduling request beside Nova's default weighers.

For 100, 1,000 and 5,000 candidate hosts (Nova ``FakeHostState`` objects
with the attributes the default weighers read, and a fresh telemetry
report per host in an in-memory store), time
``HostWeightHandler.get_weighed_objects`` with Nova's default weigher set
(``nova.scheduler.weights.all_weighers``) and with that set plus
``ContentionWeigher``, for a request without a NUMA topology (shared
pool) and one with ``hw:numa_nodes=1`` (landing cell from Nova's
``numa_fit_instance_to_host`` through the landing cache). Steady state:
the store read is cached for its TTL and the landing cache is warm, as in
a scheduler that has served requests before; the cold first request is
shown separately. Also checks that every cached landing answer equals
Nova's own.
"""

import os
import random
import sys
import tempfile
import time

N_HOSTS = (100, 1000, 5000)
REPEATS = {100: 30, 1000: 15, 5000: 3}
TARGET_RATIO = 2.0
#: Issue 20: the weigher adds at most this to a request at 1,000 hosts,
#: read from the weigher's time alone (the handler run with it only): the
#: difference of the two sets' times is the difference of two noisy
#: minima on a shared machine, and the weigher alone pays the handler's
#: per-host work once more, so it is the larger, cautious reading.
TARGET_ADDED_S = 0.020


def _setup_nova():
    import nova.conf
    from nova import objects
    objects.register_all()
    # nova.test (imported by the helpers) registers CLI options, so it
    # must come before anything parses the configuration.
    from tests.nova.unit import test_weigher  # noqa: F401
    return nova.conf.CONF


def _hosts(n, rng, objects, fakes, numa):
    from tests.nova.unit import test_weigher as tw
    hosts = []
    for i in range(n):
        usage = (rng.choice((0, 2, 4, 6)), rng.choice((0, 2, 4, 6)))
        attrs = dict(
            free_ram_mb=rng.randint(1024, 65536), total_usable_ram_mb=65536,
            free_disk_mb=rng.randint(10, 500) * 1024,
            total_usable_disk_gb=500, vcpus_total=16,
            vcpus_used=sum(usage), num_io_ops=rng.randint(0, 4),
            num_instances=rng.randint(0, 8), aggregates=[],
            cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0,
            disk_allocation_ratio=1.0, hypervisor_version=1000000,
            numa_topology=tw.numa_host_topology(usage, cpus_per_cell=8,
                                                memory=32768)
            if numa else None,
            pci_stats=None, metrics=None, failed_builds=0)
        hosts.append(fakes.FakeHostState('host%05d' % i, 'node%05d' % i,
                                         attrs))
    return hosts


def _reports(names, rng):
    from contention import report
    from tests.unit.contention.store import reports as store_reports
    now = time.time()
    result = []
    for name in names:
        loads = (rng.choice((0, 10, 40, 90)), rng.choice((0, 10, 40, 90)))
        nodes = tuple(report.NodeAggregate(
            node=i, instances=2, vcpus=float(v // 10), mpki_sum=float(v),
            mem_bw_bps=v * 64e6) for i, v in enumerate(loads))
        result.append(store_reports.host_report(name, now, (), nodes=nodes))
    return result


def _time(handler, sets, hosts, spec, repeats):
    """Best time of each weigher set, the sets run interleaved.

    The machine is shared, so runs of one set are spread among runs of the
    others and the minimum is kept: noise only ever adds time.
    """
    best = [None] * len(sets)
    for _ in range(repeats):
        for i, weighers in enumerate(sets):
            start = time.perf_counter()
            handler.get_weighed_objects(weighers, hosts, spec)
            elapsed = time.perf_counter() - start
            best[i] = elapsed if best[i] is None else min(best[i], elapsed)
    return best


def main(argv=None):
    """Run the measurement in a child process and print its Markdown.

    Nova cannot share a process with Watcher (``tests/nova/__init__.py``),
    and ``bench.run_all`` may run the Watcher bench in this one.
    """
    argv = sys.argv[1:] if argv is None else argv
    if '--in-process' in argv:
        return measure()
    import subprocess
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        os.pardir)
    proc = subprocess.run([sys.executable, '-m', 'bench.nova',
                           '--in-process'], cwd=root, capture_output=True,
                          text=True)
    sys.stdout.write(proc.stdout)
    if proc.returncode:
        sys.stdout.write('\nThe Nova bench failed:\n\n```\n%s\n```\n'
                         % proc.stderr[-4000:])
    return proc.returncode


def measure():
    import logging
    conf = _setup_nova()
    # the runner captures stdout; keep INFO lines of Nova, alembic and the
    # plugin out of the published figures
    for name in ('', 'nova', 'nova_filters', 'alembic'):
        logging.getLogger(name).setLevel(logging.WARNING)
    from nova.scheduler import weights
    from nova.tests.unit.scheduler import fakes
    from nova import objects

    from contention.perfmodel import persist
    from contention import store as store_api
    import nova_filters
    from nova_filters import landing
    from nova_filters import opts
    from nova_filters import service
    from tests.nova.unit import test_weigher as tw
    from tests.unit.contention.perfmodel import test_models

    opts.register_opts(conf)
    tmp = tempfile.mkdtemp()
    model_path = os.path.join(tmp, 'model.skops')
    persist.save(test_models.trained_bundle(), model_path)
    conf.set_override('model_path', model_path, group='contention')
    conf.set_override('store_cache_ttl', 3600, group='contention')

    handler = weights.HostWeightHandler()
    default = handler.get_matching_classes(
        ['nova.scheduler.weights.all_weighers'])
    rng = random.Random(1)
    rows = []
    agreement = [0, 0]
    for n in N_HOSTS:
        url = 'sqlite:///%s/store-%d.sqlite' % (tmp, n)
        store = store_api.open_store(url)
        store.upgrade()
        names = ['host%05d' % i for i in range(n)]
        store.ingest(_reports(names, rng))
        store.dispose()
        conf.set_override('store_connection', url, group='contention')
        for numa in (False, True):
            service.reset_service()
            hosts = _hosts(n, rng, objects, fakes, numa)
            spec = tw.request(vcpus=4, numa_cells=1 if numa else 0,
                              extra_specs={'contention:profile':
                                           'mpki=25,mf=0.9,ipc=0.4'})
            spec.instance_group = None
            spec.ignore_hosts = None
            spec.force_hosts = None
            spec.force_nodes = None
            base = [cls() for cls in default]
            ours = base + [nova_filters.ContentionWeigher()]
            start = time.perf_counter()
            handler.get_weighed_objects(ours, hosts, spec)
            cold = time.perf_counter() - start
            svc = service.get_service(conf)
            calls_cold = svc.landing.nova_calls
            t_base, t_ours, t_alone = _time(
                handler, [base, ours, ours[-1:]], hosts, spec, REPEATS[n])
            calls_warm = svc.landing.nova_calls - calls_cold
            if numa:
                asked = landing.Request(spec)
                for host in hosts[:200]:
                    agreement[1] += 1
                    cached = svc.landing.nova_nodes(host, asked)
                    fresh = landing.nova_fit(host, spec.numa_topology)
                    agreement[0] += cached == fresh
            rows.append((n, 'hw:numa_nodes=1' if numa else 'shared pool',
                         t_base, t_ours, t_alone, cold, calls_cold,
                         calls_warm))
    print('### Nova weigher cost per scheduling request\n')
    print('Command: `python -m bench.run_all nova`. Steady state = store '
          'read cached (TTL) and landing cache warm; best of %s runs. '
          'Hosts are FakeHostStates with random usage; telemetry is one '
          'fresh report per host.\n' % ', '.join(
              '%d at %d hosts' % (REPEATS[n], n) for n in N_HOSTS))
    print('| hosts | request | Nova default set | default + Contention'
          'Weigher | ratio | ContentionWeigher alone (per host) | cold '
          'first request | numa_fit calls cold / warm |')
    print('|---|---|---|---|---|---|---|---|')
    met = added_met = True
    for n, kind, t_base, t_ours, t_alone, cold, c_cold, c_warm in rows:
        ratio = t_ours / t_base
        if n == 1000:
            met = met and ratio <= TARGET_RATIO
            added_met = added_met and t_alone <= TARGET_ADDED_S
        print('| %d | %s | %.1f ms | %.1f ms | %.2f | %.1f ms (%.0f us) | '
              '%.1f ms | %d / %d |' % (
                  n, kind, t_base * 1e3, t_ours * 1e3, ratio,
                  t_alone * 1e3, t_alone / n * 1e6, cold * 1e3, c_cold,
                  c_warm))
    print('\nTargets at 1,000 hosts, both requests: adding the weigher at '
          'most doubles the weighing time (ratio <= %.1f): **%s**; it adds '
          'at most %.0f ms (ContentionWeigher alone): **%s**.' % (
              TARGET_RATIO, 'met' if met else 'NOT met',
              TARGET_ADDED_S * 1e3, 'met' if added_met else 'NOT met'))
    print('\nCaveat: the hosts here take 16 distinct NUMA usage patterns, '
          'so the landing cache is warm after 16 calls of '
          '`numa_fit_instance_to_host`; where usage states rarely repeat, '
          'each new (usage, request shape) pair costs one call (~0.4 ms) '
          'on hosts whose NUMA nodes differ in telemetry.')
    print('\nLanding-cell agreement with `numa_fit_instance_to_host` '
          '(cached answer vs a fresh call, %d hosts): %d/%d.'
          % (agreement[1], agreement[0], agreement[1]))
    service.reset_service()
    return 0


if __name__ == '__main__':
    sys.exit(main())
