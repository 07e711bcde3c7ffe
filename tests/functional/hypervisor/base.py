"""The real-hypervisor test case: a private libvirtd and tiny guests.

Run by ``tox -e hypervisor``, which installs the Debian packages
(``tools/hypervisor-deps.sh``) and sets ``CONTENTION_TEST_HYPERVISOR=1``;
the tests need root (the daemon's mount namespace, the guests' cgroups).
Guests are KVM where ``/dev/kvm`` is usable, TCG otherwise.
"""

import os
import re
import time
import uuid

import fixtures
import libvirt
from oslo_config import cfg
from oslotest import base as oslo_base

import compute_agent  # noqa: F401  (picks oslo.service's backend first)
from compute_agent import cmd
from compute_agent import opts
from compute_agent.sources import numa_memory
from contention import telemetry_bus
from tests.functional.hypervisor import daemon
from tests.functional.hypervisor import guests

ENABLED = os.environ.get('CONTENTION_TEST_HYPERVISOR') == '1'


def kvm_usable():
    """KVM when /dev/kvm opens, unless CONTENTION_TEST_VIRT=qemu asks TCG."""
    if os.environ.get('CONTENTION_TEST_VIRT') == 'qemu':
        return False
    try:
        fd = os.open('/dev/kvm', os.O_RDWR)
    except OSError:
        return False
    os.close(fd)
    return True


class HypervisorCase(oslo_base.BaseTestCase):

    def setUp(self):
        super().setUp()
        if not ENABLED:
            self.skipTest('real-hypervisor test: run by tox -e hypervisor '
                          '(root, its own libvirtd and QEMU guests)')
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.libvirtd = self.useFixture(daemon.PrivateLibvirtd(
            os.path.join(self.tmp, 'libvirtd')))
        self.conn = libvirt.open(self.libvirtd.uri)
        self.addCleanup(self._close_conn)
        self.virt_type = 'kvm' if kvm_usable() else 'qemu'
        self.host = 'hyp-%s' % uuid.uuid4().hex[:8]
        self.conf = self.agent_conf()

    def _close_conn(self):
        try:
            self.conn.close()
        except libvirt.libvirtError:
            pass

    def agent_conf(self, **overrides):
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        telemetry_bus.register(conf)
        conf([], project='contention-test')
        values = dict(host=self.host, libvirt_uri=self.libvirtd.uri,
                      sources=['libvirt', 'resctrl', 'numa_memory'],
                      numa_memory_refresh=1, interval=2.0)
        values.update(overrides)
        for name, value in values.items():
            conf.set_override(name, value, 'agent')
        return conf

    def reconnect(self):
        self._close_conn()
        self.conn = libvirt.open(self.libvirtd.uri)

    def guest(self, name, busy=True, program=None, **kwargs):
        """Define and start a Nova-shaped guest; gone at cleanup.

        It runs ``program`` (a boot sector, :mod:`guests`), by default a
        busy or a halted vCPU.
        """
        dom_uuid = str(uuid.uuid4())
        self.libvirtd.guest_uuids.add(dom_uuid)
        name = '%s-%s' % (name, dom_uuid[:6])
        # One disk each: QEMU locks its images.
        if program is None:
            program = guests.BUSY if busy else guests.IDLE
        disk = guests.boot_disk(os.path.join(self.tmp, name + '.img'),
                                program)
        xml = guests.domain_xml(name, disk, uuid=dom_uuid,
                                virt_type=self.virt_type, **kwargs)
        dom = self.conn.defineXML(xml)
        dom.create()
        return dom

    # -- what the host says, independently of the agent -------------------

    @staticmethod
    def qemu_pid(dom_uuid):
        return numa_memory.find_qemu_processes('/proc')[dom_uuid]

    @staticmethod
    def vcpu_threads(pid):
        """vCPU number -> thread id, from QEMU's thread names."""
        found = {}
        task = '/proc/%d/task' % pid
        for tid in os.listdir(task):
            try:
                with open(os.path.join(task, tid, 'comm')) as f:
                    comm = f.read().strip()
            except OSError:
                continue
            match = re.match(r'CPU (\d+)/(KVM|TCG)$', comm)
            if match:
                found[int(match.group(1))] = int(tid)
        return found

    @staticmethod
    def thread_cpu_ns(tid):
        """CPU time the thread ran (/proc/<tid>/schedstat, first field)."""
        with open('/proc/%d/schedstat' % tid) as f:
            return int(f.read().split()[0])

    def wait_idle(self, dom, timeout=60.0):
        """Wait until the guest's vCPU 0 stops running.

        That is, it reached its ``hlt``; SeaBIOS takes seconds under
        nested KVM.
        """
        tid = self.vcpu_threads(self.qemu_pid(dom.UUIDString()))[0]
        deadline = time.monotonic() + timeout
        last = self.thread_cpu_ns(tid)
        while time.monotonic() < deadline:
            time.sleep(0.5)
            now = self.thread_cpu_ns(tid)
            if now - last < 5e6:
                return
            last = now
        self.fail('guest %s still running after %.0f s' % (dom.name(),
                                                           timeout))

    @staticmethod
    def status_field(tid, field):
        with open('/proc/%d/status' % tid) as f:
            for line in f:
                if line.startswith(field + ':'):
                    return line.split(':', 1)[1].strip()
        raise KeyError(field)

    @staticmethod
    def last_cpu(tid):
        """The CPU the thread last ran on (/proc/<tid>/stat field 39)."""
        with open('/proc/%d/stat' % tid) as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return int(fields[36])

    @staticmethod
    def cfs_quota_us(tid):
        """The CFS quota of the thread's cpu cgroup (v1 or v2); -1 = none."""
        with open('/proc/%d/cgroup' % tid) as f:
            lines = f.read().splitlines()
        for line in lines:
            _, controllers, path = line.split(':', 2)
            if 'cpu' in controllers.split(','):
                with open('/sys/fs/cgroup/%s/%s/cpu.cfs_quota_us'
                          % (controllers, path.lstrip('/'))) as f:
                    return int(f.read())
        for line in lines:
            if line.startswith('0::'):
                with open('/sys/fs/cgroup/%s/cpu.max'
                          % line[3:].lstrip('/')) as f:
                    quota = f.read().split()[0]
                return -1 if quota == 'max' else int(quota)
        raise AssertionError('no cpu cgroup for thread %d' % tid)

    @staticmethod
    def guest_memory_mib(pid):
        """MiB per node of the anonymous/hugetlbfs/memfd mappings.

        Counted here line by line from numa_maps, independently of the
        agent's parser.
        """
        per_node = {}
        with open('/proc/%d/numa_maps' % pid) as f:
            for line in f:
                fields = line.split()
                if any(f.startswith('file=') for f in fields) and not (
                        'huge' in fields or 'file=/memfd:' in line):
                    continue
                page_kib = 4
                for f in fields:
                    if f.startswith('kernelpagesize_kB='):
                        page_kib = int(f.split('=')[1])
                for f in fields:
                    match = re.match(r'N(\d+)=(\d+)$', f)
                    if match:
                        node = int(match.group(1))
                        per_node[node] = (per_node.get(node, 0.0)
                                          + int(match.group(2)) * page_kib
                                          / 1024.0)
        return per_node

    def build(self, conf=None):
        collector, local = cmd.build(conf or self.conf)
        self.addCleanup(collector.close)
        return collector, local
