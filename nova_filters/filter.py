"""``nova_filters.ContentionFilter``: keep sensitive instances off
saturated NUMA cells.

An instance whose flavor has ``contention:sensitive=true`` does not land
on a host whose landing cell(s) (as the weigher predicts them) are
saturated: a node's summed L3 MPKI above ``[contention]
filter_mpki_threshold`` (Merlin's node trigger) or its summed Liu & Li
overhead level above ``filter_overhead_threshold``; the verdict is
:func:`contention.perfmodel.saturation.saturated_nodes`, which the
simulator's ``contention_weigher`` policy shares. Only fresh telemetry
counts; hosts without it pass unless ``filter_fail_closed`` is set. Other
instances, and moves while ``apply_to_moves`` is off, pass everywhere.
The store and the request are read once per request (``filter_all``),
not once per host.
"""

from nova import conf as nova_conf
from nova.scheduler import filters
from oslo_log import log as logging

from contention.perfmodel import saturation
from nova_filters import landing
from nova_filters import opts
from nova_filters import service

LOG = logging.getLogger(__name__)
CONF = nova_conf.CONF
opts.register_opts(CONF)


class ContentionFilter(filters.BaseHostFilter):

    RUN_ON_REBUILD = False

    def filter_all(self, filter_obj_list, spec_obj):
        hosts = list(filter_obj_list)
        group = CONF.contention
        if not service.is_sensitive(spec_obj) or (
                service.is_move(spec_obj) and not group.apply_to_moves):
            return iter(hosts)
        svc = service.get_service(CONF)
        reports = svc.fresh_reports([h.host for h in hosts])
        request = landing.Request(spec_obj)
        return iter([h for h in hosts
                     if self._passes(svc, h, request, reports, group)])

    def host_passes(self, host_state, spec_obj):
        return bool(list(self.filter_all([host_state], spec_obj)))

    def _passes(self, svc, host_state, request, reports, group):
        report = reports.get(host_state.host)
        if report is None:
            if group.filter_fail_closed:
                LOG.debug('%s has no fresh contention telemetry; rejected '
                          '(filter_fail_closed)', host_state.host)
                return False
            return True
        cells = svc.cells(report)
        nodes = svc.landing.nodes(host_state, request, cells)
        if not nodes:
            return True      # NUMATopologyFilter decides whether it fits
        hot = saturation.saturated_nodes(
            cells.states, nodes, group.filter_mpki_threshold,
            group.filter_overhead_threshold)
        if hot:
            LOG.debug('%s: landing NUMA node(s) %s saturated; rejected for '
                      'a contention:sensitive instance', host_state.host,
                      hot)
            return False
        return True
