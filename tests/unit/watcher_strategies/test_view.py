"""Reading Watcher's model elements into the core's inventory."""

import fixtures
import testtools

from watcher.decision_engine.model import element

from watcher_strategies import view


class TestFields(testtools.TestCase):
    """``_values`` reads oslo.versionedobjects' storage, not the property.

    The fast path relies on where oslo.versionedobjects keeps a field's
    value; these pin that it agrees with the property for every field the
    inventory reads, set or not, so a change of that library fails here.
    """

    def test_every_set_field_reads_as_its_property(self):
        inst = element.Instance(
            uuid='u', state='paused', vcpus=2, memory=512, disk=1,
            locked=True, watcher_exclude=False,
            metadata={'contention_priority': '3'},
            flavor_extra_specs={'hw:numa_nodes': '1'})
        node = element.ComputeNode(
            uuid='n', hostname='h', status='disabled', state='up',
            disabled_reason='maintenance', memory=1024, disk=10, vcpus=8,
            memory_mb_reserved=64, disk_gb_reserved=1, vcpu_reserved=1,
            vcpu_ratio=4.0, memory_ratio=1.5, disk_ratio=1.0)
        for obj in (inst, node):
            for name in type(obj).fields:
                if obj.obj_attr_is_set(name):
                    self.assertEqual([getattr(obj, name)],
                                     view._values(obj, view._stored((name, 'default'))),
                                     name)

    def test_a_field_never_set_reads_as_the_default(self):
        inst = element.Instance(uuid='u', state='active')
        unset = [n for n in type(inst).fields
                 if not inst.obj_attr_is_set(n)]
        self.assertIn('metadata', unset)
        self.assertIn('vcpus', unset)
        for name in unset:
            self.assertEqual(['default'],
                             view._values(inst, view._stored((name, 'default'))))

    def test_plain_objects_are_read_through_their_attributes(self):
        class Plain:
            vcpus = 4
            locked = None
        self.assertEqual([4, False, 'x'], view._values(
            Plain(), view._stored(('vcpus', 0), ('locked', False),
                                  ('memory', 'x'))))

    def test_the_inventory_says_why_an_instance_may_not_move(self):
        inst = element.Instance(uuid='u', state='paused', vcpus=2,
                                memory=512, disk=1)
        row = view._instance(inst, 'h')
        self.assertEqual('not_active: the instance is paused', row.unmovable)
        self.assertEqual((2, 512, 1.0), (row.vcpus, row.memory_mib,
                                         row.disk_gb))

    def test_a_flavor_declares_a_latency_service_or_not(self):
        def row(specs):
            return view._instance(element.Instance(
                uuid='u', state='active', vcpus=2, memory=512, disk=1,
                flavor_extra_specs=specs), 'h')
        self.assertTrue(row({'contention:profile':
                             'mpki=2,mf=0.5,ipc=1,latency=1'}).latency)
        self.assertFalse(row({'contention:profile':
                              'mpki=20,mf=0.9,ipc=0.5'}).latency)
        self.assertIsNone(row({'hw:numa_nodes': '1'}).latency)
        # Unreadable: undeclared, and the warning says which and why.
        logger = self.useFixture(fixtures.FakeLogger())
        self.assertIsNone(row({'contention:profile':
                               'mpki=2,latency=maybe'}).latency)
        self.assertIn('instance u (and any other of its flavor): flavor '
                      'extra spec contention:profile ignored', logger.output)
        self.assertIn("latency='maybe'", logger.output)
        # Read once per inventory: a second instance of the flavor adds no
        # warning.
        declared = {}
        bad = 'mpki=2,latency=maybe'
        view.declared_latency('a', bad, declared)
        view.declared_latency('b', bad, declared)
        self.assertEqual(1, logger.output.count('instance a '))
        self.assertNotIn('instance b ', logger.output)
        self.assertEqual({bad: None}, declared)
