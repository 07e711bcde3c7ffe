"""The collector's endpoint: what gets stored, counted, requeued."""

import json

import fixtures
import hypothesis
from hypothesis import strategies as st
from oslotest import base
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from contention.collector import endpoint
from contention import report
from contention.store import open_store
from tests.unit.fixtures import strategies
from tests.unit.contention.store import reports


def message(payload, event_type='contention.host.report'):
    return {'ctxt': {}, 'publisher_id': 'contention-agent.h',
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
        self.endpoint = endpoint.ReportEndpoint(self.store)
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
            'contention.store.api.TelemetryStore.ingest',
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
