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

Memory placement changes slowly (migration between nodes is the kernel's
NUMA balancing or an explicit move), so each instance is read every
``numa_memory_refresh`` cycles, spread evenly; in between its last reading
is reported.

QEMU processes are found by the ``-uuid <uuid>`` on their command line,
which libvirt always passes and which is the Nova instance uuid, so this
source needs no libvirt connection.
"""

import collections
import os
import re
import zlib

from oslo_log import log as logging

from compute_agent.sources import base

LOG = logging.getLogger(__name__)

_NODE_FIELD = re.compile(r'^N(\d+)=(\d+)$')
_NODE_PAGES = re.compile(r' N(\d+)=(\d+)')
_NODE_IDS = re.compile(r' N(\d+)=')
#: The page size of a numa_maps line whose pages are not 4 KiB.
_LARGE_PAGES = re.compile(r'kernelpagesize_kB=(?!4\b)(\d+)')
MIB = 1024 * 1024


def _qemu_uuid(proc_root, entry):
    """The ``-uuid`` of process ``entry`` if it is QEMU, else None."""
    try:
        with open(os.path.join(proc_root, entry, 'cmdline'), 'rb') as f:
            args = f.read().split(b'\0')
    except OSError:
        return None     # exited, or not ours to read
    if b'-uuid' not in args:
        return None
    index = args.index(b'-uuid')
    if index + 1 < len(args):
        return args[index + 1].decode('ascii', 'replace')
    return None


def find_qemu_processes(proc_root, known=None):
    """uuid -> pid of every process whose command line has ``-uuid U``.

    ``known`` (pid string -> uuid or None), when given, is a cache kept by
    the caller between cycles: a process's command line does not change,
    so only new pids are read, and pids that are gone are dropped from it.
    """
    found = {}
    try:
        entries = [e for e in os.listdir(proc_root) if e.isdigit()]
    except OSError:
        return found
    if known is None:
        known = {}
    else:
        for gone in set(known).difference(entries):
            del known[gone]
    for entry in entries:
        if entry in known:
            uuid = known[entry]
        else:
            uuid = known[entry] = _qemu_uuid(proc_root, entry)
        if uuid is not None:
            found[uuid] = int(entry)
    return found


def _guest_memory(line):
    """Whether a numa_maps line can hold guest RAM.

    Guest RAM is anonymous memory, hugetlbfs (``huge``) or a memfd
    (``memory-backend-memfd``); every other file-backed mapping is the
    QEMU binary, its libraries and firmware images (about 27 MiB of page
    cache per guest on QEMU 7.2), shared with other processes and not the
    instance's memory.
    """
    return (' file=' not in line or ' huge ' in line
            or ' file=/memfd:' in line)


def parse_numa_maps(text):
    """MiB of guest memory per node from a numa_maps file.

    A QEMU process has hundreds of mappings (libraries, heaps, guest RAM)
    and this runs once per instance and cycle, so the file-backed
    mappings that cannot be guest RAM are dropped first
    (:func:`_guest_memory`), the rest is scanned by one regular expression
    counting every page as 4 KiB, and the few lines with larger pages
    (hugetlbfs, ``kernelpagesize_kB=2048``) are then corrected.
    """
    text = '\n'.join(line for line in text.splitlines()
                     if _guest_memory(line + ' '))
    per_node = {}
    for node in set(_NODE_IDS.findall(text)):
        per_node[int(node)] = sum(map(int, re.findall(
            r' N%s=(\d+)' % node, text)))
    for match in _LARGE_PAGES.finditer(text):
        extra = int(match.group(1)) // 4 - 1
        line = text[text.rfind('\n', 0, match.start()) + 1:match.start()]
        for node, pages in _NODE_PAGES.findall(line):
            node = int(node)
            per_node[node] += int(pages) * extra
    return {node: pages * 4 / 1024.0 for node, pages in per_node.items()}


def parse_numa_stat(text):
    """MiB of guest memory per node from memory.numa_stat (``anon``).

    The ``file`` lines are page cache charged to the domain (QEMU's
    binary and libraries, disk images read through the cache), not the
    guest's memory, as in :func:`parse_numa_maps`.
    """
    per_node = collections.defaultdict(float)
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0] != 'anon':
            continue
        for field in fields[1:]:
            match = _NODE_FIELD.match(field)
            if match:
                per_node[int(match.group(1))] += int(match.group(2)) / MIB
    return dict(per_node)


def domain_cgroup(cgroup_text):
    """The domain's cgroup v2 path from /proc/<pid>/cgroup, or None.

    None when the memory is not accounted in cgroup v2: no unified entry,
    or a hybrid host whose ``memory`` controller is a v1 hierarchy.
    libvirt puts QEMU's threads below ``machine-qemu…scope/libvirt/…``;
    the scope is where the domain's memory is accounted (recursively).
    """
    lines = cgroup_text.splitlines()
    if any(line.split(':')[1:2] == ['memory'] for line in lines):
        return None     # memory accounted by the cgroup v1 controller
    for line in lines:
        if line.startswith('0::'):
            parts = line[3:].strip().split('/')
            if 'libvirt' in parts:
                parts = parts[:parts.index('libvirt')]
            return '/'.join(parts)
    return None


class NotMeasurable(Exception):
    """This host cannot give the configured method's reading; says why."""


class NumaMemorySource(base.Source):
    name = 'numa_memory'

    def open(self, conf):
        agent = conf.agent
        self._method = agent.numa_memory_method
        self._proc = agent.proc_root
        self._cgroup = agent.cgroup_root
        self._every = agent.numa_memory_refresh
        self._known = {}
        self._last = {}
        self._cycle = 0

    def _read(self, pid):
        """MiB per node of process ``pid``.

        Raises OSError if the process exited (its /proc files are gone),
        :class:`NotMeasurable` if it runs but the method cannot read it.
        """
        proc = os.path.join(self._proc, str(pid))
        if self._method == 'numa_maps':
            with open(os.path.join(proc, 'numa_maps')) as f:
                return parse_numa_maps(f.read())
        with open(os.path.join(proc, 'cgroup')) as f:
            path = domain_cgroup(f.read())
        if path is None:
            raise NotMeasurable(
                'numa_memory_method = numa_stat needs the cgroup v2 '
                '(unified) hierarchy, and the QEMU processes are in cgroup '
                'v1 controllers; use numa_memory_method = numa_maps')
        stat = os.path.join(self._cgroup, path.lstrip('/'),
                            'memory.numa_stat')
        try:
            with open(stat) as f:
                return parse_numa_stat(f.read())
        except FileNotFoundError:
            if not os.path.exists(proc):
                raise
            raise NotMeasurable(
                'no %s: is the cgroup v2 memory controller enabled for '
                'the domains ([agent] cgroup_root = %s)? Else use '
                'numa_memory_method = numa_maps' % (stat, self._cgroup)
            ) from None

    def _due(self, uuid, pid):
        """Whether this instance's placement is read this cycle.

        Each instance is read every ``numa_memory_refresh`` cycles, on a
        cycle fixed by its uuid, so the cost is spread evenly over the
        cycles; a new process (a new pid) is read at once.
        """
        last = self._last.get(uuid)
        if last is None or last[0] != pid:
            return True
        return (self._cycle + zlib.crc32(uuid.encode())) % self._every == 0

    def collect(self, now):
        self._cycle += 1
        processes = find_qemu_processes(self._proc, self._known)
        instances = []
        denied = None
        for uuid, pid in processes.items():
            if self._due(uuid, pid):
                try:
                    per_node = self._read(pid)
                except PermissionError as exc:
                    denied = exc
                    continue
                except NotMeasurable as exc:
                    # The same for every process: say it, and why.
                    return self.unavailable(str(exc))
                except OSError:
                    continue    # the process exited since listing
                self._last[uuid] = (pid, per_node)
            instances.append(base.InstanceSample(
                uuid=uuid, memory_mib_per_node=self._last[uuid][1]))
        for gone in set(self._last).difference(processes):
            del self._last[gone]
        if processes and not instances and denied is not None:
            return self.unavailable(
                'cannot read %s of the QEMU processes (%s): run the agent as '
                'root or with CAP_SYS_PTRACE' % (self._method, denied))
        return self.available(instances=tuple(instances))
