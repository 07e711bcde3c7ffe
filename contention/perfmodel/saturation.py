"""Which landing NUMA nodes are saturated: the contention filter's verdict.

One function shared by ``nova_filters.ContentionFilter`` and the
``contention_weigher`` simulator policy's filter stage, so the simulator
keeps sensitive instances off exactly the nodes Nova would.

A node is saturated when either

* its co-runners' summed L3 MPKI is above ``mpki_threshold``: Merlin's
  node trigger (section 3.4), the point where the node's memory
  controller and interconnect need relief; or
* its summed Liu & Li overhead level (LLC, MC, IC and remote latency,
  0-3 each, so 0-12) is above ``overhead_threshold``.

A node with any of the four levels unknown gets no overhead verdict (the
MPKI test still applies): unknown is not zero, but reading it as
saturated would reject every host whose agent cannot measure the levels
(and every simulated one, whose cells carry none).
"""

from contention import classify

#: Default summed L3 MPKI above which a node is saturated (Merlin 3.4).
MPKI_THRESHOLD = classify.DEFAULT_THRESHOLDS.node_mpki_trigger
#: Default summed Liu & Li overhead level above which a node is
#: saturated: half the 0-12 range, i.e. more than "medium" on average.
OVERHEAD_THRESHOLD = 6


def overhead_level(cell):
    """A cell's summed Liu & Li level, or None if any level is unknown."""
    levels = (cell.llc_level, cell.mc_level, cell.ic_level,
              cell.remote_level)
    return None if any(v is None for v in levels) else sum(levels)


def saturated_nodes(cells, nodes, mpki_threshold=MPKI_THRESHOLD,
                    overhead_threshold=OVERHEAD_THRESHOLD):
    """The nodes of ``nodes`` whose cell is over either threshold.

    :param cells: {node: :class:`~contention.perfmodel.features.CellState`}.
    :param nodes: the landing nodes; a node without a cell has no
        telemetry and is never saturated.
    """
    result = []
    for node in nodes:
        cell = cells.get(node)
        if cell is None:
            continue
        overhead = overhead_level(cell)
        if cell.co_mpki_sum > mpki_threshold or (
                overhead is not None and overhead > overhead_threshold):
            result.append(node)
    return result
