"""The collector's endpoint: what gets stored, counted, requeued."""

import json
import time
import zlib

import fixtures
import hypothesis
from hypothesis import strategies as st
from oslotest import base
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from contention.collector import bounds
from contention.collector import endpoint
from contention.collector import inflate
from contention import report
from contention.store import open_store
from tests.unit.fixtures import strategies
from tests.unit.contention.store import reports


def message(payload, event_type='contention.host.report', publisher=None):
    """The batch listener's message; published by the report's own host."""
    if publisher is None:
        host = payload.get('host') if isinstance(payload, dict) else None
        publisher = 'contention-agent.%s' % (
            host if isinstance(host, str) else 'h')
    return {'ctxt': {}, 'publisher_id': publisher,
            'event_type': event_type, 'payload': payload, 'metadata': {}}


json_junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.text(max_size=10), children, max_size=4), max_leaves=20)


@st.composite
def mutated_reports(draw):
    """A valid report's dict with one field replaced by junk."""
    data = json.loads(json.dumps(draw(strategies.host_reports(
        max_instances=1)).to_dict()))
    node, key = data, None
    while True:
        keys = list(node) if isinstance(node, dict) else list(
            range(len(node)))
        if not keys:
            break
        key = draw(st.sampled_from(keys))
        child = node[key]
        # Never descend into an empty container: ``key`` must stay a key
        # of ``node``.
        if (not isinstance(child, (dict, list)) or not child
                or draw(st.booleans())):
            break
        node = child
    if key is not None:
        node[key] = draw(json_junk)
    return data


class EndpointTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.store = open_store('sqlite://')
        self.store.upgrade()
        self.addCleanup(self.store.dispose)
        self.endpoint = endpoint.ReportEndpoint(
            self.store, backoff=endpoint.Backoff(first=0.01, longest=0.04))
        self.log = self.useFixture(fixtures.FakeLogger())


class TestEndpoint(EndpointTestCase):

    def test_valid_batch_is_stored_and_handled(self):
        batch = [message(reports.host_report(h, 10).to_dict())
                 for h in ('a', 'b')]
        self.assertEqual(endpoint.HANDLED, self.endpoint.info(batch))
        self.assertEqual({'a', 'b'}, set(self.store.latest_reports()))

    def test_invalid_report_is_logged_counted_and_handled(self):
        bad = reports.host_report('bad-host', 10).to_dict()
        bad['interval_s'] = -1
        good = reports.host_report('a', 10).to_dict()
        self.assertEqual(endpoint.HANDLED,
                         self.endpoint.info([message(bad), message(good)]))
        self.assertEqual(['a'], list(self.store.latest_reports()))
        self.assertEqual({'accepted': 1, 'rejected:invalid': 1},
                         self.store.ingestion_counters())
        self.assertIn('bad-host', self.log.output)
        self.assertIn('report.interval_s', self.log.output)
        self.assertIn('must be >= 0', self.log.output)

    def test_non_object_payload(self):
        self.assertEqual(endpoint.HANDLED,
                         self.endpoint.info([message('not a report')]))
        self.assertEqual({'rejected:invalid': 1},
                         self.store.ingestion_counters())

    def test_database_down_requeues_without_counting(self):
        with self.store.engine.begin() as conn:
            conn.execute(sa.text('DROP TABLE latest_reports'))
        rep = reports.host_report('a', 10).to_dict()
        bad = dict(rep, host='')
        self.assertEqual(endpoint.REQUEUE,
                         self.endpoint.info([message(rep), message(bad)]))
        # The rejection is counted with the batch, so not on this failure.
        self.assertEqual({}, self.store.ingestion_counters())
        self.assertIn('requeued', self.log.output)

    def test_report_the_database_refuses_is_rejected_not_requeued(self):
        calls = []
        real_ingest = self.store.ingest

        def ingest(batch, now=None, rejections=None):
            calls.append([r.host for r in batch])
            if any(r.host == 'poison' for r in batch):
                raise sa_exc.DataError('INSERT', {}, Exception('too long'))
            return real_ingest(batch, now=now, rejections=rejections)
        self.useFixture(fixtures.MonkeyPatch(
            'contention.store.TelemetryStore.ingest',
            lambda _self, *a, **k: ingest(*a, **k)))
        batch = [message(reports.host_report(h, 10).to_dict())
                 for h in ('a', 'poison', 'b')]
        self.assertEqual(endpoint.HANDLED, self.endpoint.info(batch))
        self.assertEqual({'a', 'b'}, set(self.store.latest_reports()))
        self.assertEqual({'accepted': 2, 'rejected:unstorable': 1},
                         self.store.ingestion_counters())

    def test_only_host_reports_pass_the_filter(self):
        rule = endpoint.ReportEndpoint.filter_rule
        self.assertTrue(rule.match({}, 'p', 'contention.host.report', {},
                                   {}))
        self.assertFalse(rule.match({}, 'p', 'contention.host.reportX', {},
                                    {}))
        self.assertFalse(rule.match({}, 'p', 'compute.instance.update', {},
                                    {}))


def _instance(mpki=5.0, **metrics):
    values = dict(mpki=mpki, mf=0.3, ipc=1.0)
    values.update(metrics)
    return report.InstanceRecord(
        uuid='u1', name='vm', vcpus=2, memory_mib=2048, image_id='img',
        counters=report.Counters(instructions=10 ** 10, cycles=10 ** 10),
        metrics=report.Metrics(**values))


class TestHostileReports(EndpointTestCase):
    """Issue 21 items 2, 3 and 8: well-typed reports no machine sends."""

    def rejected(self, payload, publisher=None):
        before = self.store.ingestion_counters()
        self.assertEqual(endpoint.HANDLED, self.endpoint.info(
            [message(payload, publisher=publisher)]))
        after = self.store.ingestion_counters()
        return {k: after[k] - before.get(k, 0) for k in after
                if after[k] != before.get(k, 0)}

    def test_impossible_metrics_are_refused_and_counted(self):
        for metrics in ({'mpki': 1e300}, {'mpki': 1e308},
                        {'mpki': 3.5e38}, {'ipc': 1e6}, {'mf': 50.0},
                        {'remote_memory_ratio': 1.5},
                        {'mem_bw_total_bps': 1e20}):
            mpki = metrics.pop('mpki', 5.0)
            rep = reports.host_report('a', 10, [_instance(mpki, **metrics)])
            self.assertEqual({'rejected:out_of_bounds': 1},
                             self.rejected(rep.to_dict()), metrics)
        self.assertEqual({}, self.store.latest_reports())
        self.assertIsNone(self.store.image_profile('img'))
        self.assertIn('over the physical bound', self.log.output)

    def test_impossible_counters_are_refused(self):
        rep = reports.host_report('a', 10, [_instance()]).to_dict()
        # 2 vCPUs for 10 s cannot run 10^15 cycles.
        rep['instances'][0]['counters']['cycles'] = 10 ** 15
        self.assertEqual({'rejected:out_of_bounds': 1}, self.rejected(rep))

    def test_a_memory_bandwidth_no_node_has_is_refused(self):
        rep = reports.host_report('a', 10, [_instance()]).to_dict()
        rep['topology']['nodes'][0]['memory_bandwidth_bps'] = 1e20
        self.assertEqual({'rejected:out_of_bounds': 1}, self.rejected(rep))
        self.assertIn('report.topology.nodes[0].memory_bandwidth_bps',
                      self.log.output)

    def test_integers_past_64_bits_are_refused_not_requeued(self):
        # A 400-digit counter passed the schema and broke the bounds
        # check's message, which requeued the whole batch on every
        # redelivery: nothing from any host was stored again.
        for where in (('instances', 0, 'counters', 'cycles'),
                      ('instances', 0, 'counters', 'llc_occupancy_bytes'),
                      ('nodes', 0, 'instances'),
                      ('instances', 0, 'vcpus')):
            rep = reports.host_report('a', 10, [_instance()]).to_dict()
            node = rep
            for key in where[:-1]:
                node = node[key]
            node[where[-1]] = 10 ** 400
            good = reports.host_report('b', 10, [_instance()]).to_dict()
            self.assertEqual(endpoint.HANDLED, self.endpoint.info(
                [message(rep), message(good)]), where)
            self.assertNotIn('a', self.store.latest_reports(), where)
            self.assertIn('b', self.store.latest_reports(), where)
        self.assertIn('64-bit range', self.log.output)

    def test_a_failing_check_refuses_only_its_report(self):
        self.useFixture(fixtures.MockPatchObject(
            bounds, 'check_physics', side_effect=OverflowError('boom')))
        rep = reports.host_report('a', 10, [_instance()]).to_dict()
        self.assertEqual(endpoint.HANDLED,
                         self.endpoint.info([message(rep)]))
        self.assertEqual({}, self.store.latest_reports())
        self.assertIn('the bounds check failed: OverflowError',
                      self.log.output)

    def test_an_interval_no_agent_reports_is_refused(self):
        # A huge interval would lift every rate bound.
        rep = reports.host_report('a', 10, [_instance()]).to_dict()
        rep['interval_s'] = 1e300
        self.assertEqual({'rejected:out_of_bounds': 1}, self.rejected(rep))

    def test_a_real_report_passes(self):
        rep = reports.host_report('a', 10, [_instance()])
        self.assertEqual({'accepted': 1}, self.rejected(rep.to_dict()))

    def test_report_from_the_future_is_refused(self):
        now = time.time()
        ahead = reports.host_report('a', now + 86400, [_instance()])
        self.assertEqual({'rejected:future': 1},
                         self.rejected(ahead.to_dict()))
        # Within the skew: accepted, and later real reports are not stale.
        near = reports.host_report('a', now + 30, [_instance()])
        self.assertEqual({'accepted': 1}, self.rejected(near.to_dict()))
        self.assertEqual(now + 30, self.store.latest_reports()['a'].timestamp)

    def test_report_for_another_host_is_refused(self):
        rep = reports.host_report('victim', 10, [_instance()]).to_dict()
        self.assertEqual({'rejected:sender': 1}, self.rejected(
            rep, publisher='contention-agent.attacker'))
        self.assertEqual({}, self.store.latest_reports())

    def test_report_without_a_publisher_is_refused(self):
        rep = reports.host_report('victim', 10, [_instance()]).to_dict()
        msg = message(rep)
        del msg['publisher_id']
        self.assertEqual(endpoint.HANDLED, self.endpoint.info([msg]))
        self.assertEqual({}, self.store.latest_reports())
        self.assertIn('published by (no publisher id)', self.log.output)

    def test_sender_check_can_be_turned_off(self):
        self.endpoint.check_publisher = False
        rep = reports.host_report('victim', 10).to_dict()
        self.assertEqual({'accepted': 1}, self.rejected(
            rep, publisher='contention-agent.relay'))


class TestFaults(EndpointTestCase):

    def test_database_outage_backs_off(self):
        # Issue 21 item 8: ~4 requeues a second, each logged, no backoff.
        waits = []
        self.endpoint.backoff = endpoint.Backoff(first=0.5, longest=4.0)
        self.endpoint.backoff.wait = lambda: waits.append(
            self.endpoint.backoff.delay())
        with self.store.engine.begin() as conn:
            conn.execute(sa.text('ALTER TABLE latest_reports RENAME TO x'))
        batch = [message(reports.host_report('a', 10).to_dict())]
        for _ in range(6):
            self.assertEqual(endpoint.REQUEUE, self.endpoint.info(batch))
        self.assertEqual([0.5, 1.0, 2.0, 4.0, 4.0, 4.0], waits)
        # Logged while the wait grows, not on every retry after.
        self.assertEqual(4, self.log.output.count('Store unavailable'))
        with self.store.engine.begin() as conn:
            conn.execute(sa.text('ALTER TABLE x RENAME TO latest_reports'))
        self.assertEqual(endpoint.HANDLED, self.endpoint.info(batch))
        self.assertEqual(0, self.endpoint.backoff.failures)
        self.assertIn('available again after 6', self.log.output)

    def test_stop_ends_a_backoff_wait(self):
        backoff = endpoint.Backoff(first=60, longest=60)
        backoff.failed()
        backoff.cancel()
        start = time.monotonic()
        backoff.wait()
        self.assertLess(time.monotonic() - start, 5)

    def test_one_unstorable_report_does_not_split_the_batch_per_report(self):
        calls = []
        real_ingest = self.store.ingest

        def ingest(batch, now=None, rejections=None):
            calls.append(len(batch))
            if any(r.host == 'poison' for r in batch):
                raise sa_exc.DataError('INSERT', {}, Exception('too long'))
            return real_ingest(batch, now=now, rejections=rejections)
        self.useFixture(fixtures.MonkeyPatch(
            'contention.store.TelemetryStore.ingest',
            lambda _self, *a, **k: ingest(*a, **k)))
        hosts = ['h%02d' % i for i in range(32)]
        hosts[13] = 'poison'
        batch = [message(reports.host_report(h, 10).to_dict())
                 for h in hosts]
        self.assertEqual(endpoint.HANDLED, self.endpoint.info(batch))
        self.assertEqual(31, len(self.store.latest_reports()))
        self.assertEqual({'accepted': 31, 'rejected:unstorable': 1},
                         self.store.ingestion_counters())
        # Halving: 1 + 2 per level below the top, not 1 + 32.
        self.assertLessEqual(len(calls), 1 + 2 * 5 + 1)


class TestDecompression(base.BaseTestCase):
    """Issue 21 item 7: a 2 MB message that inflates to 2 GiB."""

    def setUp(self):
        super().setUp()
        from kombu import compression
        saved = dict(compression._decoders)
        self.addCleanup(compression._decoders.update, saved)
        self.addCleanup(inflate.take_refused)
        self.useFixture(fixtures.FakeLogger())
        inflate.install(limit=1 << 20)
        self.decode = compression.get_decoder('application/x-gzip')

    def test_bomb_stops_at_the_limit_and_is_counted(self):
        bomb = zlib.compress(b'\0' * (256 << 20), 9)     # 256 MiB
        self.assertLess(len(bomb), 1 << 20)
        self.assertRaises(inflate.TooLarge, self.decode, bomb)
        self.assertEqual({'too_large': 1}, inflate.take_refused())
        self.assertEqual({}, inflate.take_refused())

    def test_a_report_inflates(self):
        body = json.dumps(reports.host_report('a', 10).to_dict()).encode()
        self.assertEqual(body, self.decode(zlib.compress(body)))

    def test_compressions_the_agent_never_uses_are_refused(self):
        from kombu import compression
        for content_type in compression._decoders:
            if content_type not in ('application/x-gzip',
                                    'application/x-bz2',
                                    'application/x-lzma'):
                self.assertRaises(inflate.TooLarge,
                                  compression.get_decoder(content_type),
                                  b'x')

    def test_refusals_reach_the_store_counters(self):
        store = open_store('sqlite://')
        store.upgrade()
        self.addCleanup(store.dispose)
        self.assertRaises(inflate.TooLarge, self.decode,
                          zlib.compress(b'\0' * (4 << 20)))
        ep = endpoint.ReportEndpoint(store)
        ep.info([message(reports.host_report('a', 10).to_dict())])
        self.assertEqual({'accepted': 1, 'rejected:too_large': 1},
                         store.ingestion_counters())


class TestJunk(EndpointTestCase):
    """Whatever arrives, nothing escapes the endpoint or reaches the store."""

    @hypothesis.settings(max_examples=60, deadline=None)
    @hypothesis.given(st.lists(json_junk, min_size=1, max_size=3))
    def test_arbitrary_json(self, payloads):
        before = self.store.ingestion_counters()
        result = self.endpoint.info([message(p) for p in payloads])
        self.assertEqual(endpoint.HANDLED, result)
        self.assertEqual({}, self.store.latest_reports())
        after = self.store.ingestion_counters()
        rejected = sum(after.get(k, 0) - before.get(k, 0) for k in after)
        self.assertEqual(len(payloads), rejected)

    @hypothesis.settings(max_examples=40, deadline=None)
    @hypothesis.given(mutated_reports())
    def test_mutated_valid_reports(self, payload):
        store = open_store('sqlite://')     # fresh: examples share setUp
        store.upgrade()
        result = endpoint.ReportEndpoint(store).info([message(payload)])
        self.assertEqual(endpoint.HANDLED, result)
        counters = store.ingestion_counters()
        self.assertEqual(1, sum(counters.values()), counters)
        try:
            expected = report.HostReport.from_dict(payload)
        except Exception:
            # Invalid: counted as rejected and nothing stored.
            self.assertTrue(list(counters)[0].startswith('rejected:'))
            self.assertEqual([], store.training_samples())
        else:
            try:
                bounds.check(expected, message(payload)['publisher_id'],
                             time.time(), endpoint.DEFAULT_MAX_SKEW_S)
            except bounds.Violation as exc:
                # Valid, but impossible: refused and counted.
                self.assertEqual({'rejected:' + exc.reason: 1}, counters)
                self.assertEqual([], store.training_samples())
                return
            # The junk happened to be valid there: stored as validated.
            self.assertEqual({'accepted': 1}, counters)
            self.assertEqual([expected], store.training_samples())

    def test_deep_nesting_is_rejected_not_raised(self):
        payload = []
        for _ in range(100000):
            payload = [payload]
        bad = reports.host_report('deep', 10).to_dict()
        bad['events'] = payload
        self.assertEqual(endpoint.HANDLED, self.endpoint.info([message(bad)]))
        self.assertEqual(1, sum(self.store.ingestion_counters().values()))
