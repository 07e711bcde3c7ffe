"""The contention_weigher simulator policy and its filter stage."""

import random

import testtools

from contention import cluster
from contention.perfmodel import features
from contention.sim.policies import weigher
from tests.unit.contention.perfmodel import test_models


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
        p = weigher.ContentionWeigherPolicy(model=model)
        self.assertEqual('contention_weigher', p.name)
        self.assertEqual('calm', p.place(ARRIVAL, view(), ['busy', 'calm'],
                                         random.Random(0)))

    def test_no_telemetry_defers_to_default(self):
        model = test_models.trained_bundle().interference
        p = weigher.ContentionWeigherPolicy(model=model)
        self.assertIsNone(p.place(ARRIVAL, view(age=None), ['busy', 'calm'],
                                  random.Random(0)))
        self.assertIsNone(p.place(ARRIVAL, view(), [], random.Random(0)))

    def test_numa_instance_uses_one_socket(self):
        model = test_models.trained_bundle().interference
        p = weigher.ContentionWeigherPolicy(model=model)
        numa = cluster.InstanceView(uuid='new', host='', vcpus=4,
                                    memory_mib=4096, mpki=25.0, mf=0.9,
                                    ipc=0.4, has_numa_topology=True)
        scores = p.scores(numa, view(), ['busy', 'calm'])
        self.assertGreater(scores['calm'].score, scores['busy'].score)


def loaded_view():
    """Hosts whose sockets carry these (vCPUs, MPKI) co-runners.

    ``hot``: both sockets above the 100 MPKI trigger; ``half``: socket 0
    above it, socket 1 calm with more free CPUs; ``calm``: idle;
    ``stale``: as hot, without fresh telemetry.
    """
    sockets = (cluster.SocketView(id=0, nodes=(0,), cpus=8, memory_mib=32768),
               cluster.SocketView(id=1, nodes=(1,), cpus=8, memory_mib=32768))
    loads = {'hot': {0: [(2, 60.0), (2, 60.0)], 1: [(2, 60.0), (2, 60.0)]},
             'half': {0: [(3, 60.0), (3, 60.0)], 1: [(2, 10.0)]},
             'calm': {},
             'stale': {0: [(2, 60.0), (2, 60.0)], 1: [(2, 60.0), (2, 60.0)]}}
    hosts = tuple(cluster.HostView(
        name=n, sockets=sockets, vcpus_total=16, memory_mib_total=65536,
        telemetry_age_s=None if n == 'stale' else 5.0) for n in loads)
    instances = tuple(
        cluster.InstanceView(uuid='%s-%d-%d' % (host, socket, i), host=host,
                             vcpus=vcpus, memory_mib=2048, socket=socket,
                             mpki=mpki, mf=0.9, ipc=0.4)
        for host, per_socket in loads.items()
        for socket, corunners in per_socket.items()
        for i, (vcpus, mpki) in enumerate(corunners))
    return cluster.ClusterView(hosts=hosts, instances=instances, now=100.0)


def arrival(image):
    return cluster.InstanceView(uuid='new', host='', vcpus=2,
                                memory_mib=2048, image_id=image)


HOSTS = ('hot', 'half', 'calm', 'stale')


class TestFilterStage(testtools.TestCase):

    def policy(self, **kwargs):
        kwargs.setdefault('with_filter', 'true')
        kwargs.setdefault('sensitive_images', 'mcf, lbm')
        return weigher.ContentionWeigherPolicy(train_on_bind=False, **kwargs)

    def test_sensitive_arrival_skips_saturated_landing_nodes(self):
        p = self.policy()
        # half: it lands on the calm socket 1 (most free CPUs), so it
        # passes; stale: no fresh telemetry passes (fail open, as Nova)
        self.assertEqual(('half', 'calm', 'stale'),
                         p.filter_hosts(arrival('mcf'), loaded_view(), HOSTS))
        self.assertEqual(1, p.filter_stats.sensitive_arrivals)
        self.assertEqual(1, p.filter_stats.hosts_rejected)
        self.assertEqual(120.0, p.filter_stats.peak_landing_mpki)
        self.assertIn('1 contention:sensitive arrivals (images: lbm, mcf); '
                      '1 candidate hosts rejected', p.notes[-1])

    def test_pool_landing_judges_every_node(self):
        p = self.policy(landing='pool')
        self.assertEqual(('calm', 'stale'),
                         p.filter_hosts(arrival('lbm'), loaded_view(), HOSTS))

    def test_insensitive_arrival_passes_everywhere(self):
        p = self.policy()
        self.assertEqual(HOSTS, p.filter_hosts(arrival('povray'),
                                               loaded_view(), HOSTS))
        self.assertEqual(0, p.filter_stats.sensitive_arrivals)

    def test_off_by_default(self):
        p = weigher.ContentionWeigherPolicy(sensitive_images='mcf')
        self.assertFalse(p.with_filter)
        self.assertEqual(HOSTS, p.filter_hosts(arrival('mcf'),
                                               loaded_view(), HOSTS))
        self.assertEqual([], p.notes)

    def test_everything_saturated_leaves_no_host(self):
        p = self.policy()
        self.assertEqual((), p.filter_hosts(arrival('mcf'), loaded_view(),
                                            ('hot',)))

    def test_thresholds_from_strings(self):
        p = self.policy(filter_mpki_threshold='150',
                        filter_overhead_threshold='12')
        self.assertEqual(150.0, p.filter_mpki_threshold)
        self.assertEqual(12, p.filter_overhead_threshold)
        self.assertEqual(HOSTS, p.filter_hosts(arrival('mcf'),
                                               loaded_view(), HOSTS))

    def test_sensitive_by_the_flavor_profiles_merlin_class(self):
        p = self.policy(sensitive_images=None)
        p.profiles = {
            # high MPKI, high MF: MC/IC-sensitive
            'mcf': features.InstanceProfile(mpki=30, mf=0.9, ipc=0.4),
            # medium MPKI, low MF: cache-sensitive
            'omnetpp': features.InstanceProfile(mpki=8, mf=0.2, ipc=0.8),
            # low MPKI: neither
            'povray': features.InstanceProfile(mpki=0.5, mf=0.9, ipc=2.0)}
        self.assertEqual({'mcf', 'omnetpp'}, p.sensitive())
        self.assertEqual(('half', 'calm', 'stale'),
                         p.filter_hosts(arrival('mcf'), loaded_view(), HOSTS))
        self.assertEqual(HOSTS, p.filter_hosts(arrival('povray'),
                                               loaded_view(), HOSTS))
        # a model file brings no profiles: nothing is sensitive
        p.profiles = {}
        self.assertEqual(HOSTS, p.filter_hosts(arrival('mcf'),
                                               loaded_view(), HOSTS))


class TestAbstentionCounted(testtools.TestCase):

    def test_far_profile_is_abstained_on_and_noted(self):
        pol = weigher.ContentionWeigherPolicy(
            model=test_models.trained_bundle(samples=5).interference)
        # ten times the miss rate of anything the model trained on
        far = features.parse_profile('mpki=400,mf=0.9,ipc=0.4', vcpus=1)
        self.patch(pol, 'profile_of', lambda instance, view: far)
        self.assertIsNone(pol.place(ARRIVAL, view(), ['busy', 'calm'],
                                    random.Random(0)))
        scores = pol.scores(ARRIVAL, view(), ['busy', 'calm'])
        self.assertTrue(all(s.abstained for s in scores.values()))
        self.assertEqual(4, pol.model_counts['abstained'])
        self.assertIn('abstained on 4 of 4', ' '.join(pol.notes))
