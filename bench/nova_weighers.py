"""Nova's real default weighers as a simulator placement policy.

Nova and Watcher cannot share a process (``tests/nova/__init__.py``) and
the evaluation imports Watcher, so Nova runs in a child process
(``python -m bench.nova_weighers --serve``) that answers one JSON line
per arrival: the candidate hosts' usage as Nova's ``HostState`` would hold
it, and the flavor; it weighs them with
``nova.scheduler.weights.all_weighers`` (Nova's default
``[filter_scheduler] weight_classes``, default multipliers) through
``HostWeightHandler`` on ``FakeHostState`` objects and answers the host
Nova would pick (the first; ``host_subset_size`` 1, Nova's default).
:class:`NovaWeighersPolicy` is the parent's side: a
:class:`contention.policy.Policy` whose ``place()`` asks the child.
The socket is still chosen by the simulator (Nova does not pick one for
an instance without a NUMA topology; the kernel does).
"""

import json
import os
import subprocess
import sys

from contention import policy

ROOT = os.path.normpath(os.path.join(os.path.dirname(
    os.path.abspath(__file__)), os.pardir))


class NovaWeighersPolicy(policy.Policy):
    """Place arrivals where Nova's default weighers put them."""

    name = 'nova_weighers'

    def __init__(self):
        self._child = None

    def _ask(self, request):
        if self._child is None:
            self._child = subprocess.Popen(
                [sys.executable, '-m', 'bench.nova_weighers', '--serve'],
                cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, text=True)
        self._child.stdin.write(json.dumps(request) + '\n')
        self._child.stdin.flush()
        line = self._child.stdout.readline()
        if not line:
            raise RuntimeError('the Nova weigher child process exited')
        return json.loads(line)

    def close(self):
        if self._child is not None:
            self._child.stdin.close()
            self._child.wait(timeout=30)
            self._child = None

    def place(self, instance, view, candidates, rng):
        hosts = []
        for name in candidates:
            host = view.host(name)
            on = view.instances_on(name)
            hosts.append(dict(
                name=name,
                vcpus_total=host.vcpus_total,
                vcpus_used=sum(i.vcpus for i in on),
                total_usable_ram_mb=host.memory_mib_total,
                free_ram_mb=host.memory_mib_total - sum(
                    i.memory_mib for i in on),
                num_instances=len(on),
                cpu_allocation_ratio=host.cpu_allocation_ratio,
                ram_allocation_ratio=host.ram_allocation_ratio))
        answer = self._ask(dict(vcpus=instance.vcpus,
                                memory_mb=instance.memory_mib, hosts=hosts))
        return answer['host']


def serve():
    """The child: weigh each request line with Nova's default weighers."""
    import logging
    logging.disable(logging.CRITICAL)
    from bench import nova as nova_bench
    nova_bench._setup_nova()
    from nova import objects
    from nova.scheduler import weights
    from nova.tests.unit.scheduler import fakes

    handler = weights.HostWeightHandler()
    classes = handler.get_matching_classes(
        ['nova.scheduler.weights.all_weighers'])
    weighers = [cls() for cls in classes]
    for line in sys.stdin:
        req = json.loads(line)
        hosts = []
        for h in req['hosts']:
            attrs = dict(
                free_ram_mb=h['free_ram_mb'],
                total_usable_ram_mb=h['total_usable_ram_mb'],
                free_disk_mb=1024 * 1024, total_usable_disk_gb=1024,
                vcpus_total=h['vcpus_total'], vcpus_used=h['vcpus_used'],
                num_io_ops=0, num_instances=h['num_instances'],
                aggregates=[], instances={},
                cpu_allocation_ratio=h['cpu_allocation_ratio'],
                ram_allocation_ratio=h['ram_allocation_ratio'],
                disk_allocation_ratio=1.0, hypervisor_version=1000000,
                numa_topology=None, pci_stats=None, metrics=None,
                failed_builds=0)
            hosts.append(fakes.FakeHostState(h['name'], h['name'], attrs))
        spec = objects.RequestSpec(
            flavor=objects.Flavor(vcpus=req['vcpus'],
                                  memory_mb=req['memory_mb'],
                                  extra_specs={}),
            scheduler_hints={}, image=objects.ImageMeta(),
            numa_topology=None, instance_group=None, ignore_hosts=None,
            force_hosts=None, force_nodes=None)
        weighed = handler.get_weighed_objects(weighers, hosts, spec)
        sys.stdout.write(json.dumps({'host': weighed[0].obj.host}) + '\n')
        sys.stdout.flush()


if __name__ == '__main__':
    if '--serve' in sys.argv[1:]:
        serve()
