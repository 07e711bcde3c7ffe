"""What the agent needs from a libvirt domain's XML description.

Nova writes an ``<nova:instance>`` block into every domain's
``<metadata>`` (namespace ``http://openstack.org/xmlns/libvirt/nova/<v>``):
the instance's name, flavor, owner (project) and root image. Domains
without it (created outside Nova) are reported under their libvirt name and
uuid with the Nova fields left None.

Parsing is pure (string in, :class:`DomainInfo` out) so that it is tested
without libvirt, and cached by the XML text in the source because the same
XML comes back every cycle.
"""

import dataclasses
from typing import Optional
from xml.etree import ElementTree

from contention import topology_parse

NOVA_NS_PREFIX = 'http://openstack.org/xmlns/libvirt/nova/'


class DomainXMLError(ValueError):
    """The domain XML is malformed; says which domain and what."""


@dataclasses.dataclass(frozen=True)
class DomainInfo:
    uuid: str
    name: str
    vcpus: int
    memory_mib: int
    nova_name: Optional[str] = None
    flavor: Optional[str] = None
    image_id: Optional[str] = None
    project_id: Optional[str] = None
    #: vCPU number -> CPUs of its <vcpupin> (persistent pinning Nova wrote).
    vcpupin: dict = dataclasses.field(default_factory=dict)
    #: <numatune><memory nodeset=...> nodes and mode, if any.
    numa_nodeset: tuple = ()
    numa_mode: Optional[str] = None
    #: The flavor's extra specs Nova writes since version 34
    #: (``<nova:flavor><nova:extraSpecs>``); None from an older Nova.
    extra_specs: Optional[dict] = None


def _nova_instance(metadata):
    if metadata is None:
        return None, None
    for child in metadata:
        tag = child.tag
        if (tag.startswith('{' + NOVA_NS_PREFIX)
                and tag.endswith('}instance')):
            return child, tag[1:tag.index('}')]
    return None, None


def parse(xml_text):
    """Parse one domain's XML (``virDomainGetXMLDesc``)."""
    try:
        root = ElementTree.fromstring(xml_text)
    except ElementTree.ParseError as exc:
        raise DomainXMLError('domain XML: %s' % exc) from None
    name = root.findtext('name')
    uuid = root.findtext('uuid')
    if not name or not uuid:
        raise DomainXMLError('domain XML without <name> or <uuid>')
    where = 'domain %s' % name
    vcpu_text = root.findtext('vcpu')
    try:
        vcpus = int(vcpu_text)
        memory = root.find('memory')
        unit = memory.get('unit', 'KiB') if memory is not None else 'KiB'
        memory_mib = _to_mib(int(memory.text), unit)
    except (TypeError, ValueError, AttributeError):
        raise DomainXMLError('%s: missing or malformed <vcpu>/<memory>'
                             % where) from None
    fields = {}
    instance, ns = _nova_instance(root.find('metadata'))
    if instance is not None:
        q = '{%s}' % ns
        fields['nova_name'] = instance.findtext(q + 'name')
        flavor = instance.find(q + 'flavor')
        if flavor is not None:
            fields['flavor'] = flavor.get('name')
            specs = flavor.find(q + 'extraSpecs')
            if specs is not None:
                fields['extra_specs'] = {
                    spec.get('name'): spec.text or ''
                    for spec in specs.findall(q + 'extraSpec')
                    if spec.get('name')}
        owner_project = instance.find(q + 'owner/' + q + 'project')
        if owner_project is not None:
            fields['project_id'] = owner_project.get('uuid')
        root_disk = instance.find(q + 'root')
        if root_disk is not None and root_disk.get('type') == 'image':
            fields['image_id'] = root_disk.get('uuid')
    vcpupin = {}
    for pin in root.findall('cputune/vcpupin'):
        try:
            vcpu = int(pin.get('vcpu'))
        except (TypeError, ValueError):
            raise DomainXMLError('%s: <vcpupin> without a vcpu number'
                                 % where) from None
        vcpupin[vcpu] = topology_parse.parse_cpulist(
            pin.get('cpuset', ''), '%s: <vcpupin vcpu=%d>' % (where, vcpu))
    numa_memory = root.find('numatune/memory')
    if numa_memory is not None:
        nodeset = numa_memory.get('nodeset')
        if nodeset:
            fields['numa_nodeset'] = topology_parse.parse_cpulist(
                nodeset, '%s: <numatune>' % where)
        fields['numa_mode'] = numa_memory.get('mode', 'strict')
    return DomainInfo(uuid=uuid, name=name, vcpus=vcpus,
                      memory_mib=memory_mib, vcpupin=vcpupin, **fields)


_UNITS = {'b': 1, 'bytes': 1, 'k': 1024, 'kib': 1024, 'kb': 1000,
          'm': 1024 ** 2, 'mib': 1024 ** 2, 'mb': 1000 ** 2,
          'g': 1024 ** 3, 'gib': 1024 ** 3, 'gb': 1000 ** 3}


def _to_mib(value, unit):
    factor = _UNITS.get(unit.lower())
    if factor is None:
        raise ValueError(unit)
    return int(value * factor // 1024 ** 2)


#: The values of Nova's ``hw:cpu_policy``.
CPU_POLICIES = ('shared', 'dedicated', 'mixed')


def cpu_policy(info, dedicated_cpus=None):
    """Nova's ``hw:cpu_policy`` of a domain (a :class:`DomainInfo`).

    Nova 34 and later write the flavor's extra specs into the domain; a
    ``hw:cpu_policy`` there is the answer. Otherwise (an older Nova, or
    the policy came from the image's ``hw_cpu_policy`` property) the
    persistent pinning shows it: with ``dedicated_cpus`` (Nova's
    ``cpu_dedicated_set``) a vCPU pinned inside that set is a dedicated
    vCPU; without it, a vCPU pinned alone to a CPU no other vCPU of the
    domain may use is. All vCPUs dedicated: 'dedicated'; some: 'mixed'.
    """
    declared = (info.extra_specs or {}).get('hw:cpu_policy')
    if declared in CPU_POLICIES:
        return declared
    vcpupin = info.vcpupin
    if not vcpupin:
        return 'shared'
    dedicated = 0
    for vcpu in range(info.vcpus):
        cpus = vcpupin.get(vcpu)
        if not cpus:
            continue
        if dedicated_cpus is not None:
            if set(cpus) & dedicated_cpus:
                dedicated += 1
        elif len(cpus) == 1 and all(
                cpus[0] not in other for v, other in vcpupin.items()
                if v != vcpu):
            dedicated += 1
    if dedicated == 0:
        return 'shared'
    return 'dedicated' if dedicated == info.vcpus else 'mixed'
