"""Nova's CPU policy from the domain XML (compute_agent.domain_xml)."""

import testtools

from compute_agent import domain_xml
from tests.unit.compute_agent import fake_libvirt

UUID = '6c1f2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b'


def parse(**kwargs):
    return domain_xml.parse(fake_libvirt.domain_xml(UUID, 'vm', 2, 512,
                                                    **kwargs))


class TestCpuPolicy(testtools.TestCase):

    def test_nova_34_extra_specs_decide(self):
        # Pinned to one shared CPU, which the pinning alone would call
        # dedicated; the flavor says shared.
        info = parse(vcpupin={0: '3', 1: '4'},
                     extra_specs={'hw:cpu_policy': 'shared',
                                  'quota:cpu_quota': '30000'})
        self.assertEqual({'hw:cpu_policy': 'shared',
                          'quota:cpu_quota': '30000'}, info.extra_specs)
        self.assertEqual('shared', domain_xml.cpu_policy(info))
        info = parse(vcpupin={0: '3', 1: '3'},
                     extra_specs={'hw:cpu_policy': 'dedicated'})
        self.assertEqual('dedicated', domain_xml.cpu_policy(info))

    def test_without_the_spec_the_pinning_decides(self):
        # An older Nova, or the policy came from the image.
        info = parse(vcpupin={0: '3', 1: '4'})
        self.assertIsNone(info.extra_specs)
        self.assertEqual('dedicated', domain_xml.cpu_policy(info))
        info = parse(vcpupin={0: '3', 1: '4'}, extra_specs={})
        self.assertEqual({}, info.extra_specs)
        self.assertEqual('dedicated', domain_xml.cpu_policy(info))
        self.assertEqual('shared', domain_xml.cpu_policy(parse()))
        self.assertEqual('mixed', domain_xml.cpu_policy(
            parse(vcpupin={0: '3', 1: '0-2'})))

    def test_numatune_mode(self):
        self.assertEqual('strict', parse(numa_nodeset='0').numa_mode)
        info = parse(numa_nodeset='0-1', numa_mode='restrictive')
        self.assertEqual(('restrictive', [0, 1]),
                         (info.numa_mode, list(info.numa_nodeset)))
