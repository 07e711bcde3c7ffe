"""The quota phase (Merlin's cheapest reconfiguration, contention.swap.quota)."""

import testtools

from contention import classify
from contention import cluster
from contention import swap
from contention.swap import quota
from tests.unit.contention.swap import views as v


def capped(uuid, socket=0, q=0.5, util=0.5, misses=1e6, mf=0.3, mpki=5.0,
           vcpus=4, **kwargs):
    """A VM using ``util`` of each vCPU under a ``q`` cap."""
    return v.vm(uuid, 'h1', misses, socket=socket, vcpus=vcpus, mf=mf,
                mpki=mpki, cpu_quota=q, cpu_util=util, **kwargs)


def quotas(plan):
    return [(a.instance, a.quota) for a in plan.actions
            if isinstance(a, cluster.CpuQuota)]


class TestNeedsCpu(testtools.TestCase):

    def test_merlin_cpu_sensitivity_above_0_8(self):
        self.assertTrue(quota.needs_cpu(capped('a', util=0.45)))
        self.assertFalse(quota.needs_cpu(capped('a', util=0.35)))

    def test_uncapped_or_unknown_quota_cannot_be_raised(self):
        self.assertFalse(quota.needs_cpu(capped('a', q=1.0, util=1.0)))
        self.assertFalse(quota.needs_cpu(capped('a', q=None, util=1.0)))

    def test_one_more_core_is_capped_at_one(self):
        self.assertEqual(0.75, quota.one_more_core(capped('a', q=0.5)))
        self.assertEqual(1.0, quota.one_more_core(capped('a', q=0.9)))


class TestQuotaPhase(testtools.TestCase):

    def test_raises_a_starved_capped_instance_by_one_core(self):
        view = v.view([v.host('h1')], [capped('a'), capped('b', util=0.2)])
        skipped = []
        actions = quota.quota_phase(view, skipped)
        self.assertEqual([cluster.CpuQuota('a', 'h1', 0.75)], actions)

    def test_no_free_core_on_its_socket(self):
        # 8 CPUs: a (4 x 0.5) and an uncapped 6-vCPU co-runner fill it.
        view = v.view([v.host('h1')], [
            capped('a'), v.vm('c', 'h1', 1e6, vcpus=6, mf=0.1, mpki=1.0)])
        skipped = []
        self.assertEqual([], quota.quota_phase(view, skipped))
        self.assertEqual(['quota_no_cpu'],
                         [s.reason.split(':')[0] for s in skipped])

    def test_granted_raises_use_up_the_free_cores(self):
        # 5 CPUs, 4 allocated (2 x 4 vCPUs x 0.5): one core free, which
        # the more starved instance gets; the other finds none left.
        view = v.view([v.host('h1', cpus=5)], [
            capped('a', util=0.5), capped('b', util=0.48)])
        skipped = []
        actions = quota.quota_phase(view, skipped)
        self.assertEqual([('a', 0.75)],
                         [(a.instance, a.quota) for a in actions])
        self.assertIn('quota_no_cpu', skipped[0].reason)

    def test_mc_ic_sensitive_corunner_is_not_hurt(self):
        # Merlin 5.3: Darwin's extra CPU hurt the ScalParc VMs beside it.
        scalparc = v.vm('s', 'h1', 4e7, vcpus=2, mf=0.75, mpki=22.0)
        view = v.view([v.host('h1')], [capped('a'), scalparc])
        skipped = []
        self.assertEqual([], quota.quota_phase(view, skipped))
        self.assertIn('quota_contention', skipped[0].reason)
        # The same co-runner on the other socket does not stop it.
        view = v.view([v.host('h1')], [
            capped('a'), v.vm('s', 'h1', 4e7, socket=1, vcpus=2, mf=0.75,
                              mpki=22.0)])
        self.assertEqual([('a', 0.75)], [
            (x.instance, x.quota) for x in quota.quota_phase(view)])

    def test_socket_needing_mc_ic_relief_gets_no_more_traffic(self):
        busy = [v.vm('m%d' % i, 'h1', 1e7, vcpus=1, mf=0.5, mpki=30.0)
                for i in range(3)]
        view = v.view([v.host('h1')], [capped('a', mpki=12.0)] + busy)
        skipped = []
        self.assertEqual([], quota.quota_phase(view, skipped))
        self.assertIn('MC/IC relief', skipped[0].reason)

    def test_dedicated_and_unmovable_are_left(self):
        view = v.view([v.host('h1')], [
            capped('a', cpu_policy='dedicated'),
            capped('b', movable=False)])
        self.assertEqual([], quota.quota_phase(view))


class TestInTheStrategies(testtools.TestCase):

    def view(self):
        return v.view([v.host('h1')], [capped('a'), capped('b', socket=1)])

    def test_both_strategies_raise_after_their_moves(self):
        for algorithm in (swap.cache_aware, swap.numa_aware):
            plan = algorithm(self.view(), swap.SwapParameters())
            self.assertEqual([('a', 0.75), ('b', 0.75)], sorted(quotas(plan)))
            self.assertIsInstance(plan.actions[-1], cluster.CpuQuota)

    def test_operators_thresholds_decide_who_needs_cpu(self):
        # util 0.5 under a 0.5 cap uses all of it: above the default 0.8,
        # below an operator's cpu_needs_more of 1.5.
        lax = classify.Thresholds(cpu_needs_more=1.5)
        for algorithm in swap.ALGORITHMS:
            plan = swap.run_audit(self.view(), swap.SwapParameters(),
                                  algorithm=algorithm, thresholds=lax)
            self.assertEqual([], quotas(plan))
            plan = swap.run_audit(self.view(), swap.SwapParameters(),
                                  algorithm=algorithm)
            self.assertEqual(2, len(quotas(plan)))

    def test_parameter_turns_it_off(self):
        params = swap.SwapParameters(cpu_quota=False)
        for algorithm in (swap.cache_aware, swap.numa_aware):
            self.assertEqual([], quotas(algorithm(self.view(), params)))

    def test_raise_is_judged_on_the_socket_after_the_moves(self):
        # b runs beside a on socket 0 (5 CPUs, 6 cores allocated: none
        # free) with its memory on socket 1; the NUMA repair re-pins b to
        # its memory, which frees the cores a's raise needs.
        view = v.view([v.host('h1', cpus=5)], [
            capped('a', util=0.5),
            capped('b', q=1.0, util=0.2, memory_node=1)])
        plan = swap.numa_aware(view, swap.SwapParameters())
        self.assertEqual([cluster.Repin('b', 'h1', 1, move_memory=False),
                          cluster.CpuQuota('a', 'h1', 0.75)],
                         list(plan.actions))
        plan = swap.numa_aware(view, swap.SwapParameters(numa_repair=False))
        self.assertEqual([], quotas(plan))
        self.assertIn('quota_no_cpu', ' '.join(s.reason
                                               for s in plan.skipped))
