"""The agent while guests are destroyed and started and libvirtd restarts.

Nova's instances are persistent domains: while ``virsh destroy`` runs
(about two seconds here) their calls fail with "domain is not running"
rather than "no domain". Every cycle must still report the other
instances, with continuous counters (no ``first_sample`` after the
first), and ``contention-agent --once`` must succeed meanwhile.
"""

import json
import os
import subprocess
import sys
import threading
import time

from tests.functional.hypervisor import base


class TestDisruptions(base.HypervisorCase):

    def _config(self):
        path = os.path.join(self.tmp, 'agent.conf')
        with open(path, 'w') as f:
            f.write('[agent]\nhost = %s\nlibvirt_uri = %s\n'
                    % (self.host, self.libvirtd.uri))
        return path

    def test_destroy_start_and_restart_mid_run(self):
        keep = [self.guest('keep%d' % n, vcpupin={0: '0-1'})
                for n in range(2)]
        victim = self.guest('victim', vcpupin={0: '0-1'})
        uuids = {dom.UUIDString() for dom in keep}
        collector, _ = self.build()
        collector.collect()

        def check(report):
            sources = {s.name: s for s in report.sources}
            self.assertTrue(sources['libvirt'].available,
                            sources['libvirt'].reason)
            found = {r.uuid: r for r in report.instances}
            for uuid_ in uuids:
                self.assertIn(uuid_, found)
                self.assertNotIn('first_sample', found[uuid_].notes)
                self.assertIsNotNone(found[uuid_].metrics.cpu_util,
                                     found[uuid_].notes)
            return found

        # Cycles, back to back, and a --once run while the victim is
        # being destroyed (the --once process needs about a second to
        # start collecting).
        once = subprocess.Popen(
            [os.path.join(os.path.dirname(sys.executable),
                          'contention-agent'),
             '--config-file', self._config(), '--once'],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        destroying = threading.Thread(target=victim.destroy)
        destroying.start()
        reports = []
        while destroying.is_alive() or len(reports) < 2:
            reports.append(collector.collect())
            time.sleep(0.05)
        destroying.join()
        out, err = once.communicate(timeout=120)
        self.assertEqual(0, once.returncode, err)
        printed = {r['uuid'] for r in json.loads(out)['instances']}
        self.assertLessEqual(uuids, printed)
        for report in reports:
            check(report)
        self.assertNotIn(victim.UUIDString(), check(reports[-1]))

        # Started again: a new incarnation, counted from a first sample.
        victim.create()
        time.sleep(1)
        found = check(collector.collect())
        self.assertIn('first_sample', found[victim.UUIDString()].notes)
        time.sleep(1)
        found = check(collector.collect())
        self.assertEqual((), found[victim.UUIDString()].notes)

        # libvirtd restarts: one cycle may miss it, the next ones carry
        # on with the same counters (the QEMU processes never stopped).
        self.libvirtd.restart()
        events = []
        for _ in range(4):
            time.sleep(1)
            report = collector.collect()
            events.extend(report.events)
            sources = {s.name: s for s in report.sources}
            if sources['libvirt'].available:
                break
        self.assertIn('libvirt_reconnected', events)
        time.sleep(1)
        found = check(collector.collect())
        self.assertIn(victim.UUIDString(), found)
