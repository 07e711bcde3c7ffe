"""The resctrl source: LLC occupancy and memory bandwidth per instance.

Intel RDT (CMT, MBM) and AMD PQoS count, per resource-monitoring group, the
bytes a group holds in the L3 (a gauge) and the bytes it moved to and from
DRAM (cumulative, local node and total). The Linux interface is the
resctrl file system; two ways to reach it (``resctrl_mode``):

* ``libvirt``: domains with ``<cachetune>``/``<memorytune>`` monitors
  (``<monitor level='3' vcpus='0-3'/>``) get libvirt's
  ``cpu.cache.monitor.*`` and ``memory.bandwidth.monitor.*`` domain stats;
  the source sums every monitor's banks / nodes;
* ``sysfs``: monitoring groups ``<resctrl_root>/mon_groups/<uuid>`` (or
  below a control group) created for each instance by the deployment, whose
  ``mon_data/mon_L3_*/{llc_occupancy,mbm_local_bytes,mbm_total_bytes}`` the
  source sums over L3 domains.

Bandwidth bytes are reported cumulative and turned into deltas by the
core, like every counter.
"""

import glob
import os
import re

import libvirt
from oslo_log import log as logging

from compute_agent import libvirt_connection
from compute_agent.sources import base

LOG = logging.getLogger(__name__)

STATS = libvirt.VIR_DOMAIN_STATS_CPU_TOTAL | libvirt.VIR_DOMAIN_STATS_MEMORY
_UUID = re.compile(r'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}$')
_FILES = {'llc_occupancy': 'llc_occupancy_bytes',
          'mbm_local_bytes': 'mbm_local_bytes',
          'mbm_total_bytes': 'mbm_total_bytes'}


def _sum_monitors(stats, prefix, part, fields):
    """Sum ``<prefix>.<n>.<part>.<m>.<field>`` over monitors and parts."""
    count = stats.get(prefix + '.count')
    if not count:
        return None
    totals = {field: 0 for field in fields}
    for n in range(count):
        parts = stats.get('%s.%d.%s.count' % (prefix, n, part))
        if parts is None:
            return None
        for m in range(parts):
            for field in fields:
                value = stats.get('%s.%d.%s.%d.%s' % (prefix, n, part, m,
                                                      field))
                if value is None:
                    totals[field] = None
                elif totals[field] is not None:
                    totals[field] += value
    return totals


def counters_from_stats(stats):
    """resctrl counters of one domain from libvirt's domain stats."""
    counters = {}
    cache = _sum_monitors(stats, 'cpu.cache.monitor', 'bank', ('bytes',))
    if cache is not None:
        counters['llc_occupancy_bytes'] = cache['bytes']
    bandwidth = _sum_monitors(stats, 'memory.bandwidth.monitor', 'node',
                              ('bytes.local', 'bytes.total'))
    if bandwidth is not None:
        counters['mbm_local_bytes'] = bandwidth['bytes.local']
        counters['mbm_total_bytes'] = bandwidth['bytes.total']
    return counters


def read_mon_group(path):
    """Sum a monitoring group's mon_data over its L3 domains.

    A file reading ``Unavailable`` (the hardware lost the RMID's count)
    makes that counter None for the group: a partial sum would look like a
    drop in traffic.
    """
    values = {}
    for domain in sorted(glob.glob(os.path.join(path, 'mon_data',
                                                'mon_L3_*'))):
        for filename, name in _FILES.items():
            try:
                with open(os.path.join(domain, filename)) as f:
                    text = f.read().strip()
            except FileNotFoundError:
                continue    # the CPU lacks this monitoring feature
            values.setdefault(name, []).append(
                int(text) if text.isdigit() else None)
    return {name: None if None in found else sum(found)
            for name, found in values.items()}


class ResctrlSource(base.Source):
    name = 'resctrl'

    def __init__(self, connection=None):
        self._connection = connection

    def open(self, conf):
        agent = conf.agent
        self._mode = agent.resctrl_mode
        self._root = agent.resctrl_root
        if self._mode == 'libvirt' and self._connection is None:
            self._connection = libvirt_connection.LibvirtConnection(
                agent.libvirt_uri, min_wait=agent.libvirt_reconnect_min,
                max_wait=agent.libvirt_reconnect_max)

    def close(self):
        if self._connection is not None:
            self._connection.close()

    def _mounted(self):
        return os.path.isdir(os.path.join(self._root, 'info', 'L3_MON'))

    def collect(self, now):
        if self._mode == 'sysfs':
            return self._collect_sysfs()
        try:
            conn = self._connection.get()
            pairs = conn.getAllDomainStats(
                STATS, libvirt.VIR_CONNECT_GET_ALL_DOMAINS_STATS_ACTIVE)
        except libvirt_connection.Disconnected as exc:
            return self.unavailable(str(exc))
        except libvirt.libvirtError as exc:
            self._connection.check_error(exc)
            return self.unavailable('libvirt error: %s' % exc)
        instances = []
        for dom, stats in pairs:
            counters = counters_from_stats(stats)
            if counters:
                instances.append(base.InstanceSample(
                    uuid=dom.UUIDString(), counters=counters))
        if not self._mounted():
            return self.unavailable(self._why_nothing())
        if pairs and not instances:
            return self.unavailable(
                'no running domain has a <cachetune>/<memorytune> '
                '<monitor>, so libvirt reports no cpu.cache.monitor.* or '
                'memory.bandwidth.monitor.* stats. Fix: add monitors to '
                'the domains, or create a mon_group per instance and set '
                '[agent] resctrl_mode = sysfs (see doc/agent.md)')
        return self.available(instances=tuple(instances))

    def _why_nothing(self):
        return ('resctrl monitoring not available: %s/info/L3_MON '
                'missing. Fix: a CPU with Intel RDT CMT/MBM or AMD PQoS, a '
                'kernel with CONFIG_X86_CPU_RESCTRL, and "mount -t resctrl '
                'resctrl %s"' % (self._root, self._root))

    def _collect_sysfs(self):
        if not self._mounted():
            return self.unavailable(self._why_nothing())
        instances = []
        pattern = [os.path.join(self._root, 'mon_groups', '*'),
                   os.path.join(self._root, '*', 'mon_groups', '*')]
        for path in sorted(p for pat in pattern for p in glob.glob(pat)):
            name = os.path.basename(path)
            if not _UUID.match(name):
                continue
            counters = read_mon_group(path)
            if counters:
                instances.append(base.InstanceSample(uuid=name,
                                                     counters=counters))
        if not instances:
            return self.unavailable(
                'no monitoring group named by an instance uuid under '
                '%s/mon_groups. Fix: create one per instance with the QEMU '
                'process\'s tasks in it (see doc/agent.md), or use '
                '[agent] resctrl_mode = libvirt' % self._root)
        return self.available(instances=tuple(instances))
