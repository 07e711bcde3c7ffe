"""Which intervals sample a workload's MF with a quarter of the LLC."""

import dataclasses

from oslotest import base

from contention import llc_share
from contention import report
from tests.unit.contention import topologies

MIB = 1 << 20


def record(occupancy_mib, mf=0.4, vcpu_cpus=(0, 1)):
    """An instance holding ``occupancy_mib`` of 16 MiB L3s, MF ``mf``."""
    return report.InstanceRecord(
        uuid='u1', name='instance-u1', vcpus=len(vcpu_cpus) or 1,
        memory_mib=1024, vcpu_cpus=tuple(vcpu_cpus),
        counters=report.Counters(
            llc_occupancy_bytes=(None if occupancy_mib is None
                                 else int(occupancy_mib * MIB))),
        metrics=report.Metrics(mf=mf))


class TestOccupancyShare(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.topo = topologies.host()       # two 16 MiB L3s, CPUs 0-3, 4-7

    def test_share_of_the_l3_its_vcpus_use(self):
        self.assertAlmostEqual(0.25, llc_share.occupancy_share(
            record(4), self.topo))

    def test_vcpus_on_two_l3s_count_both_caches(self):
        self.assertAlmostEqual(0.25, llc_share.occupancy_share(
            record(8, vcpu_cpus=(0, 4)), self.topo))

    def test_unknown_inputs_give_none(self):
        no_size = dataclasses.replace(self.topo, caches=tuple(
            dataclasses.replace(c, size_kib=None) for c in self.topo.caches))
        no_l3 = dataclasses.replace(self.topo, cpus=tuple(
            dataclasses.replace(c, l3=None) for c in self.topo.cpus))
        for rec, topo in ((record(None), self.topo),
                          (record(4, vcpu_cpus=()), self.topo),
                          (record(4, vcpu_cpus=(0, 99)), self.topo),
                          (record(4), no_size), (record(4), no_l3)):
            self.assertIsNone(llc_share.occupancy_share(rec, topo))

    def test_a_cache_that_is_not_an_l3_is_not_used(self):
        l2 = tuple(dataclasses.replace(c, level=2) for c in self.topo.caches)
        topo = dataclasses.replace(self.topo, caches=l2)
        self.assertIsNone(llc_share.occupancy_share(record(4), topo))

    def test_index_is_built_once_and_not_part_of_the_value(self):
        first = self.topo.l3_of_cpus()
        self.assertIs(first, self.topo.l3_of_cpus())
        self.assertEqual((0, 16 * MIB), first[3])
        self.assertEqual(topologies.host(), self.topo)
        self.assertNotIn('_l3_of_cpus_cache', self.topo.to_dict())


class TestSmallLlcMf(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.topo = topologies.host()

    def test_mf_counts_within_the_band(self):
        # 0.2-0.3 of a 16 MiB L3: 3.2-4.8 MiB
        for mib in (3.3, 4, 4.7):
            self.assertEqual(0.4, llc_share.small_llc_mf(record(mib),
                                                         self.topo), mib)

    def test_mf_outside_the_band_does_not(self):
        for mib in (0, 1, 3.1, 4.9, 8, 16, 40):
            self.assertIsNone(llc_share.small_llc_mf(record(mib), self.topo),
                              mib)

    def test_mf_over_one_counts_as_one(self):
        self.assertEqual(1.0, llc_share.small_llc_mf(record(4, mf=1.7),
                                                     self.topo))

    def test_no_mf_no_sample(self):
        self.assertIsNone(llc_share.small_llc_mf(record(4, mf=None),
                                                 self.topo))

    def test_amd_hosts_count_l2_misses_so_give_no_sample(self):
        amd = topologies.host(vendor='amd')
        self.assertEqual('L2', amd.cache_miss_level)
        self.assertIsNone(llc_share.small_llc_mf(record(4), amd))

    def test_placement_model_describes_the_same_share(self):
        from contention.perfmodel import features
        self.assertEqual(llc_share.SMALL_LLC_FRACTION,
                         features.SMALL_LLC_FRACTION)
