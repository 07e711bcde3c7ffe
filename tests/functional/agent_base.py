"""Helpers for the agent's functional tests on libvirt's test driver.

``test:///default`` runs inside the test process and keeps its state for
the life of the process, whichever connection changed it, so every test
defines its own domains (unique names and uuids) and undefines them, and
restores the vCPU pinning of the driver's built-in ``test`` domain.
"""

import os
import uuid

import fixtures
import libvirt
from oslo_config import cfg
from oslotest import base

import compute_agent  # noqa: F401  (picks oslo.service's backend first)
from compute_agent import opts
from contention import telemetry_bus

TEST_URI = 'test:///default'
NOVA_NS = 'http://openstack.org/xmlns/libvirt/nova/1.1'

DOMAIN_XML = """<domain type='test'>
  <name>%(name)s</name>
  <uuid>%(uuid)s</uuid>
  <metadata>
    <nova:instance xmlns:nova="%(ns)s">
      <nova:name>%(nova_name)s</nova:name>
      <nova:flavor name="%(flavor)s"><nova:vcpus>%(vcpus)d</nova:vcpus>
      </nova:flavor>
      <nova:owner><nova:project uuid="%(project)s">demo</nova:project>
      </nova:owner>
      <nova:root type="image" uuid="%(image)s"/>
    </nova:instance>
  </metadata>
  <memory unit='MiB'>%(memory)d</memory>
  <vcpu>%(vcpus)d</vcpu>
  <cputune>%(pins)s</cputune>
  <os><type>hvm</type></os>
</domain>
"""


class TestDriverCase(base.BaseTestCase):
    """A test with its own domains on ``test:///default``."""

    def setUp(self):
        super().setUp()
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.conn = libvirt.open(TEST_URI)
        self.addCleanup(self.conn.close)
        builtin = self.conn.lookupByName('test')
        ncpus = self.conn.getCPUMap()[0]
        self.addCleanup(lambda: [builtin.pinVcpu(v, (True,) * ncpus)
                                 for v in range(len(builtin.vcpus()[0]))])
        self.conf = cfg.ConfigOpts()
        opts.register_opts(self.conf)
        telemetry_bus.register(self.conf)
        self.conf([], project='contention-test')
        self.host = 'compute-%s' % uuid.uuid4().hex[:8]
        for name, value in (('host', self.host),
                            ('libvirt_uri', TEST_URI),
                            ('sources', ['libvirt', 'numa_memory']),
                            ('proc_root', os.path.join(self.tmp, 'proc')),
                            ('resctrl_root',
                             os.path.join(self.tmp, 'resctrl'))):
            self.conf.set_override(name, value, 'agent')

    def define(self, vcpus=2, memory=512, pins=None, flavor='m1.small'):
        """Define and start a Nova-like domain; undefined at cleanup."""
        dom_uuid = str(uuid.uuid4())
        name = 'instance-%s' % dom_uuid[:8]
        pin_xml = ''.join("<vcpupin vcpu='%d' cpuset='%s'/>" % item
                          for item in sorted((pins or {}).items()))
        xml = DOMAIN_XML % dict(
            name=name, uuid=dom_uuid, ns=NOVA_NS, nova_name='vm-' + name,
            flavor=flavor, vcpus=vcpus, memory=memory, pins=pin_xml,
            project='p-' + dom_uuid[:6], image='i-' + dom_uuid[:6])
        dom = self.conn.defineXML(xml)
        self.addCleanup(self._undefine, dom)
        dom.create()
        return dom

    @staticmethod
    def _undefine(dom):
        try:
            if dom.isActive():
                dom.destroy()
            dom.undefine()
        except libvirt.libvirtError:
            pass

    @staticmethod
    def affinity(dom):
        return [frozenset(i for i, on in enumerate(cpumap) if on)
                for cpumap in dom.vcpus()[1]]
