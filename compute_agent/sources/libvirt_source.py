"""The libvirt source: domains, their placement and their counters.

Per cycle it makes three kinds of libvirt calls, all cheap on the daemon
side:

* ``virConnectGetCapabilities`` for the host topology (re-parsed only when
  the XML changes, and completed from sysfs with
  :func:`contention.topology_parse.merge` for the cache levels libvirt does
  not report);
* ``virConnectListAllDomains`` then, per domain, ``virDomainGetXMLDesc``
  (Nova metadata, pinning, numatune), ``virDomainGetVcpus`` (the CPU
  each vCPU last ran on and its live affinity) and
  ``virDomainGetSchedulerParameters`` (the live CFS ``vcpu_quota`` /
  ``vcpu_period``: the CPU cap Nova's ``quota:cpu_quota`` or the agent's
  ``set_cpu_quota`` set, which the Watcher quota phase raises);
* one ``virDomainListGetStats`` for the counters of all domains: PERF
  (``perf.instructions``, ``perf.cpu_cycles``, ``perf.cache_references``,
  ``perf.cache_misses``), VCPU (``vcpu.<n>.time``, ``vcpu.<n>.delay``).

A domain can vanish between any two of these calls (``VIR_ERR_NO_DOMAIN``);
it is then reported with what was already read and the note
``vanished_mid_collection``, or left out if nothing was. Perf events are
enabled live on each domain the first time it is seen (``perf_events``
option); if the host cannot count them (no PMU in a VM, perf_event_paranoid,
an old kernel) the counters stay None and the status says why, once.
"""

import errno
import itertools
import os

import libvirt
from oslo_log import log as logging

from compute_agent import domain_xml
from compute_agent import libvirt_connection
from compute_agent.sources import base
from contention import topology as topology_mod
from contention import topology_parse

LOG = logging.getLogger(__name__)

VANISHED = 'vanished_mid_collection'

#: libvirt perf event -> Counters field.
PERF_COUNTERS = {
    'instructions': 'instructions',
    'cpu_cycles': 'cycles',
    'cache_references': 'cache_references',
    'cache_misses': 'cache_misses',
}

STATS = (libvirt.VIR_DOMAIN_STATS_PERF | libvirt.VIR_DOMAIN_STATS_VCPU
         | libvirt.VIR_DOMAIN_STATS_CPU_TOTAL)
#: Note on an instance whose cpu_time_ns is the whole domain's
#: ``cpu.time`` (emulator threads included) for lack of per-vCPU times.
CPU_TIME_FROM_TOTAL = 'cpu_time_from_cpu_total'
#: The persistent definition, which holds the pinning Nova wrote; the live
#: XML also shows the agent's own live re-pinning (see actions.py).
XML_FLAGS = libvirt.VIR_DOMAIN_XML_INACTIVE


#: Note on an instance whose CPU cap libvirt could not report.
QUOTA_UNAVAILABLE = 'cpu_quota_unavailable'

#: Note on a capped instance whose vcpu_delay_ns is left null: libvirt's
#: vCPU delay (schedstat run_delay) also counts the time the CFS quota
#: throttled the vCPU, which is the cap working, not contention.
DELAY_WITH_THROTTLING = 'vcpu_delay_includes_throttling'

PERF_OFF = ('perf events off: [agent] perf_events is empty, so the '
            'instructions/cycles/cache counters are null')

NO_PERF_STATS = ('no perf.* counters in libvirt\'s domain stats: the perf '
                 'events are off or this libvirt driver does not count '
                 'them (see doc/agent.md, "perf events")')


def _uuid(dom):
    try:
        return dom.UUIDString()
    except libvirt.libvirtError:
        return '?'


def _no_domain(exc):
    return exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN


def _process_gone(exc):
    """Whether ``exc`` says the domain's QEMU process no longer exists.

    While ``virsh destroy`` runs, libvirt still lists the domain as
    running after QEMU has exited, and a call that reads the process
    (``vcpus()``: "cannot get CPU affinity of process N") fails with a
    system error of errno ESRCH.
    """
    if exc.get_error_code() != libvirt.VIR_ERR_SYSTEM_ERROR:
        return False
    return (exc.get_int1() == errno.ESRCH or (exc.get_error_message() or '')
            .endswith(os.strerror(errno.ESRCH)))


def _gone(dom, exc):
    """Whether ``exc``, raised by a call on ``dom``, means it stopped.

    A domain that was destroyed is ``VIR_ERR_NO_DOMAIN`` if it was
    transient, but a persistent one (every Nova instance) stays defined,
    and while or after ``virsh destroy`` runs the calls that need a running
    domain fail with ``VIR_ERR_OPERATION_INVALID`` ("domain is not
    running"). That code has other meanings too, so the domain is asked.
    A call that found its QEMU process gone (:func:`_process_gone`) means
    it stopped too.
    """
    if _no_domain(exc) or _process_gone(exc):
        return True
    if exc.get_error_code() != libvirt.VIR_ERR_OPERATION_INVALID:
        return False
    try:
        return not dom.isActive()
    except libvirt.libvirtError as again:
        return _no_domain(again)


def _sum_vcpu(stats, vcpus, field):
    """Sum ``vcpu.<n>.<field>`` over the online vCPUs.

    vCPU numbers need not be contiguous (hot-unplug), so every number up
    to ``vcpu.maximum`` is tried; the sum is None unless as many values
    were found as ``vcpu.current`` says are online (a partial sum would
    look like an idle vCPU).
    """
    maximum = stats.get('vcpu.maximum', vcpus)
    online = stats.get('vcpu.current', vcpus)
    total = 0
    found = 0
    for n in range(maximum):
        value = stats.get('vcpu.%d.%s' % (n, field))
        if value is not None:
            total += value
            found += 1
    if found == 0 or found < online:
        return None
    return total


def cpu_quota_from_params(params):
    """The CPU cap of libvirt's scheduler parameters, or None.

    QEMU/KVM domains have ``vcpu_quota`` and ``vcpu_period`` (CFS, per
    vCPU thread, microseconds); the cap is their ratio, the fraction of
    each vCPU the instance may use. A quota <= 0 (-1, or 0 on old
    libvirt) is no cap, and a driver without them (the test driver has
    only ``weight``) does not say: both None, as the report defines.
    """
    quota = params.get('vcpu_quota')
    period = params.get('vcpu_period')
    if not quota or not period or quota <= 0 or period <= 0:
        return None
    return quota / period


def counters_from_stats(stats, vcpus):
    """Counters (cumulative) from one domain's ``virDomainListGetStats``.

    :returns: (counters, notes).
    """
    counters = {field: stats.get('perf.' + event)
                for event, field in PERF_COUNTERS.items()}
    counters['cpu_time_ns'] = _sum_vcpu(stats, vcpus, 'time')
    counters['vcpu_delay_ns'] = _sum_vcpu(stats, vcpus, 'delay')
    notes = ()
    if counters['cpu_time_ns'] is None and 'cpu.time' in stats:
        counters['cpu_time_ns'] = stats['cpu.time']
        notes = (CPU_TIME_FROM_TOTAL,)
    return counters, notes


class LibvirtSource(base.Source):
    """Domains, Nova metadata, vCPU placement and perf/vCPU counters."""

    name = 'libvirt'

    def __init__(self, connection=None, sysfs_root=None):
        self._connection = connection
        self._sysfs_root = sysfs_root
        self._host = None
        self._memory_bps = None
        self._perf_events = ()
        self._dedicated = None
        self._caps_xml = None
        self._topology = None
        self._topology_note = None
        self._parsed = {}
        self._perf_done = set()
        #: (uuid, domain id) of the domains reported with per-vCPU times.
        self._vcpu_times = set()
        self._perf_problem = None
        self._quota_problem = None

    def open(self, conf):
        agent = conf.agent
        self._host = agent.host
        if agent.memory_bandwidth_gbps is not None:
            self._memory_bps = agent.memory_bandwidth_gbps * 1e9
        if self._connection is None:
            self._connection = libvirt_connection.LibvirtConnection(
                agent.libvirt_uri, min_wait=agent.libvirt_reconnect_min,
                max_wait=agent.libvirt_reconnect_max)
        if self._sysfs_root is None:
            self._sysfs_root = agent.sysfs_root
        self._perf_events = tuple(agent.perf_events)
        if agent.dedicated_cpu_set:
            self._dedicated = frozenset(topology_parse.parse_cpulist(
                agent.dedicated_cpu_set, '[agent] dedicated_cpu_set'))

    def close(self):
        self._connection.close()

    # -- topology ----------------------------------------------------------

    def _read_topology(self, conn):
        """The host topology, re-parsed when the capabilities XML changes.

        The XML changes for reasons that are not the topology: on a host
        without DMI data libvirtd invents a random host uuid at every
        start. A topology equal to the last one is kept (the same
        object), so only a real change is logged.
        """
        caps = conn.getCapabilities()
        if caps == self._caps_xml:
            return self._topology
        topology = topology_parse.from_capabilities_xml(caps, self._host)
        note = None
        try:
            sysfs = topology_parse.from_sysfs(self._sysfs_root, self._host)
            topology = topology_parse.merge(topology, sysfs)
        except topology_parse.TopologyError as exc:
            # e.g. the test driver's invented host, or no NUMA in sysfs:
            # libvirt's view is what Nova pins against, keep it alone.
            note = 'topology from libvirt only (sysfs not used: %s)' % exc
        topology = topology_mod.with_memory_bandwidth(topology,
                                                      self._memory_bps)
        self._caps_xml = caps
        if topology == self._topology and note == self._topology_note:
            return self._topology
        if note:
            LOG.warning('Host topology: %s', note)
        if self._topology is not None:
            LOG.info('Host topology changed; re-read it')
        self._topology_note = note
        self._topology = topology
        return topology

    # -- per domain --------------------------------------------------------

    def _parse_xml(self, xml):
        info = self._parsed.get(xml)
        if info is None:
            info = domain_xml.parse(xml)
            self._parsed[xml] = info
        return info

    def _enable_perf(self, dom, key):
        if not self._perf_events or key in self._perf_done:
            return
        try:
            dom.setPerfEvents({event: True for event in self._perf_events},
                              libvirt.VIR_DOMAIN_AFFECT_LIVE)
        except libvirt.libvirtError as exc:
            if _gone(dom, exc):
                raise
            if self._perf_problem is None:
                LOG.warning('Cannot enable perf events %(events)s: %(err)s. '
                            'The instructions/cycles/cache counters stay '
                            'null. Fix: run on bare metal with a PMU, '
                            'kernel.perf_event_paranoid <= 0 for libvirtd, '
                            'and a QEMU/libvirt with perf support; see '
                            'doc/agent.md.',
                            {'events': ','.join(self._perf_events),
                             'err': exc})
            self._perf_problem = ('perf events unavailable: %s'
                                  % exc.get_error_message())
        self._perf_done.add(key)

    def _cpu_quota(self, dom):
        """(cap, notes) of a running domain; raises if it vanished.

        Read live every cycle (one cheap call), so a cap the agent's
        ``set_cpu_quota`` changed shows in the next report. Any other
        libvirt error leaves the cap unknown for this instance, noted,
        and is logged once: the rest of the report does not depend on it.
        """
        try:
            # Not schedulerParametersFlags: libvirt-python adds
            # VIR_TYPED_PARAM_STRING_OKAY, which drivers without string
            # parameters (the test driver) refuse. The plain call reads
            # the running domain's live values.
            params = dom.schedulerParameters()
        except libvirt.libvirtError as exc:
            if _gone(dom, exc):
                raise
            if self._quota_problem is None:
                LOG.warning('Cannot read the CPU quota of domain %(uuid)s: '
                            '%(err)s. Its cpu_quota stays null (the quota '
                            'phase treats it as uncapped).',
                            {'uuid': _uuid(dom), 'err': exc})
            self._quota_problem = exc.get_error_message()
            return None, (QUOTA_UNAVAILABLE,)
        return cpu_quota_from_params(params), ()

    def _domain(self, dom):
        """InstanceSample fields of one domain.

        None if it vanished; raises DomainXMLError if its XML is unusable.
        """
        try:
            key = (dom.UUIDString(), dom.ID())
            info = self._parse_xml(dom.XMLDesc(XML_FLAGS))
            self._enable_perf(dom, key)
            vcpu_info, cpumaps = dom.vcpus()
            cpu_quota, notes = self._cpu_quota(dom)
        except libvirt.libvirtError as exc:
            if _gone(dom, exc):
                return None
            raise
        vcpu_cpus = tuple(entry[3] for entry in vcpu_info)
        if any(cpu < 0 for cpu in vcpu_cpus):
            vcpu_cpus = None    # a vCPU not running: placement unknown
        if all(all(cpumap) for cpumap in cpumaps):
            cpuset = ()     # may run on any CPU (the common, unpinned case)
        else:
            allowed = set()
            for cpumap in cpumaps:
                allowed.update(itertools.compress(range(len(cpumap)),
                                                  cpumap))
            cpuset = tuple(sorted(allowed))
        policy = domain_xml.cpu_policy(info, self._dedicated)
        return dict(uuid=info.uuid, name=info.nova_name or info.name,
                    vcpus=info.vcpus, memory_mib=info.memory_mib,
                    flavor=info.flavor, image_id=info.image_id,
                    project_id=info.project_id, cpu_policy=policy,
                    vcpu_cpus=vcpu_cpus, cpuset=cpuset,
                    cpu_quota=cpu_quota, notes=notes,
                    incarnation=str(key[1]))

    def _stats(self, conn, doms):
        """uuid -> stats dict; a domain that vanished has no entry."""
        if not doms:
            return {}   # libvirt refuses an empty list (INVALID_ARG)
        try:
            pairs = conn.domainListGetStats(doms, STATS, 0)
        except libvirt.libvirtError as exc:
            if not (_no_domain(exc) or exc.get_error_code()
                    == libvirt.VIR_ERR_OPERATION_INVALID):
                raise
            # One domain vanished or stopped and took the bulk call with
            # it: ask per domain so the others keep their counters.
            pairs = []
            for dom in doms:
                try:
                    pairs.extend(conn.domainListGetStats([dom], STATS, 0))
                except libvirt.libvirtError as exc:
                    if not _gone(dom, exc):
                        raise
            pairs = self._together(conn, pairs)
        return {dom.UUIDString(): stats for dom, stats in pairs}

    @staticmethod
    def _together(conn, pairs):
        """``pairs``' domains read again in one call, if they all answer.

        The calls one domain at a time ran one after another, and the
        call of a domain being destroyed can wait for the destroy (about
        two seconds under ``virsh destroy``): counters read before it
        would be older than the end of the turn, which the loop measures
        every instance's interval to, and their rates would come out
        too high, or be refused as impossible (a busy guest's CPU time
        over a 50 ms cycle, tests/functional/hypervisor). If one more
        domain stops meanwhile, the reads one at a time stand.
        """
        if not pairs:
            return pairs
        try:
            return conn.domainListGetStats([dom for dom, _ in pairs],
                                           STATS, 0)
        except libvirt.libvirtError as exc:
            if not (_no_domain(exc) or exc.get_error_code()
                    == libvirt.VIR_ERR_OPERATION_INVALID):
                raise
            return pairs

    # -- the cycle ---------------------------------------------------------

    def collect(self, now):
        try:
            conn = self._connection.get()
        except libvirt_connection.Disconnected as exc:
            return base.SourceSample(
                status=base.SourceStatus(self.name, False, str(exc)),
                events=tuple(self._connection.pop_events()))
        try:
            return self._collect(conn)
        except libvirt.libvirtError as exc:
            self._connection.check_error(exc)
            LOG.warning('libvirt source failed this cycle: %s', exc)
            return base.SourceSample(
                status=base.SourceStatus(self.name, False,
                                         'libvirt error: %s' % exc),
                events=tuple(self._connection.pop_events()))

    def _collect(self, conn):
        topology = self._read_topology(conn)
        doms = conn.listAllDomains(libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE)
        found = []
        vanished = 0
        malformed = 0
        for dom in doms:
            try:
                fields = self._domain(dom)
            except domain_xml.DomainXMLError as exc:
                # One unreadable definition must not hide the others.
                malformed += 1
                LOG.warning('Domain %s skipped: %s', _uuid(dom), exc)
                continue
            if fields is None:
                vanished += 1
            else:
                found.append((dom, fields))
        stats = self._stats(conn, [dom for dom, _ in found])
        instances = []
        perf_seen = False
        for dom, fields in found:
            dom_stats = stats.get(fields['uuid'])
            if dom_stats is None:
                instances.append(base.InstanceSample(
                    counters={}, **dict(fields, notes=fields['notes']
                                        + (VANISHED,))))
                continue
            perf_seen = perf_seen or any(k.startswith('perf.')
                                         for k in dom_stats)
            counters, notes = counters_from_stats(dom_stats,
                                                  fields['vcpus'])
            if fields['cpu_quota'] is not None:
                counters['vcpu_delay_ns'] = None
                notes += (DELAY_WITH_THROTTLING,)
            key = (fields['uuid'], int(fields['incarnation']))
            if CPU_TIME_FROM_TOTAL not in notes:
                self._vcpu_times.add(key)
            elif key in self._vcpu_times:
                # Per-vCPU times until now, only the domain's total (with
                # its emulator threads) this time: a domain stopping under
                # us. A delta between the two would be nonsense.
                counters['cpu_time_ns'] = None
                notes = tuple(n for n in notes if n != CPU_TIME_FROM_TOTAL)
            instances.append(base.InstanceSample(
                counters=counters,
                **dict(fields, notes=fields['notes'] + notes)))
        self._forget_gone({(fields['uuid'], int(fields['incarnation']))
                           for _, fields in found})
        if perf_seen:
            # Counting now: an earlier failure to enable them is over.
            self._perf_problem = None
        reasons = [self._perf_problem, self._topology_note]
        if not self._perf_events:
            reasons.append(PERF_OFF)
        elif found and not perf_seen and self._perf_problem is None:
            reasons.append(NO_PERF_STATS)
        reasons = [r for r in reasons if r]
        events = self._connection.pop_events()
        if vanished:
            events.append('domains_vanished_mid_collection:%d' % vanished)
        if malformed:
            events.append('domains_with_malformed_xml:%d' % malformed)
        return base.SourceSample(
            status=base.SourceStatus(self.name, True,
                                     '; '.join(reasons) or None),
            topology=topology, instances=tuple(instances),
            events=tuple(events))

    def _forget_gone(self, present):
        self._perf_done &= present
        self._vcpu_times &= present
        if len(self._parsed) > 2 * max(len(present), 16):
            self._parsed.clear()
