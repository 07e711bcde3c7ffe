"""The cluster view's lookups: by name, by uuid, a host's instances."""

import pickle

import testtools

from contention import cluster

SOCKETS = (cluster.SocketView(0, (0,), 8, 4096),
           cluster.SocketView(1, (1,), 8, 4096))


def _vm(uuid, host, socket=0):
    return cluster.InstanceView(uuid=uuid, host=host, vcpus=2,
                                memory_mib=1024, disk_gb=10, socket=socket)


def _view():
    return cluster.ClusterView(
        (cluster.HostView('a', SOCKETS, 16, 8192),
         cluster.HostView('b', SOCKETS, 16, 8192)),
        (_vm('u1', 'a', 0), _vm('u2', 'b', 1), _vm('u3', 'a', 1)))


class TestLookups(testtools.TestCase):

    def test_a_hosts_instances_in_view_order(self):
        view = _view()
        self.assertEqual(['u1', 'u3'],
                         [i.uuid for i in view.instances_on('a')])
        self.assertEqual(['u3'],
                         [i.uuid for i in view.instances_on('a', 1)])
        self.assertEqual((), view.instances_on('gone'))

    def test_by_name_and_uuid(self):
        view = _view()
        self.assertEqual('b', view.host('b').name)
        self.assertEqual('b', view.instance('u2').host)
        self.assertRaises(KeyError, view.host, 'gone')
        self.assertRaises(KeyError, view.instance, 'gone')
        # Two instances of 2 vCPUs, 1024 MiB and 10 GB on 'a'.
        self.assertEqual((12, 6144, -20), view.free('a'))

    def test_a_duplicate_name_finds_the_first(self):
        view = cluster.ClusterView(
            (cluster.HostView('a', SOCKETS, 16, 8192),
             cluster.HostView('a', SOCKETS, 32, 8192)), ())
        self.assertEqual(16, view.host('a').vcpus_total)

    def test_the_index_is_derived_state(self):
        view = _view()
        view.instances_on('a')
        copy = pickle.loads(pickle.dumps(view))
        self.assertNotIn('_index_cache', copy.__dict__)
        self.assertEqual(view, copy)
        self.assertEqual(hash(_view()), hash(view))
        self.assertEqual(['u1', 'u3'],
                         [i.uuid for i in copy.instances_on('a')])
