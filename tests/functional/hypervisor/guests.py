"""Tiny QEMU guests with the domain XML Nova writes.

A guest boots, in well under a second, from a 64 KiB disk whose boot
sector SeaBIOS runs: either ``jmp $`` (a vCPU busy at 100 %, what a
CPU-bound instance looks like from the host) or ``hlt`` in a loop (an
idle instance). No kernel, no image to download.

The XML has the parts of Nova's libvirt driver the agent reads: the
``<nova:instance>`` metadata (name, flavor with ``<nova:extraSpecs>`` as
Nova 34 writes them, owner, root image), ``<cputune>`` with ``vcpupin``
for shared (pinned to the shared CPU set) and dedicated (one CPU each)
instances, ``<emulatorpin>``, a CFS cap (``quota:cpu_quota``) and
``<numatune>`` in Nova's strict mode.
"""

import os
import uuid as uuid_mod
from xml.sax import saxutils

NOVA_NS = 'http://openstack.org/xmlns/libvirt/nova/1.1'

#: Boot sector programs (real mode, loaded at 0x7c00).
BUSY = b'\xeb\xfe'              # jmp $
IDLE = b'\xfa\xf4\xeb\xfd'      # cli; hlt; jmp -3


def boot_disk(path, program):
    """Write a 64 KiB raw disk whose boot sector runs ``program``."""
    image = bytearray(64 * 1024)
    image[0:len(program)] = program
    image[510:512] = b'\x55\xaa'
    with open(path, 'wb') as f:
        f.write(image)
    return path


def domain_xml(name, disk, *, uuid=None, vcpus=1, memory_mib=32,
               vcpupin=None, emulatorpin=None, quota_us=None,
               period_us=100000, numa_nodeset=None, extra_specs=None,
               virt_type='kvm', flavor='m1.tiny', project_id=None,
               image_id=None):
    """A domain as Nova's libvirt driver defines it.

    Minus the devices a guest that boots from its firmware does not need.
    :param vcpupin: vCPU -> cpuset string.
    """
    uuid = uuid or str(uuid_mod.uuid4())
    project_id = project_id or uuid_mod.uuid5(uuid_mod.NAMESPACE_OID,
                                              'p' + name).hex
    image_id = image_id or str(uuid_mod.uuid5(uuid_mod.NAMESPACE_OID,
                                              'i' + name))
    specs = ''.join(
        '<nova:extraSpec name="%s">%s</nova:extraSpec>'
        % (saxutils.escape(k), saxutils.escape(v))
        for k, v in sorted((extra_specs or {}).items()))
    cputune = ['<shares>%d</shares>' % (1024 * vcpus)]
    cputune += ["<vcpupin vcpu='%d' cpuset='%s'/>" % item
                for item in sorted((vcpupin or {}).items())]
    if emulatorpin:
        cputune.append("<emulatorpin cpuset='%s'/>" % emulatorpin)
    if quota_us is not None:
        cputune += ['<period>%d</period>' % period_us,
                    '<quota>%d</quota>' % quota_us]
    numatune = ('' if numa_nodeset is None else
                "<numatune><memory mode='strict' nodeset='%s'/></numatune>"
                % numa_nodeset)
    return '''<domain type='%(virt)s'>
  <name>%(name)s</name>
  <uuid>%(uuid)s</uuid>
  <metadata>
    <nova:instance xmlns:nova="%(ns)s">
      <nova:package version="34.0.0"/>
      <nova:name>vm-%(name)s</nova:name>
      <nova:creationTime>2026-11-25 04:00:00</nova:creationTime>
      <nova:flavor name="%(flavor)s" id="%(flavor_id)s">
        <nova:memory>%(memory)d</nova:memory>
        <nova:disk>1</nova:disk>
        <nova:swap>0</nova:swap>
        <nova:ephemeral>0</nova:ephemeral>
        <nova:vcpus>%(vcpus)d</nova:vcpus>
        <nova:extraSpecs>%(specs)s</nova:extraSpecs>
      </nova:flavor>
      <nova:owner>
        <nova:user uuid="%(user)s">admin</nova:user>
        <nova:project uuid="%(project)s">demo</nova:project>
      </nova:owner>
      <nova:root type="image" uuid="%(image)s"/>
      <nova:ports/>
    </nova:instance>
  </metadata>
  <memory unit='KiB'>%(memory_kib)d</memory>
  <currentMemory unit='KiB'>%(memory_kib)d</currentMemory>
  <vcpu placement='static'>%(vcpus)d</vcpu>
  <cputune>%(cputune)s</cputune>
  %(numatune)s
  <sysinfo type='smbios'><system>
    <entry name='manufacturer'>OpenStack Foundation</entry>
    <entry name='product'>OpenStack Nova</entry>
    <entry name='serial'>%(uuid)s</entry>
    <entry name='uuid'>%(uuid)s</entry>
  </system></sysinfo>
  <os><type arch='x86_64' machine='pc'>hvm</type><boot dev='hd'/>
    <smbios mode='sysinfo'/></os>
  <clock offset='utc'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw' cache='none'/>
      <source file='%(disk)s'/>
      <target dev='hda' bus='ide'/>
    </disk>
    <memballoon model='virtio'><stats period='10'/></memballoon>
  </devices>
</domain>
''' % dict(virt=virt_type, name=name, uuid=uuid, ns=NOVA_NS, flavor=flavor,
           flavor_id=1, memory=memory_mib,
           memory_kib=memory_mib * 1024, vcpus=vcpus, specs=specs,
           user=uuid_mod.uuid5(uuid_mod.NAMESPACE_OID, 'u' + name).hex,
           project=project_id, image=image_id, cputune=''.join(cputune),
           numatune=numatune, disk=saxutils.escape(os.path.abspath(disk)))
