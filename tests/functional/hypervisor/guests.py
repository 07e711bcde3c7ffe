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
import struct
import uuid as uuid_mod
from xml.sax import saxutils

NOVA_NS = 'http://openstack.org/xmlns/libvirt/nova/1.1'

#: Boot sector programs (real mode, loaded at 0x7c00).
BUSY = b'\xeb\xfe'              # jmp $
IDLE = b'\xfa\xf4\xeb\xfd'      # cli; hlt; jmp -3


#: A memory walker (GNU as, ``.code16``, linked at 0): it enables A20,
#: enters "unreal" mode (a 4 GiB data segment limit kept in real mode),
#: then forever adds 1 to the dword at ``base + (i * stride & mask)`` for
#: ``count`` steps and increments the pass counter at physical 0x500, which
#: the host reads through QEMU's monitor. Its parameters are the four
#: dwords at offset 0x1e0 (:func:`walker`)::
#:
#:     cli; xor ax,ax; mov ds,ax; mov ss,ax; mov sp,0x7c00
#:     in al,0x92; or al,2; and al,0xfe; out 0x92,al     ; A20
#:     lgdt [gdt_desc]; mov eax,cr0; or al,1; mov cr0,eax; jmp $+2
#:     mov bx,8; mov ds,bx; and al,0xfe; mov cr0,eax; jmp $+2
#:     xor ax,ax; mov ds,ax
#:     mov esi,[0x7de0]; mov edx,[0x7de4]; mov ebp,[0x7de8]
#:     xor edi,edi; mov eax,1
#: outer: mov ecx,[0x7dec]
#: inner: add [esi+edi],eax; add edi,edx; and edi,ebp; dec ecx; jnz inner
#:     inc dword [0x500]; jmp outer
#:     gdt: null, flat data (0x00cf92000000ffff); gdt_desc: limit 15
WALKER = bytes.fromhex(
    'fa31c08ed88ed0bc007ce4920c0224fee692660f0116787c0f20c00c010f22c0eb00'
    'bb08008edb24fe0f22c0eb0031c08ed8668b36e07d668b16e47d668b2ee87d6631ff'
    '66b801000000668b0eec7d676601043e6601d76621ef664975f166ff060005ebe5'
    '8d74000000000000000000ffff00000092cf000f00687c0000')
#: Guest-physical address of the walker's pass counter.
PASS_COUNTER = 0x500


def walker(base, size, stride):
    """The boot program walking ``size`` bytes at ``base``.

    ``size`` is a power of two, walked in steps of ``stride`` bytes; one
    pass is size / 64 steps.

    A stride of 64 streams through memory (the prefetchers' best case, a
    bandwidth and cache hog); an odd multiple of 64 larger than a page
    visits every cache line in an order the prefetchers cannot follow
    (latency-bound, sensitive to what the cache keeps).
    """
    if size & (size - 1) or stride % 64:
        raise ValueError('size must be a power of two, stride a multiple '
                         'of 64')
    program = bytearray(0x1f0)
    program[:len(WALKER)] = WALKER
    program[0x1e0:0x1f0] = struct.pack('<4I', base, stride, size - 1,
                                       size // 64)
    return bytes(program)


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
