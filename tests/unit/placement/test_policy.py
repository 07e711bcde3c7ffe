"""The contention_weigher simulator policy."""

import random

import testtools

from contention import cluster
from contention.placement import policy
from tests.unit.placement import test_models


def view(age=5.0):
    sockets = (cluster.SocketView(id=0, nodes=(0,), cpus=8, memory_mib=32768),
               cluster.SocketView(id=1, nodes=(1,), cpus=8, memory_mib=32768))
    hosts = tuple(cluster.HostView(name=n, sockets=sockets, vcpus_total=16,
                                   memory_mib_total=65536,
                                   telemetry_age_s=age)
                  for n in ('busy', 'calm'))
    noisy = tuple(cluster.InstanceView(
        uuid='n%d' % i, host='busy', vcpus=4, memory_mib=4096, socket=i,
        mpki=30.0, mf=0.9, ipc=0.4) for i in (0, 1))
    return cluster.ClusterView(hosts=hosts, instances=noisy, now=100.0)


ARRIVAL = cluster.InstanceView(uuid='new', host='', vcpus=4,
                               memory_mib=4096, mpki=25.0, mf=0.9, ipc=0.4)


class TestContentionWeigherPolicy(testtools.TestCase):

    def test_places_on_the_calm_host(self):
        model = test_models.trained_bundle().interference
        p = policy.ContentionWeigherPolicy(model=model)
        self.assertEqual('contention_weigher', p.name)
        self.assertEqual('calm', p.place(ARRIVAL, view(), ['busy', 'calm'],
                                         random.Random(0)))

    def test_no_telemetry_defers_to_default(self):
        model = test_models.trained_bundle().interference
        p = policy.ContentionWeigherPolicy(model=model)
        self.assertIsNone(p.place(ARRIVAL, view(age=None), ['busy', 'calm'],
                                  random.Random(0)))
        self.assertIsNone(p.place(ARRIVAL, view(), [], random.Random(0)))

    def test_numa_instance_uses_one_socket(self):
        model = test_models.trained_bundle().interference
        p = policy.ContentionWeigherPolicy(model=model)
        numa = cluster.InstanceView(uuid='new', host='', vcpus=4,
                                    memory_mib=4096, mpki=25.0, mf=0.9,
                                    ipc=0.4, has_numa_topology=True)
        scores = p.scores(numa, view(), ['busy', 'calm'])
        self.assertGreater(scores['calm'].score, scores['busy'].score)
