"""ContentionWeigher, ContentionFilter and their service, with Nova's fakes.

Nova's own ``FakeHostState`` and ``HostWeightHandler`` run the weigher as
the scheduler does (normalisation, multipliers); at least two hosts are
used, or Nova calls no weigher at all.
"""

import os
import random
import time

import fixtures
from nova import conf as nova_conf
from nova import objects
from nova.scheduler import weights
from nova import test
from nova.tests.unit.scheduler import fakes
from oslo_utils.fixture import uuidsentinel

from contention import report
from contention.perfmodel import persist
from contention import store as store_api
import nova_filters
from nova_filters import landing
from nova_filters import opts
from nova_filters import service
from tests.unit.contention.perfmodel import test_models
from tests.unit.contention.store import reports as store_reports

CALM = report.NodeAggregate(node=0, instances=0, vcpus=0.0, mpki_sum=0.0)


def node(node_id, mpki_sum, vcpus, overhead=None):
    return report.NodeAggregate(
        node=node_id, instances=int(vcpus // 2), vcpus=float(vcpus),
        mpki_sum=float(mpki_sum), mem_bw_bps=mpki_sum * 64e6,
        overhead=overhead)


def host_report(host, nodes, age=0.0):
    return store_reports.host_report(host, time.time() - age, (),
                                     nodes=tuple(nodes))


def numa_host_topology(usage=(0, 0), cpus_per_cell=4, memory=8192):
    cells = []
    for cell_id, used in enumerate(usage):
        cpus = set(range(cell_id * cpus_per_cell,
                         (cell_id + 1) * cpus_per_cell))
        cells.append(objects.NUMACell(
            id=cell_id, cpuset=cpus, pcpuset=set(), memory=memory,
            cpu_usage=used, memory_usage=0, pinned_cpus=set(),
            mempages=[objects.NUMAPagesTopology(size_kb=4, total=memory * 256,
                                                used=0, reserved=0)],
            siblings=[{c} for c in sorted(cpus)], socket=cell_id))
    return objects.NUMATopology(cells=cells)


def request(vcpus=2, extra_specs=None, hints=None, numa_cells=0,
            image_id=None, move=False):
    flavor = objects.Flavor(vcpus=vcpus, memory_mb=2048,
                            extra_specs=extra_specs or {})
    spec = objects.RequestSpec(
        flavor=flavor, scheduler_hints=hints or {},
        instance_uuid=uuidsentinel.instance,
        image=objects.ImageMeta(id=image_id) if image_id
        else objects.ImageMeta(), numa_topology=None)
    if numa_cells:
        per = vcpus // numa_cells
        spec.numa_topology = objects.InstanceNUMATopology(cells=[
            objects.InstanceNUMACell(
                id=i, cpuset=set(range(i * per, (i + 1) * per)),
                pcpuset=set(), memory=2048 // numa_cells,
                cpu_policy=None)
            for i in range(numa_cells)])
    if move:
        spec.requested_destination = objects.Destination(
            cell=objects.CellMapping(uuid=uuidsentinel.cell))
    return spec


class ContentionTestBase(test.NoDBTestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.model_path = os.path.join(self.dir, 'model.skops')
        self.url = 'sqlite:///%s/store.sqlite' % self.dir
        self.store = store_api.open_store(self.url)
        self.store.upgrade()
        self.addCleanup(self.store.dispose)
        opts.register_opts(nova_conf.CONF)
        self.flags(model_path=self.model_path, store_connection=self.url,
                   store_cache_ttl=0, group='contention')
        service.reset_service()
        self.addCleanup(service.reset_service)

    def save_model(self):
        persist.save(test_models.trained_bundle(), self.model_path)

    def hosts(self, *names, **attrs):
        return [fakes.FakeHostState(name, 'node-' + name, dict(
            attrs.get(name, {}), aggregates=[], numa_topology=None,
            cpu_allocation_ratio=1.0, ram_allocation_ratio=1.0))
            for name in names]


class TestContentionWeigher(ContentionTestBase):

    def setUp(self):
        super().setUp()
        self.handler = weights.HostWeightHandler()
        self.weigher = nova_filters.ContentionWeigher()

    def weigh(self, hosts, spec):
        weighed = self.handler.get_weighed_objects([self.weigher], hosts,
                                                   spec)
        return [(w.obj.host, round(w.weight, 6)) for w in weighed]

    def seed(self, age=0.0):
        self.store.ingest([
            host_report('calm', [CALM, node(1, 0, 0)], age=age),
            host_report('busy', [node(0, 90, 4), node(1, 80, 4)], age=age),
        ])

    def test_ranking_follows_the_model(self):
        self.save_model()
        self.seed()
        spec = request(extra_specs={'contention:profile':
                                    'mpki=25,mf=0.9,ipc=0.4'})
        ranked = self.weigh(self.hosts('busy', 'calm'), spec)
        self.assertEqual('calm', ranked[0][0])
        scores = self.weigher.last_scores
        self.assertGreater(scores['calm'].score, scores['busy'].score)
        # fixed 0-1 scale: the normalised weight is the raw score
        self.assertAlmostEqual(scores['calm'].score, ranked[0][1], 5)

    def test_one_store_read_and_one_prediction_per_request(self):
        self.save_model()
        self.seed()
        svc = service.get_service(nova_conf.CONF)
        bundle = svc.model()
        reads = []
        real_read = svc._get_reader().store.latest_reports
        self.patch(svc._get_reader().store, 'latest_reports',
                   lambda *a, **k: reads.append(1) or real_read(*a, **k))
        predictions = []
        real_predict = bundle.interference.predict_confident
        self.patch(bundle.interference, 'predict_confident',
                   lambda X: predictions.append(len(X)) or real_predict(X))
        hosts = self.hosts('busy', 'calm', 'other')
        self.weigh(hosts, request())
        self.assertEqual(1, len(reads))
        # one batch: a row per distinct node state of the two hosts with
        # telemetry (the instance floats over both nodes of each);
        # 'other' has none
        self.assertEqual([4], predictions)

    def test_neutral_without_model_warns_once(self):
        # A fresh cloud has no model yet: expected, so a warning, not an
        # error, and one per process however many requests and calls.
        self.seed()
        log = self.useFixture(fixtures.FakeLogger(
            name='nova_filters', format='%(levelname)s %(message)s'))
        for _ in range(3):
            ranked = self.weigh(self.hosts('busy', 'calm'), request())
            self.assertEqual({0.5}, {w for _, w in ranked})
        svc = service.get_service(nova_conf.CONF)
        self.assertIsNone(svc.model())
        self.assertEqual(1, log.output.count(
            'WARNING Contention weigher is neutral'), log.output)
        self.assertIn('does not exist', log.output)
        self.assertNotIn('ERROR', log.output)
        self.assertEqual((1, 0), (svc.counts['model_missing'],
                                  svc.counts['model_load_failures']))
        # Once it appears it is loaded, and scores.
        self.save_model()
        ranked = self.weigh(self.hosts('busy', 'calm'), request())
        self.assertEqual('calm', ranked[0][0])

    def test_unreadable_or_corrupt_model_is_an_error_once(self):
        self.seed()
        log = self.useFixture(fixtures.FakeLogger(
            name='nova_filters', format='%(levelname)s %(message)s'))
        os.mkdir(self.model_path)       # there, but cannot be read
        for _ in range(2):
            ranked = self.weigh(self.hosts('busy', 'calm'), request())
            self.assertEqual({0.5}, {w for _, w in ranked})
        self.assertEqual(1, log.output.count(
            'ERROR Contention weigher is neutral'), log.output)
        self.assertIn('cannot read', log.output)
        os.rmdir(self.model_path)
        with open(self.model_path, 'w') as f:
            f.write('not a model')
        for _ in range(2):
            ranked = self.weigh(self.hosts('busy', 'calm'), request())
            self.assertEqual({0.5}, {w for _, w in ranked})
        self.assertEqual(2, log.output.count(
            'ERROR Contention weigher is neutral'), log.output)
        self.assertNotIn('WARNING', log.output)

    def test_invalid_model_is_neutral_then_reloaded(self):
        self.seed()
        with open(self.model_path, 'w') as f:
            f.write('not a model')
        ranked = self.weigh(self.hosts('busy', 'calm'), request())
        self.assertEqual({0.5}, {w for _, w in ranked})
        self.save_model()
        os.utime(self.model_path, ns=(time.time_ns() + 10 ** 9,) * 2)
        ranked = self.weigh(self.hosts('busy', 'calm'), request())
        self.assertEqual('calm', ranked[0][0])
        self.assertNotEqual(ranked[0][1], ranked[1][1])

    def test_invalid_model_is_loaded_once_per_file_version(self):
        self.seed()
        with open(self.model_path, 'w') as f:
            f.write('not a model')
        loads = []
        real_load = persist.load
        self.patch(persist, 'load',
                   lambda path: loads.append(path) or real_load(path))
        for _ in range(3):
            ranked = self.weigh(self.hosts('busy', 'calm'), request())
            self.assertEqual({0.5}, {w for _, w in ranked})
        self.assertEqual(1, len(loads))
        svc = service.get_service(nova_conf.CONF)
        self.assertEqual(1, svc.counts['model_load_failures'])

    def test_far_outside_the_training_domain_is_neutral_and_said(self):
        self.save_model()
        self.seed()
        log = self.useFixture(fixtures.FakeLogger(name='nova_filters'))
        # a miss rate ten times anything the model was trained on
        spec = request(extra_specs={'contention:profile':
                                    'mpki=400,mf=0.9,ipc=0.4'})
        ranked = self.weigh(self.hosts('busy', 'calm'), spec)
        self.assertEqual({0.5}, {w for _, w in ranked})
        scores = self.weigher.last_scores
        self.assertTrue(all(s.abstained for s in scores.values()))
        self.assertIn('outside the training data (mpki',
                      scores['calm'].neutral_reason)
        self.assertGreater(scores['calm'].excess, 0.5)
        self.assertIn('neutral on 2 host(s) where the model is unsure',
                      log.output)
        self.assertIn('outside the training data', log.output)
        svc = service.get_service(nova_conf.CONF)
        self.assertEqual(2, svc.counts['abstained'])
        # the limit is the operator's
        self.flags(max_domain_excess=1e9, max_prediction_spread=1.0,
                   group='contention')
        ranked = self.weigh(self.hosts('busy', 'calm'), spec)
        self.assertFalse(any(s.abstained for s in
                             self.weigher.last_scores.values()))
        self.assertEqual(2, svc.counts['scored'])

    def test_in_domain_request_is_scored_not_abstained(self):
        self.save_model()
        # within what the model trained on (test_models.trained_bundle:
        # up to ~25 co-runner MPKI, half the cell's CPUs busy)
        self.store.ingest([
            host_report('calm', [CALM, node(1, 0, 0)]),
            host_report('mid', [node(0, 12, 1), node(1, 12, 1)])])
        spec = request(extra_specs={'contention:profile':
                                    'mpki=12,mf=0.6,ipc=0.8'})
        ranked = self.weigh(self.hosts('mid', 'calm'), spec)
        scores = self.weigher.last_scores
        self.assertFalse(any(s.neutral for s in scores.values()))
        self.assertEqual('calm', ranked[0][0])
        self.assertLess(scores['calm'].spread, 0.2)

    def test_any_stored_value_is_survived(self):
        # Values that slipped past the store's validation: each bad host
        # is neutral with the reason, the good one is still scored, and
        # nothing leaves Nova's HostWeightHandler.
        self.save_model()
        bad = {'inf': dict(mpki_sum=float('inf')),
               'nan': dict(mpki_sum=float('nan')),
               'huge': dict(mpki_sum=1e300),       # bandwidth overflows
               'f32': dict(mpki_sum=1e39),         # beyond float32
               'bw': dict(mpki_sum=5.0, mem_bw_bps=float('inf')),
               'neg_inf': dict(mpki_sum=5.0, vcpus=float('-inf'))}

        def reports(hosts):
            result = {}
            for name in hosts:
                fields = dict(dict(instances=1, vcpus=2.0),
                              **bad.get(name, dict(mpki_sum=3.0)))
                result[name] = host_report(name, [
                    report.NodeAggregate(node=0, **fields),
                    report.NodeAggregate(node=1, **fields)])
            return result
        svc = service.get_service(nova_conf.CONF)
        self.patch(svc, 'fresh_reports', reports)
        log = self.useFixture(fixtures.FakeLogger(name='nova_filters'))
        names = sorted(bad) + ['good']
        ranked = dict(self.weigh(self.hosts(*names), request()))
        scores = self.weigher.last_scores
        for name in bad:
            self.assertEqual(0.5, ranked[name], name)
            self.assertIn('unusable telemetry', scores[name].neutral_reason)
        self.assertFalse(scores['good'].neutral)
        self.assertIn('with unusable telemetry', log.output)
        self.assertEqual(len(bad), svc.counts['unusable_telemetry'])

    def test_an_error_while_scoring_leaves_every_host_neutral(self):
        self.save_model()
        self.seed()
        from contention.perfmodel import scoring

        def broken(*args, **kwargs):
            raise RuntimeError('a bug')
        self.patch(scoring, 'score_hosts', broken)
        log = self.useFixture(fixtures.FakeLogger(name='nova_filters'))
        ranked = self.weigh(self.hosts('busy', 'calm'), request())
        self.assertEqual({0.5}, {w for _, w in ranked})
        self.assertIn('Contention weigher failed', log.output)
        self.assertIn('a bug', log.output)

    def test_stale_host_is_neutral(self):
        self.save_model()
        self.seed(age=3600)
        ranked = self.weigh(self.hosts('busy', 'calm'), request())
        self.assertEqual({0.5}, {w for _, w in ranked})
        self.store.ingest([host_report('calm', [CALM, node(1, 0, 0)])])
        self.weigh(self.hosts('busy', 'calm'), request())
        self.assertTrue(self.weigher.last_scores['busy'].neutral)
        self.assertFalse(self.weigher.last_scores['calm'].neutral)

    def test_moves_neutral_unless_configured(self):
        self.save_model()
        self.seed()
        ranked = self.weigh(self.hosts('busy', 'calm'), request(move=True))
        self.assertEqual({0.5}, {w for _, w in ranked})
        rebuild = request(hints={'_nova_check_type': ['rebuild']})
        ranked = self.weigh(self.hosts('busy', 'calm'), rebuild)
        self.assertEqual({0.5}, {w for _, w in ranked})
        self.flags(apply_to_moves=True, group='contention')
        ranked = self.weigh(self.hosts('busy', 'calm'), request(move=True))
        self.assertEqual('calm', ranked[0][0])

    def test_aggregate_multiplier(self):
        host = self.hosts('calm')[0]
        self.assertEqual(1.0, self.weigher.weight_multiplier(host))
        self.flags(weight_multiplier=3.0, group='contention')
        self.assertEqual(3.0, self.weigher.weight_multiplier(host))
        host.aggregates = [objects.Aggregate(
            id=1, name='a', hosts=['calm'],
            metadata={'contention_weight_multiplier': '0.5'})]
        self.assertEqual(0.5, self.weigher.weight_multiplier(host))
        self.save_model()
        self.seed()
        busy, calm = self.hosts('busy', 'calm')
        calm.aggregates = host.aggregates
        weighed = dict(self.weigh([busy, calm], request()))
        score = self.weigher.last_scores
        self.assertAlmostEqual(3.0 * score['busy'].score, weighed['busy'], 5)
        self.assertAlmostEqual(0.5 * score['calm'].score, weighed['calm'], 5)


class TestProfile(ContentionTestBase):

    def setUp(self):
        super().setUp()
        self.svc = service.get_service(nova_conf.CONF)

    def test_precedence(self):
        self.store.ingest([store_reports.host_report('h', time.time(), [
            store_reports.instance('u1', image_id=uuidsentinel.image,
                                   mpki=7.0, mf=0.3, ipc=1.2)])])
        hint = {'contention_profile': ['mpki=1,mf=0.1,ipc=2']}
        spec = {'contention:profile': 'mpki=20,mf=0.8,ipc=0.5'}
        p = self.svc.profile(request(hints=hint, extra_specs=spec,
                                     image_id=uuidsentinel.image))
        self.assertEqual(('hint', 1.0), (p.source, p.mpki))
        p = self.svc.profile(request(extra_specs=spec,
                                     image_id=uuidsentinel.image))
        self.assertEqual(('flavor', 20.0), (p.source, p.mpki))
        p = self.svc.profile(request(image_id=uuidsentinel.image, vcpus=4))
        self.assertEqual(('image', 7.0, 4), (p.source, p.mpki, p.vcpus))
        p = self.svc.profile(request(image_id=uuidsentinel.other))
        self.assertEqual('prior', p.source)

    def test_malformed_hint_and_spec_logged_and_ignored(self):
        log = self.useFixture(fixtures.FakeLogger(name='nova_filters'))
        p = self.svc.profile(request(
            hints={'contention_profile': ['mpki=lots']},
            extra_specs={'contention:profile': 'mpki=3,mf=0.2,ipc=1'}))
        self.assertEqual(('flavor', 3.0), (p.source, p.mpki))
        self.assertIn('scheduler hint contention_profile ignored', log.output)
        p = self.svc.profile(request(
            extra_specs={'contention:profile': 'mpki=3'}))
        self.assertEqual('prior', p.source)
        self.assertIn('missing ipc', log.output)


class TestLanding(ContentionTestBase):

    def test_prediction_agrees_with_nova(self):
        rng = random.Random(7)
        predictor = landing.LandingPredictor()
        host = self.hosts('h')[0]
        checked = 0
        for _ in range(200):
            usage = (rng.randint(0, 4), rng.randint(0, 4))
            host.numa_topology = numa_host_topology(usage)
            host.cpu_allocation_ratio = rng.choice([1.0, 2.0])
            spec = request(vcpus=rng.choice([1, 2, 4]),
                           numa_cells=rng.choice([1, 1, 2]))
            if len(spec.numa_topology.cells) == 2 and spec.flavor.vcpus == 1:
                continue
            expected = landing.nova_fit(host, spec.numa_topology)
            self.assertEqual(expected, predictor.nova_nodes(
                host, landing.Request(spec)))
            checked += 1
        self.assertGreater(predictor.hits, 0)
        self.assertLess(predictor.nova_calls, checked)

    def test_spread_on_the_less_used_cell(self):
        host = self.hosts('h')[0]
        host.numa_topology = numa_host_topology((3, 1))
        states = landing.Cells({0: 'a', 1: 'b'})
        nodes = landing.LandingPredictor().nodes(
            host, landing.Request(request(numa_cells=1)), states)
        self.assertEqual((1,), nodes)

    def test_packing_strategy_is_part_of_the_request(self):
        # The request is read once per scheduling request; an operator who
        # switches Nova's packing strategy gets Nova's new answer, not the
        # cached one of the other strategy.
        host = self.hosts('h')[0]
        host.numa_topology = numa_host_topology((3, 1))
        predictor = landing.LandingPredictor()
        for packing, expected in ((True, (0,)), (False, (1,))):
            self.flags(packing_host_numa_cells_allocation_strategy=packing,
                       group='compute')
            asked = landing.Request(request(vcpus=1, numa_cells=1))
            self.assertEqual(1, asked.cell_count)
            self.assertEqual(expected, predictor.nova_nodes(host, asked))
            self.assertEqual(expected,
                             landing.nova_fit(host, asked.topology))
        self.assertEqual(2, predictor.nova_calls)

    def test_an_answer_lives_as_long_as_the_host_usage(self):
        # Kept on the host's NUMATopology, which Nova replaces when the
        # usage changes: a later request of the same shape, even through
        # another predictor, finds it there; new usage asks Nova again.
        host = self.hosts('h')[0]
        host.numa_topology = numa_host_topology((3, 1))
        asked = landing.Request(request(vcpus=1, numa_cells=1))
        self.assertEqual((1,), landing.LandingPredictor().nova_nodes(
            host, asked))
        predictor = landing.LandingPredictor()
        self.assertEqual((1,), predictor.nova_nodes(host, asked))
        self.assertEqual((0, 1), (predictor.nova_calls, predictor.hits))
        host.numa_topology = numa_host_topology((1, 3))
        self.assertEqual((0,), predictor.nova_nodes(host, asked))
        self.assertEqual(1, predictor.nova_calls)

    def test_a_host_keeps_a_bounded_number_of_answers(self):
        host = self.hosts('h')[0]
        host.numa_topology = numa_host_topology((3, 1))
        asked = landing.Request(request(vcpus=1, numa_cells=1))
        predictor = landing.LandingPredictor()
        for k in range(2 * landing._ANSWERS_KEPT):
            host.cpu_allocation_ratio = 1.0 + k
            self.assertEqual(landing.nova_fit(host, asked.topology),
                             predictor.nova_nodes(host, asked))
            kept = host.numa_topology.__dict__[landing._ANSWERS]
            self.assertLessEqual(len(kept), landing._ANSWERS_KEPT)

    def test_no_call_when_it_cannot_matter(self):
        host = self.hosts('h')[0]
        host.numa_topology = numa_host_topology((3, 1))
        predictor = landing.LandingPredictor()
        self.assertEqual((0,), predictor.nodes(
            host, landing.Request(request(numa_cells=1)),
            landing.Cells({0: 'same', 1: 'same'})))
        self.assertEqual((0, 1), predictor.nodes(
            host, landing.Request(request()), landing.Cells({0: 'a', 1: 'b'})))
        self.assertEqual(0, predictor.nova_calls)
        self.assertEqual(1, predictor.skipped)

    def test_weigher_scores_the_landing_cell(self):
        self.save_model()
        self.store.ingest([
            host_report('a', [node(0, 120, 4), node(1, 0, 0)]),
            host_report('b', [node(0, 120, 4), node(1, 120, 4)])])
        a, b = self.hosts('a', 'b')
        a.numa_topology = numa_host_topology((3, 0))
        b.numa_topology = numa_host_topology((3, 0))
        weigher = nova_filters.ContentionWeigher()
        spec = request(numa_cells=1, extra_specs={
            'contention:profile': 'mpki=25,mf=0.9,ipc=0.4'})
        weigher.weigh_objects([weights.WeighedHost(a, 0),
                               weights.WeighedHost(b, 0)], spec)
        # Nova lands it on cell 1 (less used): calm on a, busy on b
        self.assertGreater(weigher.last_scores['a'].score,
                           weigher.last_scores['b'].score)


class TestContentionFilter(ContentionTestBase):

    def setUp(self):
        super().setUp()
        self.filter = nova_filters.ContentionFilter()
        hot = report.NodeOverhead(llc=3, mc=3, ic=1, remote=0)
        self.store.ingest([
            host_report('hot', [node(0, 150, 4), node(1, 150, 4)]),
            host_report('levels', [node(0, 10, 4, hot), node(1, 10, 4, hot)]),
            host_report('calm', [CALM, node(1, 0, 0)])])

    def passing(self, spec, *names):
        return sorted(h.host for h in self.filter.filter_all(
            self.hosts(*names), spec))

    def test_sensitive_kept_off_saturated_cells(self):
        spec = request(extra_specs={'contention:sensitive': 'true'})
        self.assertEqual(['calm', 'unknown'], self.passing(
            spec, 'hot', 'levels', 'calm', 'unknown'))
        self.assertFalse(self.filter.host_passes(self.hosts('hot')[0], spec))

    def test_others_pass(self):
        self.assertEqual(['calm', 'hot', 'levels'],
                         self.passing(request(), 'hot', 'levels', 'calm'))
        spec = request(extra_specs={'contention:sensitive': 'false'})
        self.assertEqual(['calm', 'hot'], self.passing(spec, 'hot', 'calm'))

    def test_fail_closed(self):
        self.flags(filter_fail_closed=True, group='contention')
        spec = request(extra_specs={'contention:sensitive': 'yes'})
        self.assertEqual(['calm'], self.passing(spec, 'calm', 'unknown'))

    def test_thresholds_configurable(self):
        self.flags(filter_mpki_threshold=1000, filter_overhead_threshold=12,
                   group='contention')
        spec = request(extra_specs={'contention:sensitive': 'true'})
        self.assertEqual(['calm', 'hot', 'levels'],
                         self.passing(spec, 'hot', 'levels', 'calm'))
