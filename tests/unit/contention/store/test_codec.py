"""Stored reports decode to exactly what was stored."""

import dataclasses
import json
import zlib

import hypothesis
from oslotest import base

from contention import report
from contention.store import codec
from tests.unit.fixtures import strategies
from tests.unit.contention.store import reports


def _head(summary, topology):
    """The report of a summary, with the topology renamed as it names."""
    hostname, head = codec.decode_summary(summary)
    return codec.with_topology(head, dataclasses.replace(
        codec.decode_topology(topology), hostname=hostname))


class TestCodec(base.BaseTestCase):

    @hypothesis.settings(max_examples=25, deadline=None)
    @hypothesis.given(strategies.host_reports())
    def test_round_trip(self, rep):
        self.assertEqual(rep, codec.decode(codec.encode(rep)))

    @hypothesis.settings(max_examples=25, deadline=None)
    @hypothesis.given(strategies.host_reports())
    def test_stored_json_is_the_reports_own_dict(self, rep):
        stored = json.loads(codec.decompress(codec.encode(rep)))
        # Same JSON as to_dict (which keeps tuples where JSON has lists).
        self.assertEqual(json.loads(json.dumps(rep.to_dict())), stored)
        self.assertEqual(rep, report.HostReport.from_dict(stored))

    def test_bodies_stored_as_zlib_before_still_decode(self):
        rep = reports.host_report('a', 1, [reports.instance('u')])
        old = zlib.compress(json.dumps(rep.to_dict()).encode(), 1)
        self.assertEqual(rep, codec.decode(old))
        self.assertEqual(rep, codec.decode(memoryview(codec.encode(rep))))

    def test_latest_parts(self):
        rep = reports.host_report('a', 1, [reports.instance('u')])
        body, summary, topology, digest = codec.encode_latest(rep)
        self.assertEqual(rep, codec.decode(body))
        self.assertEqual('', json.loads(topology)['hostname'])
        self.assertEqual(codec.topology_digest(topology), digest)
        head = _head(summary, topology)
        self.assertEqual(dataclasses.replace(rep, instances=()), head)
        # Another host of the same hardware shares the topology text.
        other = codec.encode_latest(dataclasses.replace(
            rep, host='b', topology=dataclasses.replace(rep.topology,
                                                        hostname='b')))
        self.assertEqual((topology, digest), other[2:])

    @hypothesis.settings(max_examples=25, deadline=None)
    @hypothesis.given(strategies.host_reports())
    def test_summary_round_trip(self, rep):
        _body, summary, topology, _digest = codec.encode_latest(rep)
        head = _head(summary, topology)
        self.assertEqual(dataclasses.replace(rep, instances=()), head)
        # Same field order as the class: encoding it again gives the
        # same JSON as the original.
        self.assertEqual(codec.dumps(dataclasses.replace(rep, instances=())),
                         codec.dumps(head))

    def test_summaries_share_small_values(self):
        heads = []
        for host in 'ab':
            rep = reports.host_report(host, 1)
            _b, summary, topology, _d = codec.encode_latest(rep)
            heads.append(_head(summary, topology))
        self.assertIs(heads[0].sources, heads[1].sources)
        self.assertIs(heads[0].nodes[0].overhead, heads[1].nodes[0].overhead)
        self.assertIsNot(heads[0].nodes[0], heads[1].nodes[0])

    def test_decoded_types(self):
        rep = reports.host_report('a', 1, [reports.instance('u')])
        back = codec.decode(codec.encode(rep))
        self.assertIsInstance(back.instances, tuple)
        self.assertIsInstance(back.topology.distances[0], tuple)
        self.assertEqual({0: 2048.0}, back.instances[0].memory_mib_per_node)
        self.assertEqual(1, back.nodes[0].overhead.llc)

    def test_small_values_are_shared_between_decoded_reports(self):
        a = codec.decode(codec.encode(reports.host_report('a', 1)))
        b = codec.decode(codec.encode(reports.host_report('b', 2)))
        self.assertIs(a.nodes[0].overhead, b.nodes[0].overhead)
        self.assertEqual(report.NodeOverhead(llc=1, mc=0, ic=0, remote=0),
                         a.nodes[0].overhead)


def _stored(obj):
    return json.loads(codec.dumps(obj))


class TestOlderMinorVersions(base.BaseTestCase):
    """What the store wrote under schema 1.0 decodes under 1.1.

    Stored bodies and summaries keep the version they were sent with, and
    decoding fills ``__dict__`` from their JSON; a field a later minor
    version added must come back at its default, not missing.
    """

    def setUp(self):
        super().setUp()
        self.rep = dataclasses.replace(
            reports.host_report('a', 1, [reports.instance('u'),
                                         reports.instance('v')]),
            version='1.0', events=('libvirt_reconnected',))

    def test_body_without_cpu_quota_decodes_uncapped(self):
        data = _stored(self.rep)
        for inst in data['instances']:
            del inst['cpu_quota']
        body = zlib.compress(codec.dumps(data))
        back = codec.decode(body)
        self.assertEqual(self.rep, back)
        self.assertEqual([None, None],
                         [i.cpu_quota for i in back.instances])
        self.assertEqual(back, report.HostReport.from_dict(data))
        # Set on the instance, not only the class default that getattr
        # falls back to: encoding it again (orjson reads the instance's
        # own fields) writes the 1.1 form.
        self.assertEqual(_stored(self.rep), _stored(back))

    def test_missing_fields_of_every_kind_get_their_defaults(self):
        # Fields that decoding converts (a nested dataclass, tuples, an
        # int-keyed dict) as well as plain ones, at every level.
        data = _stored(self.rep)
        inst = data['instances'][0]
        for name in ('counters', 'notes', 'memory_mib_per_node',
                     'cpu_quota', 'merlin_class'):
            del inst[name]
        del data['nodes'][1]['classes']
        del data['events']
        back = codec.decode(zlib.compress(codec.dumps(data)))
        self.assertEqual(report.HostReport.from_dict(_stored(data)), back)
        first = back.instances[0]
        self.assertEqual((report.Counters(), (), {}, None, None),
                         (first.counters, first.notes,
                          first.memory_mib_per_node, first.cpu_quota,
                          first.merlin_class))
        self.assertEqual({}, back.nodes[1].classes)
        self.assertEqual((), back.events)
        # Defaults from a factory are fresh objects, not shared.
        again = codec.decode(zlib.compress(codec.dumps(data)))
        self.assertIsNot(first.memory_mib_per_node,
                         again.instances[0].memory_mib_per_node)

    def test_summary_of_another_layout_is_left_to_the_body(self):
        # A summary is a cache of the report: one written by another
        # release (a field added, or the object form from before rows)
        # is not decoded, and the reader falls back to the body.
        summary = codec.encode_latest(self.rep)[1]
        tag, hostname, row = json.loads(summary)
        self.assertEqual(codec.SUMMARY_LAYOUT, tag)
        older = json.dumps(['0' * 8, hostname, row[:-1]])
        self.assertIsNone(codec.decode_summary(older))
        as_object = dict(_stored(dataclasses.replace(self.rep, instances=())),
                         topology_hostname='a')
        del as_object['topology'], as_object['instances']
        self.assertIsNone(codec.decode_summary(json.dumps(as_object)))
