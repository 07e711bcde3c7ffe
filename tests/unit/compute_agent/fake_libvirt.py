"""A fake libvirt connection that answers like the real one.

The shapes copy libvirt-python 9.x against the QEMU driver:

* ``virDomain.vcpus()`` is ``([(number, state, cpu_time_ns, cpu), ...],
  [cpumap, ...])`` with one boolean tuple per vCPU, as long as the host's
  CPU map; ``cpu`` is -1 for a vCPU that is not running;
* ``virConnect.domainListGetStats`` / ``getAllDomainStats`` return
  ``[(virDomain, {key: value})]`` with flat dotted keys (``perf.*`` only
  for the events enabled on the domain, ``vcpu.<n>.time`` /
  ``.wait`` / ``.delay``, ``cpu.time``, the resctrl monitor keys);
* errors are real :class:`libvirt.libvirtError` instances carrying an
  error code, e.g. ``VIR_ERR_NO_DOMAIN`` for a domain that went away
  after it was listed (a domain object outlives its domain);
* a domain restart gives it a new id and restarts its counters at zero.

Counters advance with :meth:`FakeDomain.advance` so tests decide exactly
what a delta should be.
"""

import uuid as uuid_mod

import libvirt

NOVA_NS = 'http://openstack.org/xmlns/libvirt/nova/1.1'


def error(code, message):
    """A libvirtError as libvirt-python raises it (``err`` tuple set)."""
    exc = libvirt.libvirtError(message)
    exc.err = (code, libvirt.VIR_FROM_QEMU, message,
               libvirt.VIR_ERR_ERROR, None, None, None, -1, -1)
    return exc


def no_domain(uuid):
    return error(libvirt.VIR_ERR_NO_DOMAIN,
                 "Domain not found: no domain with matching uuid '%s'"
                 % uuid)


def domain_xml(uuid, name, vcpus, memory_mib, *, nova=True, vcpupin=None,
               numa_nodeset=None, flavor='m1.small', image_id=None,
               project_id=None, domain_id=None, devices=3, extra_specs=None,
               numa_mode='strict'):
    """A domain XML like Nova writes it (``devices`` adds bulk)."""
    image_id = image_id or str(uuid_mod.uuid5(uuid_mod.NAMESPACE_OID, name))
    project_id = project_id or '8f9b0c3d4e5f40718293a4b5c6d7e8f9'
    head = ("<domain type='kvm'%s>" % (" id='%d'" % domain_id
                                       if domain_id is not None else ''))
    lines = [head, '  <name>instance-%s</name>' % name,
             '  <uuid>%s</uuid>' % uuid]
    if nova:
        lines += [
            '  <metadata>',
            '    <nova:instance xmlns:nova="%s">' % NOVA_NS,
            '      <nova:package version="31.0.0"/>',
            '      <nova:name>%s</nova:name>' % name,
            '      <nova:creationTime>2026-01-02 03:04:05</nova:creationTime>',
            '      <nova:flavor name="%s">' % flavor,
            '        <nova:memory>%d</nova:memory>' % memory_mib,
            '        <nova:disk>20</nova:disk>',
            '        <nova:swap>0</nova:swap>',
            '        <nova:ephemeral>0</nova:ephemeral>',
            '        <nova:vcpus>%d</nova:vcpus>' % vcpus]
        if extra_specs is not None:
            # Nova 34 and later.
            lines.append('        <nova:extraSpecs>')
            lines += ['          <nova:extraSpec name="%s">%s</nova:extraSpec>'
                      % item for item in sorted(extra_specs.items())]
            lines.append('        </nova:extraSpecs>')
        lines += [
            '      </nova:flavor>',
            '      <nova:owner>',
            '        <nova:user uuid="0a1b2c3d4e5f60718293a4b5c6d7e8f9">'
            'demo</nova:user>',
            '        <nova:project uuid="%s">demo</nova:project>'
            % project_id,
            '      </nova:owner>',
            '      <nova:root type="image" uuid="%s"/>' % image_id,
            '      <nova:ports>',
            '        <nova:port uuid="%s">' % uuid_mod.uuid5(
                uuid_mod.NAMESPACE_URL, name),
            '          <nova:ip type="fixed" address="10.0.0.7" '
            'ipVersion="4"/>',
            '        </nova:port>',
            '      </nova:ports>',
            '    </nova:instance>',
            '  </metadata>']
    lines += ["  <memory unit='KiB'>%d</memory>" % (memory_mib * 1024),
              "  <currentMemory unit='KiB'>%d</currentMemory>"
              % (memory_mib * 1024),
              "  <vcpu placement='static'>%d</vcpu>" % vcpus,
              '  <cputune>',
              "    <shares>%d</shares>" % (1024 * vcpus)]
    for vcpu, cpus in sorted((vcpupin or {}).items()):
        lines.append("    <vcpupin vcpu='%d' cpuset='%s'/>" % (vcpu, cpus))
    lines.append('  </cputune>')
    if numa_nodeset is not None:
        memory = "    <memory mode='%s' nodeset='%s'/>" % (
            numa_mode, numa_nodeset)
        lines += ['  <numatune>', memory, '  </numatune>']
    lines += ['  <sysinfo type="smbios"><system>',
              '    <entry name="manufacturer">OpenStack Foundation</entry>',
              '    <entry name="serial">%s</entry>' % uuid,
              '  </system></sysinfo>',
              "  <os><type arch='x86_64' machine='pc-q35-8.2'>hvm</type>"
              "<boot dev='hd'/></os>",
              "  <cpu mode='host-model' check='partial'/>",
              '  <devices>',
              '    <emulator>/usr/bin/qemu-system-x86_64</emulator>']
    for n in range(devices):
        lines += [
            "    <disk type='file' device='disk'>",
            "      <driver name='qemu' type='qcow2' cache='none'/>",
            "      <source file='/var/lib/nova/instances/%s/disk%d'/>"
            % (uuid, n),
            "      <target dev='vd%s' bus='virtio'/>" % chr(ord('a') + n),
            "      <address type='pci' domain='0x0000' bus='0x0%d' "
            "slot='0x00' function='0x0'/>" % (n + 1),
            '    </disk>']
    lines += ["    <interface type='bridge'><mac address='fa:16:3e:00:00:01'/>"
              "<model type='virtio'/></interface>",
              "    <serial type='pty'><log file='/var/lib/nova/instances/%s/"
              "console.log' append='off'/></serial>" % uuid,
              "    <video><model type='virtio' heads='1' primary='yes'/>"
              "</video>",
              "    <memballoon model='virtio'><stats period='10'/>"
              "</memballoon>",
              '  </devices>', '</domain>', '']
    return '\n'.join(lines)


class FakeDomain(object):
    """One running domain; its counters advance with :meth:`advance`."""

    def __init__(self, conn, uuid=None, name=None, vcpus=2, memory_mib=2048,
                 cpus_on=None, affinity=None, xml_kwargs=None,
                 perf_supported=True, resctrl=False, vcpu_stats=True):
        self.conn = conn
        self.uuid = uuid or str(uuid_mod.uuid4())
        self.name_ = name or self.uuid[:8]
        self.nvcpus = vcpus
        self.memory_mib = memory_mib
        self.id = conn.next_id()
        self.active = True
        self.gone = False
        self.xml_kwargs = dict(xml_kwargs or {})
        ncpus = conn.ncpus
        #: CPU each vCPU runs on.
        self.cpus_on = list(cpus_on or [v % ncpus for v in range(vcpus)])
        allowed = set(range(ncpus)) if affinity is None else set(affinity)
        self.affinity = [frozenset(allowed) for _ in range(vcpus)]
        self.perf_supported = perf_supported
        self.perf = {}
        self.resctrl = resctrl
        self.vcpu_stats = vcpu_stats
        self.numa = {'numa_mode': 0, 'numa_nodeset': ''}
        self.sched = {'cpu_shares': 1024, 'vcpu_period': 100000,
                      'vcpu_quota': -1, 'emulator_period': 100000,
                      'emulator_quota': -1}
        self.calls = []
        self._xml_cache = {}
        self._maps_cache = {}
        self.reset_counters()

    # -- test controls -----------------------------------------------------

    def reset_counters(self):
        self.counters = dict.fromkeys(
            ('instructions', 'cpu_cycles', 'cache_references',
             'cache_misses', 'cpu_time', 'llc_bytes', 'mbm_local',
             'mbm_total'), 0)
        self.vcpu_time = [0] * self.nvcpus
        self.vcpu_delay = [0] * self.nvcpus

    def advance(self, seconds, ipc=1.0, ghz=2.0, mpki=5.0, mf=0.4,
                util=0.5, mbps=100.0):
        cycles = int(seconds * ghz * 1e9 * util * self.nvcpus)
        instructions = int(cycles * ipc)
        misses = int(instructions * mpki / 1000)
        c = self.counters
        c['cpu_cycles'] += cycles
        c['instructions'] += instructions
        c['cache_misses'] += misses
        c['cache_references'] += int(misses / mf) if mf else misses
        for v in range(self.nvcpus):
            self.vcpu_time[v] += int(seconds * 1e9 * util)
            self.vcpu_delay[v] += int(seconds * 1e6)
        c['llc_bytes'] = 4 * 1024 * 1024
        c['mbm_local'] += int(mbps * 1e6 * seconds * 0.8)
        c['mbm_total'] += int(mbps * 1e6 * seconds)

    def restart(self):
        """Destroy and start again: a new id, counters from zero."""
        self.id = self.conn.next_id()
        self.perf = {}
        self.reset_counters()

    def vanish(self):
        """The domain is destroyed; this object keeps answering errors."""
        self.gone = True
        self.conn.domains = [d for d in self.conn.domains if d is not self]

    def _check(self, call):
        self.calls.append(call)
        if self.gone:
            raise no_domain(self.uuid)
        hook = self.conn.hooks.pop((self.uuid, call), None)
        if hook is not None:
            hook(self)
            if self.gone:
                raise no_domain(self.uuid)

    # -- the libvirt API ---------------------------------------------------

    def UUIDString(self):
        return self.uuid

    def ID(self):
        return self.id

    def name(self):
        return self.name_

    def isActive(self):
        self._check('isActive')
        return int(self.active)

    def XMLDesc(self, flags=0):
        self._check('XMLDesc')
        # Cached: building the text is the daemon's work, not the agent's,
        # and must not count in the benchmark's CPU time.
        key = (flags, self.id, tuple(self.affinity),
               tuple(sorted(self.xml_kwargs.items(), key=str)))
        if self._xml_cache.get('key') != key:
            self._xml_cache = {'key': key, 'xml': self._xml(flags)}
        return self._xml_cache['xml']

    def _xml(self, flags):
        kwargs = dict(self.xml_kwargs)
        if not flags & libvirt.VIR_DOMAIN_XML_INACTIVE:
            kwargs['domain_id'] = self.id
            live = {v: ','.join(str(c) for c in sorted(a))
                    for v, a in enumerate(self.affinity)
                    if len(a) < self.conn.ncpus}
            if live:
                kwargs['vcpupin'] = live
        return domain_xml(self.uuid, self.name_, self.nvcpus,
                          self.memory_mib, **kwargs)

    def vcpus(self):
        self._check('vcpus')
        info = [(v, libvirt.VIR_VCPU_RUNNING, self.vcpu_time[v],
                 self.cpus_on[v]) for v in range(self.nvcpus)]
        # Cached like the XML: libvirt-python builds these tuples in C.
        key = tuple(self.affinity)
        if self._maps_cache.get('key') != key:
            self._maps_cache = {'key': key, 'maps': [
                tuple(c in a for c in range(self.conn.ncpus)) for a in key]}
        return info, list(self._maps_cache['maps'])

    def setPerfEvents(self, params, flags=0):
        self._check('setPerfEvents')
        if not self.perf_supported:
            raise error(libvirt.VIR_ERR_OPERATION_UNSUPPORTED,
                        'Operation not supported: unable to enable host '
                        'cpu perf event for instructions')
        self.perf.update(params)
        return 0

    def pinVcpu(self, vcpu, cpumap):
        self._check('pinVcpu')
        if len(cpumap) > self.conn.ncpus:
            raise error(libvirt.VIR_ERR_INVALID_ARG,
                        'invalid argument: cpumap longer than the host')
        self.affinity[vcpu] = frozenset(i for i, on in enumerate(cpumap)
                                        if on)
        return 0

    def numaParameters(self, flags=0):
        self._check('numaParameters')
        return dict(self.numa)

    def setNumaParameters(self, params, flags=0):
        self._check('setNumaParameters')
        self.numa.update(params)
        return 0

    def schedulerParametersFlags(self, flags=0):
        self._check('schedulerParametersFlags')
        return dict(self.sched)

    def schedulerParameters(self):
        self._check('schedulerParameters')
        return dict(self.sched)

    def setSchedulerParametersFlags(self, params, flags=0):
        self._check('setSchedulerParametersFlags')
        self.sched.update(params)
        return 0

    def stats(self, groups):
        """The flat dict virDomainListGetStats returns for ``groups``."""
        s = {}
        c = self.counters
        if groups & libvirt.VIR_DOMAIN_STATS_CPU_TOTAL:
            s['cpu.time'] = sum(self.vcpu_time) + 1000
            s['cpu.user'] = sum(self.vcpu_time) // 2
            s['cpu.system'] = sum(self.vcpu_time) // 10
            if self.resctrl:
                s.update({'cpu.cache.monitor.count': 1,
                          'cpu.cache.monitor.0.name': 'vcpus_0-%d'
                          % (self.nvcpus - 1),
                          'cpu.cache.monitor.0.vcpus': '0-%d'
                          % (self.nvcpus - 1),
                          'cpu.cache.monitor.0.bank.count': 2,
                          'cpu.cache.monitor.0.bank.0.id': 0,
                          'cpu.cache.monitor.0.bank.0.bytes':
                          c['llc_bytes'] // 2,
                          'cpu.cache.monitor.0.bank.1.id': 1,
                          'cpu.cache.monitor.0.bank.1.bytes':
                          c['llc_bytes'] - c['llc_bytes'] // 2})
        if groups & libvirt.VIR_DOMAIN_STATS_MEMORY and self.resctrl:
            s.update({'memory.bandwidth.monitor.count': 1,
                      'memory.bandwidth.monitor.0.name': 'vcpus_0',
                      'memory.bandwidth.monitor.0.vcpus': '0',
                      'memory.bandwidth.monitor.0.node.count': 2,
                      'memory.bandwidth.monitor.0.node.0.id': 0,
                      'memory.bandwidth.monitor.0.node.0.bytes.local':
                      c['mbm_local'],
                      'memory.bandwidth.monitor.0.node.0.bytes.total':
                      c['mbm_total'],
                      'memory.bandwidth.monitor.0.node.1.id': 1,
                      'memory.bandwidth.monitor.0.node.1.bytes.local': 0,
                      'memory.bandwidth.monitor.0.node.1.bytes.total': 0})
        if groups & libvirt.VIR_DOMAIN_STATS_VCPU and self.vcpu_stats:
            s['vcpu.current'] = self.nvcpus
            s['vcpu.maximum'] = self.nvcpus
            for v in range(self.nvcpus):
                s['vcpu.%d.state' % v] = libvirt.VIR_VCPU_RUNNING
                s['vcpu.%d.time' % v] = self.vcpu_time[v]
                s['vcpu.%d.wait' % v] = 0
                s['vcpu.%d.delay' % v] = self.vcpu_delay[v]
                s['vcpu.%d.halted' % v] = False
        if groups & libvirt.VIR_DOMAIN_STATS_PERF:
            for event in ('instructions', 'cpu_cycles', 'cache_references',
                          'cache_misses'):
                if self.perf.get(event):
                    s['perf.' + event] = c[event]
        return s


class FakeConnection(object):
    """``virConnect`` over a list of :class:`FakeDomain`.

    ``stats_on_gone`` is what ``domainListGetStats`` does with a domain
    that vanished after listing: ``'skip'`` (the QEMU driver leaves it
    out) or ``'raise'`` (VIR_ERR_NO_DOMAIN for the whole call).
    ``hooks[(uuid, call)]`` runs once before that call on that domain,
    e.g. to make it vanish between listing and stats.
    """

    def __init__(self, capabilities, ncpus, online=None):
        self.capabilities = capabilities
        self.ncpus = ncpus
        self.online = (set(range(ncpus)) if online is None
                       else set(online))
        self.domains = []
        self.hooks = {}
        self.stats_on_gone = 'skip'
        self.alive = True
        self.closed = False
        self.fail_next = None
        self.stats_calls = 0
        self._ids = 0

    def next_id(self):
        self._ids += 1
        return self._ids

    def add(self, **kwargs):
        dom = FakeDomain(self, **kwargs)
        self.domains.append(dom)
        return dom

    def _check(self):
        if self.fail_next is not None:
            exc, self.fail_next = self.fail_next, None
            raise exc
        if not self.alive:
            raise error(libvirt.VIR_ERR_INTERNAL_ERROR,
                        'internal error: client socket is closed')

    def getCapabilities(self):
        self._check()
        return self.capabilities

    def getCPUMap(self, flags=0):
        self._check()
        return (self.ncpus, [c in self.online for c in range(self.ncpus)],
                len(self.online))

    def listAllDomains(self, flags=0):
        self._check()
        return [d for d in self.domains if d.active]

    def lookupByUUIDString(self, uuid):
        self._check()
        for dom in self.domains:
            if dom.uuid == uuid:
                return dom
        raise no_domain(uuid)

    def domainListGetStats(self, doms, stats=0, flags=0):
        self._check()
        self.stats_calls += 1
        if not doms:
            # libvirt 9.0 refuses an empty list.
            raise error(libvirt.VIR_ERR_INVALID_ARG,
                        'invalid argument: doms array in '
                        'virDomainListGetStats must contain at least one '
                        'domain')
        result = []
        for dom in doms:
            if dom.gone or (dom.uuid, 'stats') in self.hooks:
                hook = self.hooks.pop((dom.uuid, 'stats'), None)
                if hook is not None:
                    hook(dom)
                if dom.gone:
                    if self.stats_on_gone == 'raise':
                        raise no_domain(dom.uuid)
                    continue
            result.append((dom, dom.stats(stats)))
        return result

    def getAllDomainStats(self, stats=0, flags=0):
        self._check()
        return [(d, d.stats(stats)) for d in self.domains if d.active]

    def isAlive(self):
        return int(self.alive)

    def close(self):
        self.closed = True
        return 0


class FakeOpener(object):
    """``libvirt.open`` replacement: hands out ``conn`` unless told to fail."""

    def __init__(self, conn):
        self.conn = conn
        self.failures = 0
        self.calls = 0
        self.uris = []

    def __call__(self, uri):
        self.calls += 1
        self.uris.append(uri)
        if self.failures:
            self.failures -= 1
            raise error(libvirt.VIR_ERR_SYSTEM_ERROR,
                        "Failed to connect socket to "
                        "'/var/run/libvirt/libvirt-sock': No such file or "
                        "directory")
        self.conn.alive = True
        return self.conn
