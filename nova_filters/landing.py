"""Which NUMA cell(s) an instance would land on, as Nova would choose.

For an instance with a NUMA topology Nova's ``numa_fit_instance_to_host``
decides (the resource tracker calls it again at claim time, on the same
host state). One call with the request clone costs about 400 microseconds,
which for every host of every request would cost more than Nova's whole
weigher set. So :class:`LandingPredictor` calls it only when the answer
can matter and only once per distinct question:

* an instance without a NUMA topology floats over the host's shared pool:
  all cells, no call;
* when all the host's cells carry the same telemetry state, any choice
  scores the same: no call (the first cells are taken);
* otherwise the answer is cached under the host's NUMA usage signature
  (every cell's CPUs, pinned CPUs, usage, memory and pages), the request's
  shape, the allocation ratios and the packing strategy: everything
  ``numa_fit_instance_to_host`` reads for a request without PCI devices.
  Hosts in the same state (the common case in a large cloud) share one
  call; the tests check the cached answer equals Nova's own.

The request's part of that key is read once per scheduling request
(:class:`Request`): the weigher asks about every candidate host, and
reading the request's versioned objects for each of them took about a
third of the weigher's time at 1,000 hosts (``bench.nova``).
"""

import collections
import threading

from nova import conf as nova_conf
from nova import objects
from nova.virt import hardware

CONF = nova_conf.CONF


def _opt(obj, name, default=None):
    return getattr(obj, name) if name in obj else default


def _cell_signature(cell):
    pages = tuple(
        (p.size_kb, p.total, p.used, _opt(p, 'reserved', 0))
        for p in (_opt(cell, 'mempages') or ()))
    return (cell.id, tuple(sorted(cell.cpuset)),
            tuple(sorted(_opt(cell, 'pcpuset') or ())),
            cell.memory, cell.cpu_usage, cell.memory_usage,
            tuple(sorted(_opt(cell, 'pinned_cpus') or ())),
            tuple(tuple(sorted(s)) for s in (_opt(cell, 'siblings') or ())),
            pages)


_MEMO = '_contention_landing_signature'
#: Where a NUMATopology keeps the answers given about it (see
#: :meth:`LandingPredictor.nova_nodes`), and how many it keeps.
_ANSWERS = '_contention_landing_answers'
_ANSWERS_KEPT = 64
_MISSING = object()


def host_signature(numa_topology):
    """The usage signature of a host's NUMATopology, memoised on it.

    Nova never changes a HostState's NUMATopology in place: both places
    that update it (``update_from_compute_node`` and
    ``consume_from_request``) assign a new object, so the signature of an
    object can be kept on the object.
    """
    signature = numa_topology.__dict__.get(_MEMO)
    if signature is None:
        signature = tuple(_cell_signature(c) for c in numa_topology.cells)
        numa_topology.__dict__[_MEMO] = signature
    return signature


def request_signature(instance_topology):
    cells = tuple(
        (len(c.cpuset), len(_opt(c, 'pcpuset') or ()), c.memory,
         _opt(c, 'cpu_policy'), _opt(c, 'cpu_thread_policy'),
         _opt(c, 'pagesize'))
        for c in instance_topology.cells)
    return cells, _opt(instance_topology, 'emulator_threads_policy')


class Request:
    """One scheduling request as the landing cache sees it.

    ``topology``: the request's InstanceNUMATopology, or None (the
    instance floats over the shared pool); ``cell_count``: how many NUMA
    cells it asks for; ``key``: its shape and the packing strategy, the
    request's part of the cache key. Build it once per request and ask
    about every host with it; Nova changes none of them while it weighs
    one request's hosts.
    """

    __slots__ = ('topology', 'cell_count', 'key')

    def __init__(self, spec_obj):
        self.topology = _opt(spec_obj, 'numa_topology') or None
        self.cell_count = len(self.topology.cells) if self.topology else 0
        self.key = None if not self.topology else (
            request_signature(self.topology),
            CONF.compute.packing_host_numa_cells_allocation_strategy)


class Cells:
    """A host report's CellStates by node id, and whether they all match.

    Built once per report (the service caches it): whether every cell
    carries the same telemetry state decides whether Nova's choice can
    matter, and comparing the states for every host of every request
    took about a tenth of the weigher's time at 1,000 hosts
    (``bench.nova``).
    """

    __slots__ = ('states', 'uniform')

    def __init__(self, states):
        #: {node id: CellState}
        self.states = states
        values = list(states.values())
        self.uniform = all(v == values[0] for v in values)


class LandingPredictor:
    """Landing cells per (host state, request shape); see the module doc."""

    def __init__(self, cache_size=20000):
        self.cache_size = cache_size
        self._cache = collections.OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.nova_calls = 0
        self.skipped = 0

    def nodes(self, host_state, request, cells):
        """Host NUMA node ids the instance lands on, or None if it fits none.

        :param request: the :class:`Request`.
        :param cells: the :class:`Cells` of the host's report.
        """
        host_topology = host_state.numa_topology
        if not request.topology or not host_topology:
            return tuple(sorted(cells.states))
        if cells.uniform and len(host_topology.cells) == len(cells.states):
            self.skipped += 1
            return tuple(sorted(cells.states))[:request.cell_count]
        return self.nova_nodes(host_state, request)

    def nova_nodes(self, host_state, request):
        """What ``numa_fit_instance_to_host`` chooses, through the cache.

        Each answer is also kept on the host's NUMATopology object, under
        the request's part of the key: Nova assigns a new object whenever
        the host's usage changes (:func:`host_signature`), so the next
        request of the same shape finds it there without hashing the
        host's signature or taking the shared cache's lock, which were
        most of the time of a cached answer at 1,000 hosts
        (``bench.nova``). ``hits`` counts both kinds of hit; it is a
        statistic and is not locked.
        """
        topology = host_state.numa_topology
        question = (request.key, host_state.cpu_allocation_ratio,
                    host_state.ram_allocation_ratio)
        answers = topology.__dict__.get(_ANSWERS)
        if answers is None:
            answers = topology.__dict__[_ANSWERS] = {}
        found = answers.get(question, _MISSING)
        if found is not _MISSING:
            self.hits += 1
            return found
        found = self._shared(host_state, request,
                             (host_signature(topology),) + question)
        if len(answers) >= _ANSWERS_KEPT:
            answers.clear()
        answers[question] = found
        return found

    def _shared(self, host_state, request, key):
        """The answer for ``key`` from the shared cache, or Nova's."""
        with self._lock:
            found = self._cache.get(key, _MISSING)
            if found is not _MISSING:
                self._cache.move_to_end(key)
                self.hits += 1
                return found
            self.nova_calls += 1
        result = nova_fit(host_state, request.topology)
        if self.cache_size:
            with self._lock:
                self._cache[key] = result
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return result


def nova_fit(host_state, requested):
    """Nova's own answer (on a clone of the request), as node ids."""
    limits = objects.NUMATopologyLimits(
        cpu_allocation_ratio=host_state.cpu_allocation_ratio,
        ram_allocation_ratio=host_state.ram_allocation_ratio)
    fitted = hardware.numa_fit_instance_to_host(
        host_state.numa_topology, requested.obj_clone(),
        provider_mapping=None, limits=limits)
    if fitted is None:
        return None
    return tuple(cell.id for cell in fitted.cells)
