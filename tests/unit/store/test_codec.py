"""Stored reports decode to exactly what was stored."""

import dataclasses
import json
import zlib

import hypothesis
from oslotest import base

from contention import report
from contention.store import codec
from tests.unit import strategies
from tests.unit.store import reports


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

    def test_fields_missing_from_older_bodies_take_their_defaults(self):
        rep = reports.host_report('a', 1, [reports.instance('u')])
        data = json.loads(codec.decompress(codec.encode(rep)))
        del data['events']
        del data['instances'][0]['notes']
        del data['instances'][0]['counters']['cycles']
        older = zlib.compress(json.dumps(data).encode())
        decoded = codec.decode(older)
        self.assertEqual(dataclasses.replace(rep, instances=(
            dataclasses.replace(rep.instances[0], counters=dataclasses.replace(
                rep.instances[0].counters, cycles=None)),)), decoded)
        self.assertEqual((), decoded.events)

    def test_latest_parts(self):
        rep = reports.host_report('a', 1, [reports.instance('u')])
        body, summary, topology, digest = codec.encode_latest(rep)
        self.assertEqual(rep, codec.decode(body))
        self.assertEqual('', json.loads(topology)['hostname'])
        self.assertEqual(codec.topology_digest(topology), digest)
        head = codec.decode_summary(
            summary, lambda name: dataclasses.replace(
                codec.decode_topology(topology), hostname=name))
        self.assertEqual(dataclasses.replace(rep, instances=()), head)
        # Another host of the same hardware shares the topology text.
        other = codec.encode_latest(dataclasses.replace(
            rep, host='b', topology=dataclasses.replace(rep.topology,
                                                        hostname='b')))
        self.assertEqual((topology, digest), other[2:])

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
