"""Shared set-up for the agent's unit tests: a config and a fake host."""

import os

import fixtures
from oslo_config import cfg
from oslotest import base

from compute_agent import opts
from tests.unit.compute_agent import fake_libvirt
from tests.unit.fixtures import hosts

#: 2 sockets x 10 cores x 2 threads, Intel: CPUs 0-39, nodes 0 and 1.
INTEL_CAPS = hosts.capabilities_xml(hosts.INTEL_2S)
INTEL_NCPUS = 40
NODE0_CPUS = frozenset(list(range(0, 10)) + list(range(20, 30)))
NODE1_CPUS = frozenset(list(range(10, 20)) + list(range(30, 40)))


class Clock(object):
    """A settable clock for the collector and the connection backoff."""

    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


class AgentTestCase(base.BaseTestCase):

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.conf = cfg.ConfigOpts()
        opts.register_opts(self.conf)
        self.conf([], project='contention-test')
        for name, value in (('host', 'compute-1'),
                            ('sysfs_root', os.path.join(self.tmp, 'nosys')),
                            ('proc_root', os.path.join(self.tmp, 'proc')),
                            ('cgroup_root', os.path.join(self.tmp, 'cg')),
                            ('resctrl_root',
                             os.path.join(self.tmp, 'resctrl'))):
            self.conf.set_override(name, value, 'agent')
        self.conn = fake_libvirt.FakeConnection(INTEL_CAPS, INTEL_NCPUS)

    def mount_resctrl(self):
        os.makedirs(os.path.join(self.tmp, 'resctrl', 'info', 'L3_MON'),
                    exist_ok=True)
