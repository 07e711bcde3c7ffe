"""The numa_memory source: each domain's memory per host NUMA node.

Remote memory is one of Liu & Li's four overheads (section 3), and an
instance whose vCPUs and memory sit on different nodes pays it on every
miss. The kernel knows where each page is; two places say it:

* ``/proc/<pid>/numa_maps`` of the QEMU process (``numa_memory_method =
  numa_maps``): every mapping with its pages per node (``N<node>=<pages>``)
  and page size (``kernelpagesize_kB``), hugetlbfs guest RAM included.
  Reading it walks the process's page tables: on a 1 TiB guest that costs
  tens of milliseconds of kernel time.
* the cgroup v2 ``memory.numa_stat`` of the domain's scope
  (``numa_memory_method = numa_stat``): ``anon`` and ``file`` bytes per
  node, as charged to the cgroup; cheap, but hugetlbfs pages are not
  charged to the memory controller, so guests backed by hugepages (Nova's
  ``hw:mem_page_size``) show almost nothing. Use numa_maps for those.

QEMU processes are found by the ``-uuid <uuid>`` on their command line,
which libvirt always passes and which is the Nova instance uuid, so this
source needs no libvirt connection.
"""

import collections
import os
import re

from oslo_log import log as logging

from compute_agent.sources import base

LOG = logging.getLogger(__name__)

_NODE_FIELD = re.compile(r'^N(\d+)=(\d+)$')
MIB = 1024 * 1024


def find_qemu_processes(proc_root):
    """uuid -> pid of every process whose command line has ``-uuid U``."""
    found = {}
    try:
        entries = os.listdir(proc_root)
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(os.path.join(proc_root, entry, 'cmdline'), 'rb') as f:
                args = f.read().split(b'\0')
        except OSError:
            continue    # exited, or not ours to read
        if b'-uuid' not in args:
            continue
        index = args.index(b'-uuid')
        if index + 1 < len(args):
            found[args[index + 1].decode('ascii', 'replace')] = int(entry)
    return found


def parse_numa_maps(text):
    """MiB per node from a numa_maps file (all mappings, all page sizes)."""
    per_node = collections.defaultdict(float)
    for line in text.splitlines():
        fields = line.split()
        page_kib = 4
        pages = []
        for field in fields[2:]:
            if field.startswith('kernelpagesize_kB='):
                page_kib = int(field.partition('=')[2])
            else:
                match = _NODE_FIELD.match(field)
                if match:
                    pages.append((int(match.group(1)), int(match.group(2))))
        for node, count in pages:
            per_node[node] += count * page_kib / 1024.0
    return dict(per_node)


def parse_numa_stat(text):
    """MiB per node from memory.numa_stat (``anon`` + ``file``)."""
    per_node = collections.defaultdict(float)
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0] not in ('anon', 'file'):
            continue
        for field in fields[1:]:
            match = _NODE_FIELD.match(field)
            if match:
                per_node[int(match.group(1))] += int(match.group(2)) / MIB
    return dict(per_node)


def domain_cgroup(cgroup_text):
    """The domain's cgroup v2 path from /proc/<pid>/cgroup.

    libvirt puts QEMU's threads below ``machine-qemu…scope/libvirt/…``;
    the scope is where the domain's memory is accounted (recursively).
    """
    for line in cgroup_text.splitlines():
        if line.startswith('0::'):
            parts = line[3:].strip().split('/')
            if 'libvirt' in parts:
                parts = parts[:parts.index('libvirt')]
            return '/'.join(parts)
    return None


class NumaMemorySource(base.Source):
    name = 'numa_memory'

    def open(self, conf):
        agent = conf.agent
        self._method = agent.numa_memory_method
        self._proc = agent.proc_root
        self._cgroup = agent.cgroup_root

    def _read(self, pid):
        if self._method == 'numa_maps':
            with open(os.path.join(self._proc, str(pid), 'numa_maps')) as f:
                return parse_numa_maps(f.read())
        with open(os.path.join(self._proc, str(pid), 'cgroup')) as f:
            path = domain_cgroup(f.read())
        if path is None:
            raise FileNotFoundError('no cgroup v2 entry for pid %d' % pid)
        stat = os.path.join(self._cgroup, path.lstrip('/'),
                            'memory.numa_stat')
        with open(stat) as f:
            return parse_numa_stat(f.read())

    def collect(self, now):
        processes = find_qemu_processes(self._proc)
        instances = []
        denied = None
        for uuid, pid in processes.items():
            try:
                per_node = self._read(pid)
            except PermissionError as exc:
                denied = exc
                continue
            except OSError:
                continue    # the process exited since listing
            instances.append(base.InstanceSample(
                uuid=uuid, memory_mib_per_node=per_node))
        if processes and not instances and denied is not None:
            return self.unavailable(
                'cannot read %s of the QEMU processes (%s): run the agent as '
                'root or with CAP_SYS_PTRACE' % (self._method, denied))
        return self.available(instances=tuple(instances))
