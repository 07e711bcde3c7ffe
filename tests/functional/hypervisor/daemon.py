"""A private libvirtd for the real-hypervisor tests.

The daemon is the machine's own ``/usr/sbin/libvirtd`` (Debian's
libvirt-daemon with its QEMU driver, installed by
``tools/hypervisor-deps.sh``) but nothing of it is the machine's: it runs
in a mount namespace of its own (``unshare --mount``) where its
configuration (``/etc/libvirt``), sockets and runtime state (``/run``) and
persistent state, logs and caches (``/var``) are bind mounts of
directories under the test's temporary directory. Outside the namespace
its socket is ``<tmp>/run/libvirt/libvirt-sock``, which the tests and the
agent reach through ``qemu+unix:///system?socket=...``. The QEMU user
``libvirt-qemu`` the Debian build expects exists only in the namespace's
copy of ``/etc/passwd``; guests run as root, without a security driver.

It never touches a system libvirtd (there need not be one) or another
test's daemon. What is shared with the machine: the cgroup hierarchies,
where the daemon creates ``machine/<guest>.libvirt-qemu`` groups as a
system libvirtd would, and removes them with the guests.
"""

import os
import signal
import subprocess
import time

import fixtures
import libvirt

from compute_agent.sources import numa_memory

LIBVIRTD = '/usr/sbin/libvirtd'

LIBVIRTD_CONF = '''\
listen_tls = 0
listen_tcp = 0
unix_sock_group = "root"
unix_sock_rw_perms = "0700"
auth_unix_ro = "none"
auth_unix_rw = "none"
log_outputs = "3:stderr"
'''

# Guests run as root without a security driver, log to files (no
# virtlogd to start), and leave file ownership alone.
QEMU_CONF = '''\
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
stdio_handler = "file"
'''


def _namespace_passwd(tmp):
    with open('/etc/passwd') as f:
        passwd = f.read()
    with open('/etc/group') as f:
        group = f.read()
    if not passwd.endswith('\n'):
        passwd += '\n'
    if not group.endswith('\n'):
        group += '\n'
    if '\nlibvirt-qemu:' not in '\n' + passwd:
        passwd += ('libvirt-qemu:x:64055:64055:Libvirt Qemu:'
                   '/var/lib/libvirt:/usr/sbin/nologin\n')
    for name, gid in (('libvirt-qemu', 64055), ('kvm', 64056)):
        if '\n%s:' % name not in '\n' + group:
            group += '%s:x:%d:\n' % (name, gid)
    paths = {}
    for name, text in (('passwd', passwd), ('group', group)):
        paths[name] = os.path.join(tmp, name)
        with open(paths[name], 'w') as f:
            f.write(text)
    return paths


class PrivateLibvirtd(fixtures.Fixture):
    """Starts, restarts and stops a libvirtd of its own.

    :param tmp: an empty directory this daemon owns.
    """

    START_TIMEOUT = 30.0

    def __init__(self, tmp):
        super().__init__()
        self.tmp = tmp
        self.socket = os.path.join(tmp, 'run', 'libvirt', 'libvirt-sock')
        self.uri = 'qemu+unix:///system?socket=%s' % self.socket
        self.log = os.path.join(tmp, 'libvirtd.log')
        self.proc = None

    def _setUp(self):
        etc = os.path.join(self.tmp, 'etc')
        for d in ('etc', 'run', 'var/lib/libvirt', 'var/cache/libvirt',
                  'var/log/libvirt', 'var/tmp'):
            os.makedirs(os.path.join(self.tmp, d), exist_ok=True)
        with open(os.path.join(etc, 'libvirtd.conf'), 'w') as f:
            f.write(LIBVIRTD_CONF)
        with open(os.path.join(etc, 'qemu.conf'), 'w') as f:
            f.write(QEMU_CONF)
        with open(os.path.join(etc, 'libvirt.conf'), 'w') as f:
            f.write('')
        ids = _namespace_passwd(self.tmp)
        mounts = [(etc, '/etc/libvirt'), (ids['passwd'], '/etc/passwd'),
                  (ids['group'], '/etc/group'),
                  (os.path.join(self.tmp, 'run'), '/run'),
                  (os.path.join(self.tmp, 'var'), '/var')]
        self._script = ' && '.join(
            ['mount --bind %s %s' % m for m in mounts]
            + ['exec %s -f /etc/libvirt/libvirtd.conf' % LIBVIRTD])
        self.guest_uuids = set()
        self.addCleanup(self.kill_leftovers)
        self.addCleanup(self.stop)
        self.start()
        # Guests outlive their daemon: destroy them before it stops.
        self.addCleanup(self.destroy_all)

    def start(self):
        """Start the daemon and wait until it answers."""
        if self.proc is not None:
            raise RuntimeError('libvirtd already running')
        if os.path.exists(self.socket):
            os.unlink(self.socket)
        log = open(self.log, 'a')
        self.proc = subprocess.Popen(
            ['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
             self._script], stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + self.START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError('libvirtd exited with %s: %s'
                                   % (self.proc.returncode, self._tail()))
            if os.path.exists(self.socket):
                try:
                    conn = libvirt.open(self.uri)
                except libvirt.libvirtError:
                    pass
                else:
                    try:
                        if self._reconnected(conn):
                            return
                    finally:
                        conn.close()
            time.sleep(0.1)
        raise RuntimeError('libvirtd did not answer within %.0f s: %s'
                           % (self.START_TIMEOUT, self._tail()))

    @staticmethod
    def _reconnected(conn):
        """Whether the daemon took its running guests back.

        After a restart libvirtd reconnects to each running QEMU in a
        thread of its own; until it has, the guest's cgroups are unknown
        ("cgroup CPU controller is not mounted"). A test restarts the
        daemon to see what the agent does after a restart, not in the
        middle of one.
        """
        try:
            for dom in conn.listAllDomains(
                    libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE):
                dom.schedulerParameters()
        except libvirt.libvirtError:
            return False
        return True

    def stop(self):
        """Stop the daemon (its guests keep running, as with systemd)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def restart(self):
        self.stop()
        self.start()

    def destroy_all(self):
        """Destroy and undefine every domain of this daemon."""
        if self.proc is None:
            return
        conn = libvirt.open(self.uri)
        try:
            for dom in conn.listAllDomains():
                try:
                    if dom.isActive():
                        dom.destroy()
                    dom.undefine()
                except libvirt.libvirtError:
                    pass
        finally:
            conn.close()

    def kill_leftovers(self):
        """Kill a QEMU of ours that outlived a daemon that died early."""
        found = numa_memory.find_qemu_processes('/proc')
        for uuid in self.guest_uuids:
            pid = found.get(uuid)
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def _tail(self):
        try:
            with open(self.log) as f:
                return f.read()[-2000:]
        except OSError:
            return '(no log)'
