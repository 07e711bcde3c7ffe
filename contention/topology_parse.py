"""Build a :class:`~contention.topology.HostTopology` from what a host says.

Two sources describe the same hardware, each with a gap:

* libvirt's capabilities XML (``virConnectGetCapabilities``) is what Nova
  and libvirt pin against: NUMA cells, their memory and CPUs, sockets,
  cores and SMT siblings, the node distance matrix, and, when libvirt could
  read them, cache banks (usually the L3 only).
* sysfs (``/sys/devices/system``) is the kernel's view and always has every
  cache level with the CPUs sharing it (``cache/index*/shared_cpu_list``),
  which is how AMD Zen's several L3 domains (one per CCX) per NUMA node are
  seen.

:func:`from_capabilities_xml` and :func:`from_sysfs` read one each;
:func:`merge` keeps libvirt's nodes and CPUs and fills in what libvirt
lacked from sysfs.

Conventions shared by both parsers:

* ``Cpu.core`` is unique within the host: sysfs's and libvirt's ``core_id``
  repeat on every socket (and die), so cores are numbered densely in the
  order of (socket, die, core_id).
* Only the L2 and L3 caches are kept: the placement decisions are about
  caches shared between cores; L1 is private to a core. ``Cache.id`` is the
  cache's index in ``HostTopology.caches``, ordered by level, then by the
  lowest CPU sharing it.
* When the source gives no node distances, they default to the ACPI SLIT
  convention: 10 from a node to itself, 20 to any other node.
* A node's socket is the socket of most of its CPUs (-1 for a node without
  CPUs, e.g. a CPU-less memory node).

Malformed input raises :class:`TopologyError`, naming the file or XML
element and the problem, so an operator can find what their host reports.
"""

import collections
import os
import re
import socket as socket_mod
from xml.etree import ElementTree

from contention import schema
from contention import topology

LOCAL_DISTANCE = 10
REMOTE_DISTANCE = 20
CACHE_LEVELS = (2, 3)

_CPULIST_ITEM = re.compile(r'^(\d{1,9})(?:-(\d{1,9}))?$', re.ASCII)
_SIZE_UNITS = {'b': 1, 'bytes': 1, 'k': 1024, 'kb': 1024, 'kib': 1024,
               'm': 1024 ** 2, 'mb': 1024 ** 2, 'mib': 1024 ** 2,
               'g': 1024 ** 3, 'gb': 1024 ** 3, 'gib': 1024 ** 3}
_SIZE = re.compile(r'^\s*(\d+)\s*([A-Za-z]*)\s*$', re.ASCII)


class TopologyError(schema.InvalidData):
    """A topology source is malformed. ``path`` says where, ``problem`` why."""


def _clip(text, limit=80):
    return text if len(text) <= limit else text[:limit] + '...'


def parse_cpulist(text, where='cpu list', limit=None):
    """Parse the kernel's and libvirt's CPU list syntax: "0-3,8,10-11".

    Returns the sorted CPU ids as a tuple; an empty or blank list is the
    empty tuple (a CPU-less node). With ``limit``, a CPU id of ``limit``
    or more is refused before any range is expanded, so that a list from
    an untrusted caller ("0-10000000") costs nothing.
    """
    text = text.strip()
    if not text:
        return ()
    cpus = set()
    for item in text.split(','):
        match = _CPULIST_ITEM.match(item.strip())
        if match is None:
            raise TopologyError(where, 'malformed CPU list %r (item %r)'
                                % (_clip(text), _clip(item)))
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise TopologyError(where, 'descending range %r in CPU list %r'
                                % (_clip(item), _clip(text)))
        if limit is not None and last >= limit:
            raise TopologyError(where, 'CPU %d is beyond this host\'s CPUs '
                                '(0-%d)' % (last, limit - 1))
        cpus.update(range(first, last + 1))
    return tuple(sorted(cpus))


def normalise_vendor(text):
    """'intel', 'amd' or 'unknown' from libvirt's or cpuinfo's vendor."""
    text = (text or '').strip().lower()
    if text in ('intel', 'genuineintel'):
        return 'intel'
    if text in ('amd', 'authenticamd'):
        return 'amd'
    return 'unknown'


def _size_kib(text, unit, where):
    match = _SIZE.match(text or '')
    if match is None:
        raise TopologyError(where, 'malformed size %r' % (text,))
    number, suffix = match.groups()
    unit = (suffix or unit or 'b').lower()
    if unit not in _SIZE_UNITS:
        raise TopologyError(where, 'unknown size unit %r' % (unit,))
    # kB in sysfs and /proc means KiB, as in libvirt's KiB.
    return int(number) * _SIZE_UNITS[unit] // 1024


# -- assembling --------------------------------------------------------------

class _RawCpu(collections.namedtuple(
        '_RawCpu', 'id node socket core_key siblings')):
    """A CPU as a source describes it; core_key is unique per host."""


class _RawCache(collections.namedtuple('_RawCache',
                                       'level cpus size_kib where')):
    """A cache as a source describes it; ``where`` names it for errors."""


def _assemble(hostname, vendor, model, nodes, cpus, caches, distances,
              source):
    """Check and number what a parser read; return a HostTopology.

    ``nodes``: {node id: memory MiB}; ``cpus``: [_RawCpu];
    ``caches``: [_RawCache]; ``distances``: {(a, b): distance} or None.
    """
    node_ids = tuple(sorted(nodes))
    if not node_ids:
        raise TopologyError(source, 'no NUMA node found')
    by_id = {}
    for cpu in cpus:
        if cpu.id in by_id:
            raise TopologyError(source, 'CPU %d listed in nodes %d and %d'
                                % (cpu.id, by_id[cpu.id].node, cpu.node))
        by_id[cpu.id] = cpu
    known = set(by_id)

    core_ids = {key: i for i, key in enumerate(
        sorted({cpu.core_key for cpu in cpus}))}

    kept = []
    for cache in caches:
        shared = tuple(sorted(set(cache.cpus) & known))
        if shared and cache.level in CACHE_LEVELS:
            kept.append(cache._replace(cpus=shared))
    # the same cache is seen from each CPU sharing it (sysfs) or once
    # (libvirt): keep one per (level, CPU set).
    unique = {}
    for cache in kept:
        unique.setdefault((cache.level, cache.cpus), cache)
    ordered = sorted(unique.values(), key=lambda c: (c.level, c.cpus))
    cache_of = {}
    for index, cache in enumerate(ordered):
        for cpu_id in cache.cpus:
            previous = cache_of.get((cache.level, cpu_id))
            if previous is not None:
                raise TopologyError(
                    cache.where, 'CPU %d is in two L%d caches (%s and %s)'
                    % (cpu_id, cache.level,
                       _cpulist(ordered[previous].cpus),
                       _cpulist(cache.cpus)))
            cache_of[(cache.level, cpu_id)] = index
    built_caches = tuple(
        topology.Cache(id=i, level=c.level, cpus=c.cpus,
                       size_kib=c.size_kib)
        for i, c in enumerate(ordered))

    built_cpus = []
    for cpu_id in sorted(by_id):
        cpu = by_id[cpu_id]
        siblings = tuple(sorted((set(cpu.siblings) & known) | {cpu_id}))
        built_cpus.append(topology.Cpu(
            id=cpu_id, node=cpu.node, socket=cpu.socket,
            core=core_ids[cpu.core_key], siblings=siblings,
            l2=cache_of.get((2, cpu_id)), l3=cache_of.get((3, cpu_id))))

    built_nodes = []
    for node_id in node_ids:
        node_cpus = tuple(c.id for c in built_cpus if c.node == node_id)
        sockets = collections.Counter(by_id[c].socket for c in node_cpus)
        node_socket = (min(sockets, key=lambda s: (-sockets[s], s))
                       if sockets else -1)
        built_nodes.append(topology.NumaNode(
            id=node_id, cpus=node_cpus, memory_mib=nodes[node_id],
            socket=node_socket))

    matrix = []
    for a in node_ids:
        row = []
        for b in node_ids:
            if distances is None:
                row.append(LOCAL_DISTANCE if a == b else REMOTE_DISTANCE)
            elif (a, b) not in distances:
                raise TopologyError(source, 'no distance from node %d to '
                                    'node %d' % (a, b))
            else:
                row.append(distances[(a, b)])
        matrix.append(tuple(row))

    return topology.HostTopology(
        hostname=hostname, cpu_vendor=vendor, cpu_model=model,
        nodes=tuple(built_nodes), cpus=tuple(built_cpus),
        caches=built_caches, distances=tuple(matrix))


def _cpulist(cpus):
    return ','.join(map(str, cpus))


# -- libvirt capabilities XML ------------------------------------------------

def _int_attr(element, name, where, default=None):
    value = element.get(name)
    if value is None:
        if default is not None:
            return default
        raise TopologyError(where, 'missing attribute %r' % name)
    try:
        number = int(value)
    except ValueError:
        raise TopologyError('%s/@%s' % (where, name),
                            'expected an integer, got %r' % value) from None
    if number < 0:
        raise TopologyError('%s/@%s' % (where, name),
                            'must not be negative, got %d' % number)
    return number


def from_capabilities_xml(xml_text, hostname=None):
    """Read libvirt's capabilities XML.

    ``hostname`` defaults to this machine's name (the XML carries none).
    The test driver's XML has no vendor, model, distances or caches: the
    vendor is then 'unknown', the distances default to 10 (local) / 20
    (remote) and the CPUs have no cache; :func:`merge` with
    :func:`from_sysfs` fills in the caches.
    """
    where = 'capabilities'
    try:
        root = ElementTree.fromstring(xml_text)
    except ElementTree.ParseError as exc:
        raise TopologyError(where, 'not well-formed XML: %s' % exc) from None
    if root.tag != 'capabilities':
        raise TopologyError(where, 'root element is <%s>, expected '
                            '<capabilities>' % root.tag)
    host = root.find('host')
    if host is None:
        raise TopologyError(where, 'no <host> element')
    vendor = normalise_vendor(host.findtext('cpu/vendor'))
    model = (host.findtext('cpu/model') or '').strip()
    cells = host.find('topology/cells')
    if cells is None:
        raise TopologyError(where + '/host',
                            'no <topology><cells> element (libvirt did not '
                            'report a NUMA topology)')

    nodes = {}
    cpus = []
    distances = {}
    have_distances = False
    for index, cell in enumerate(cells.findall('cell')):
        cwhere = '%s/host/topology/cells/cell[%d]' % (where, index)
        node_id = _int_attr(cell, 'id', cwhere)
        cwhere = "%s/host/topology/cells/cell[@id='%d']" % (where, node_id)
        if node_id in nodes:
            raise TopologyError(cwhere, 'cell listed twice')
        memory = cell.find('memory')
        if memory is None:
            raise TopologyError(cwhere, 'no <memory> element')
        nodes[node_id] = _size_kib(memory.text, memory.get('unit', 'KiB'),
                                   cwhere + '/memory') // 1024
        siblings = cell.findall('distances/sibling')
        if siblings:
            have_distances = True
        for sibling in siblings:
            swhere = cwhere + '/distances/sibling'
            other = _int_attr(sibling, 'id', swhere)
            distances[(node_id, other)] = _int_attr(sibling, 'value', swhere)
        for cpu_index, cpu in enumerate(cell.findall('cpus/cpu')):
            pwhere = '%s/cpus/cpu[%d]' % (cwhere, cpu_index)
            cpu_id = _int_attr(cpu, 'id', pwhere)
            sock = _int_attr(cpu, 'socket_id', pwhere)
            die = _int_attr(cpu, 'die_id', pwhere, default=0)
            core = _int_attr(cpu, 'core_id', pwhere)
            sibling_list = cpu.get('siblings')
            sibs = (parse_cpulist(sibling_list, pwhere + '/@siblings')
                    if sibling_list is not None else (cpu_id,))
            cpus.append(_RawCpu(cpu_id, node_id, sock, (sock, die, core),
                                sibs))
    if have_distances:
        _check_distances(distances, nodes, where + '/host/topology/cells')

    caches = []
    for index, bank in enumerate(host.findall('cache/bank')):
        bwhere = '%s/host/cache/bank[%d]' % (where, index)
        level = _int_attr(bank, 'level', bwhere)
        if bank.get('type', 'both') == 'code':
            continue
        caches.append(_RawCache(
            level, parse_cpulist(bank.get('cpus', ''), bwhere + '/@cpus'),
            _size_kib(bank.get('size'), bank.get('unit', 'B'),
                      bwhere + '/@size'),
            bwhere))
    return _assemble(hostname or socket_mod.gethostname(), vendor, model,
                     nodes, cpus, caches,
                     distances if have_distances else None, where)


def _check_distances(distances, nodes, where):
    for (a, b), value in sorted(distances.items()):
        if b not in nodes:
            raise TopologyError(where, 'distance from node %d to unknown '
                                'node %d' % (a, b))
        if value <= 0:
            raise TopologyError(where, 'distance from node %d to node %d '
                                'must be positive, got %d' % (a, b, value))


# -- sysfs -------------------------------------------------------------------

def _read(path, required=True):
    try:
        with open(path) as handle:
            return handle.read()
    except FileNotFoundError:
        if required:
            raise TopologyError(path, 'missing file') from None
        return None
    except OSError as exc:
        raise TopologyError(path, 'cannot read: %s' % exc.strerror) from None


def _read_int(path, required=True):
    text = _read(path, required)
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        raise TopologyError(path, 'expected an integer, got %r'
                            % text.strip()) from None


def _numbered_dirs(directory, prefix):
    """{n: path} of ``<prefix><n>`` entries of ``directory``."""
    pattern = re.compile(r'^%s(\d+)$' % re.escape(prefix), re.ASCII)
    found = {}
    for name in os.listdir(directory):
        match = pattern.match(name)
        if match:
            found[int(match.group(1))] = os.path.join(directory, name)
    return found


def _node_memory_mib(path):
    text = _read(path)
    for line in text.splitlines():
        # "Node 0 MemTotal:       32768000 kB"
        parts = line.split()
        if len(parts) >= 4 and parts[2] == 'MemTotal:':
            try:
                amount = int(parts[3])
            except ValueError:
                break
            unit = parts[4] if len(parts) > 4 else 'kB'
            return _size_kib(str(amount), unit, path) // 1024
    raise TopologyError(path, 'no "MemTotal:" line')


def _cpuinfo(path):
    """(vendor, model name) from a /proc/cpuinfo file, if there is one."""
    text = _read(path, required=False)
    vendor, model = 'unknown', ''
    if text is None:
        return vendor, model
    for line in text.splitlines():
        key, sep, value = line.partition(':')
        if not sep:
            continue
        key = key.strip()
        if key == 'vendor_id' and vendor == 'unknown':
            vendor = normalise_vendor(value)
        elif key == 'model name' and not model:
            model = value.strip()
    return vendor, model


def from_sysfs(root, hostname):
    """Read a sysfs tree; ``root`` holds ``devices/system`` (normally /sys).

    The vendor and model come from ``proc/cpuinfo`` under ``root`` when it
    exists (a test fixture or a container's bind mount), else 'unknown'.
    Offline CPUs (not in ``devices/system/cpu/online``) are left out. A
    missing ``distance`` file gives the default distances 10 (local) / 20
    (remote).
    """
    node_dir = os.path.join(root, 'devices', 'system', 'node')
    cpu_dir = os.path.join(root, 'devices', 'system', 'cpu')
    if not os.path.isdir(node_dir):
        raise TopologyError(node_dir, 'missing directory (kernel without '
                            'NUMA support, or not a sysfs tree)')
    node_paths = _numbered_dirs(node_dir, 'node')
    if not node_paths:
        raise TopologyError(node_dir, 'no node* directory')
    online_text = _read(os.path.join(cpu_dir, 'online'), required=False)
    online = (set(parse_cpulist(online_text, os.path.join(cpu_dir, 'online')))
              if online_text is not None else None)

    nodes = {}
    node_of = {}
    distances = {}
    have_distances = False
    ordered_nodes = sorted(node_paths)
    for node_id in ordered_nodes:
        path = node_paths[node_id]
        nodes[node_id] = _node_memory_mib(os.path.join(path, 'meminfo'))
        cpulist_path = os.path.join(path, 'cpulist')
        for cpu_id in parse_cpulist(_read(cpulist_path), cpulist_path):
            if online is not None and cpu_id not in online:
                continue
            if cpu_id in node_of:
                raise TopologyError(cpulist_path, 'CPU %d is also in node %d'
                                    % (cpu_id, node_of[cpu_id]))
            node_of[cpu_id] = node_id
        distance_path = os.path.join(path, 'distance')
        text = _read(distance_path, required=False)
        if text is not None:
            have_distances = True
            values = text.split()
            if len(values) != len(ordered_nodes):
                raise TopologyError(distance_path, '%d distances for %d nodes'
                                    % (len(values), len(ordered_nodes)))
            for other, value in zip(ordered_nodes, values):
                if not value.isdigit() or int(value) <= 0:
                    raise TopologyError(distance_path, 'malformed distance %r'
                                        % value)
                distances[(node_id, other)] = int(value)
    if have_distances and len(distances) != len(ordered_nodes) ** 2:
        raise TopologyError(node_dir, 'some nodes have a distance file and '
                            'some do not')

    cpus = []
    caches = []
    for cpu_id in sorted(node_of):
        path = os.path.join(cpu_dir, 'cpu%d' % cpu_id)
        topo = os.path.join(path, 'topology')
        sock = _read_int(os.path.join(topo, 'physical_package_id'))
        die = _read_int(os.path.join(topo, 'die_id'), required=False) or 0
        core = _read_int(os.path.join(topo, 'core_id'))
        sib_path = os.path.join(topo, 'thread_siblings_list')
        sibs = parse_cpulist(_read(sib_path), sib_path)
        cpus.append(_RawCpu(cpu_id, node_of[cpu_id], sock, (sock, die, core),
                            sibs))
        cache_dir = os.path.join(path, 'cache')
        if os.path.isdir(cache_dir):
            caches.extend(_sysfs_caches(cache_dir))
    vendor, model = _cpuinfo(os.path.join(root, 'proc', 'cpuinfo'))
    return _assemble(hostname, vendor, model, nodes, cpus, caches,
                     distances if have_distances else None, root)


def _sysfs_caches(cache_dir):
    for index, path in sorted(_numbered_dirs(cache_dir, 'index').items()):
        level = _read_int(os.path.join(path, 'level'))
        kind = _read(os.path.join(path, 'type')).strip()
        if level not in CACHE_LEVELS or kind == 'Instruction':
            continue
        shared_path = os.path.join(path, 'shared_cpu_list')
        shared = parse_cpulist(_read(shared_path), shared_path)
        size_path = os.path.join(path, 'size')
        size_text = _read(size_path, required=False)
        size = (_size_kib(size_text, 'B', size_path)
                if size_text is not None else None)
        yield _RawCache(level, shared, size, path)


# -- merging -----------------------------------------------------------------

def merge(caps_topology, sysfs_topology):
    """libvirt's topology, completed from sysfs where libvirt was silent.

    libvirt's nodes, CPUs, sockets, siblings and memory are kept: they are
    what Nova and libvirt pin against. From sysfs come the caches of every
    level libvirt reported none of (libvirt usually reports only the L3, the
    test driver none), the vendor and model when libvirt did not say, and
    the distances (the kernel's SLIT, which libvirt reads too; sysfs has it
    where libvirt's XML omitted it). Both must describe the same nodes and
    CPUs, else the host is misreported and :class:`TopologyError` says how.
    """
    where = 'merge(%s)' % caps_topology.hostname
    if caps_topology.node_ids != sysfs_topology.node_ids:
        raise TopologyError(where, 'libvirt reports nodes %s, sysfs %s'
                            % (list(caps_topology.node_ids),
                               list(sysfs_topology.node_ids)))
    caps_cpus = {c.id: c.node for c in caps_topology.cpus}
    sysfs_cpus = {c.id: c.node for c in sysfs_topology.cpus}
    if caps_cpus != sysfs_cpus:
        differ = sorted(set(caps_cpus.items()) ^ set(sysfs_cpus.items()))
        raise TopologyError(where, 'libvirt and sysfs disagree on the CPUs '
                            '(cpu, node) %s' % differ[:8])
    caps_levels = {c.level for c in caps_topology.caches}
    caches = [_RawCache(c.level, c.cpus, c.size_kib, 'libvirt cache')
              for c in caps_topology.caches]
    caches += [_RawCache(c.level, c.cpus, c.size_kib, 'sysfs cache')
               for c in sysfs_topology.caches if c.level not in caps_levels]
    cpus = [_RawCpu(c.id, c.node, c.socket, (c.socket, c.core), c.siblings)
            for c in caps_topology.cpus]
    vendor = caps_topology.cpu_vendor
    if vendor == 'unknown':
        vendor = sysfs_topology.cpu_vendor
    model = caps_topology.cpu_model or sysfs_topology.cpu_model
    ids = sysfs_topology.node_ids
    distances = {(a, b): sysfs_topology.distances[i][j]
                 for i, a in enumerate(ids) for j, b in enumerate(ids)}
    nodes = {n.id: n.memory_mib for n in caps_topology.nodes}
    return _assemble(caps_topology.hostname, vendor, model, nodes, cpus,
                     caches, distances, where)
