"""What Watcher knows, as the core's inventory.

Watcher's (audit-scoped) compute model knows what Nova knows: hosts,
their capacity, allocation ratios and state, instances, their sizes,
flavors, lock and state, and the audit's scope. This module only
translates it into :class:`contention.reportview.Inventory`, with the
reason an element may not be used; joining it with the agents' reports
(and every rule about missing or stale telemetry) is the core's
:func:`contention.reportview.view_from_reports`.

A host out of the audit scope is absent from the model and so from the
view. A disabled or down host is in the view but never a source or a
destination; a locked, not ACTIVE or excluded instance is in the view
(its load and size still count) but not movable.
"""

from oslo_log import log as logging
from oslo_versionedobjects import base as ovo_base

from contention.perfmodel import features
from contention import reportview

LOG = logging.getLogger(__name__)

#: Categories (first word) of the skip reasons this module gives.
HOST_REASONS = ('disabled', 'down')
INSTANCE_REASONS = ('out_of_scope', 'locked', 'not_active')


def _stored(*fields):
    """``fields`` ((name, default), ...) as :func:`_values` reads them."""
    return tuple(('_obj_' + name, name, default) for name, default in fields)


def _values(obj, fields):
    """The values of ``fields`` (:func:`_stored`) of a model element.

    ``default`` where the field is unset or None. Watcher's elements are
    oslo.versionedobjects, whose field properties cost a ``hasattr`` and a
    ``getattr`` and raise for a field never set; the storage they read
    (``_obj_<name>``, present only once set) is read here directly, all
    the fields of an element in one pass, with the keys made once
    (:func:`_stored`): field reads were two fifths of :func:`inventory`'s
    time at 20,000 instances (``bench/watcher.py``). Any other object is
    read through its attributes.
    """
    if isinstance(obj, ovo_base.VersionedObject):
        get = vars(obj).get
        return [default if (value := get(key)) is None else value
                for key, _, default in fields]
    return [default if (value := getattr(obj, name, None)) is None
            else value for _, name, default in fields]


def _priority(metadata):
    try:
        return int((metadata or {}).get('contention_priority', 0))
    except (TypeError, ValueError):
        return 0


_HOST_FIELDS = _stored(
    ('status', None), ('disabled_reason', None), ('state', None),
    ('vcpus', 0), ('vcpu_reserved', 0), ('memory', 0),
    ('memory_mb_reserved', 0), ('disk', 0), ('disk_gb_reserved', 0),
    ('vcpu_ratio', 1.0), ('memory_ratio', 1.0), ('disk_ratio', 1.0))


def _host(node):
    (status, why, state, vcpus, vcpu_reserved, memory, memory_reserved,
     disk, disk_reserved, vcpu_ratio, memory_ratio,
     disk_ratio) = _values(node, _HOST_FIELDS)
    reason = None
    if status != 'enabled':
        reason = 'disabled: the compute service is disabled%s' % (
            ' (%s)' % why if why else '')
    elif state != 'up':
        reason = 'down: nova-compute is %s' % state
    return reportview.HostInventory(
        name=node.hostname,
        vcpus_total=max(0, vcpus - vcpu_reserved),
        memory_mib_total=max(0, memory - memory_reserved),
        disk_gb_total=max(0, disk - disk_reserved),
        cpu_allocation_ratio=float(vcpu_ratio or 1.0),
        ram_allocation_ratio=float(memory_ratio or 1.0),
        disk_allocation_ratio=float(disk_ratio or 1.0),
        unusable=reason)


_INSTANCE_FIELDS = _stored(
    ('uuid', None), ('state', 'active'), ('watcher_exclude', False),
    ('locked', False), ('flavor_extra_specs', None), ('vcpus', 0),
    ('memory', 0), ('disk', 0), ('metadata', None))


def _instance(inst, host, declared=None):
    (uuid, state, exclude, locked, extra_specs, vcpus, memory, disk,
     metadata) = _values(inst, _INSTANCE_FIELDS)
    skip = None
    if exclude:
        skip = 'out_of_scope: excluded by the audit scope'
    elif locked:
        skip = 'locked: the instance is locked in Nova'
    elif state != 'active':
        skip = 'not_active: the instance is %s' % state
    extra_specs = extra_specs or {}
    return reportview.InstanceInventory(
        uuid=uuid, host=host, vcpus=int(vcpus), memory_mib=int(memory),
        disk_gb=float(disk),
        has_numa_topology='hw:numa_nodes' in extra_specs,
        dedicated=extra_specs.get('hw:cpu_policy') == 'dedicated',
        priority=_priority(metadata),
        latency=declared_latency(
            uuid, extra_specs.get(features.PROFILE_SPEC),
            {} if declared is None else declared),
        unmovable=skip)


def declared_latency(uuid, spec, declared):
    """Whether a flavor's ``contention:profile`` declares a latency service.

    True for ``latency=1``, False for a profile without it (a throughput
    code), None without the spec, or where it cannot be read: then the
    harm check guesses from the instance's CPU use, as without it, and
    one warning per spec and inventory names the first instance and what
    is wrong. ``declared`` ({spec: answer}) holds what one inventory
    already read: instances share a few flavors.
    """
    if spec is None:
        return None
    if spec not in declared:
        try:
            declared[spec] = features.parse_profile(spec).latency
        except ValueError as exc:
            LOG.warning('instance %s (and any other of its flavor): flavor '
                        'extra spec %s ignored: %s', uuid,
                        features.PROFILE_SPEC, exc)
            declared[spec] = None
    return declared[spec]


def inventory(model):
    """The :class:`contention.reportview.Inventory` of a compute model."""
    hosts = []
    instances = []
    declared = {}
    for node in model.get_all_compute_nodes().values():
        hosts.append(_host(node))
        for inst in model.get_node_instances(node):
            instances.append(_instance(inst, node.hostname, declared))
    return reportview.Inventory(tuple(hosts), tuple(instances))


def build_view(model, reports, now, freshness_s):
    """The core's :class:`contention.reportview.BuiltView` of ``model``."""
    return reportview.view_from_reports(reports, inventory(model), now,
                                        freshness_s)
