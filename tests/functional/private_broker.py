"""A RabbitMQ node of the test's own, for tests that stop the broker.

The machine's RabbitMQ (port 5672) is shared: a test must never stop it.
:class:`PrivateRabbit` starts a second node from the installed RabbitMQ
with its own node name, AMQP port, Erlang distribution port, data
directory, cookie (``HOME``) and an empty plugin list, so that stopping,
starting or killing it touches nothing else; the fixture's cleanup stops
it. It runs the scripts in ``/usr/lib/rabbitmq/bin`` directly: Debian's
``/usr/sbin`` wrappers switch to the ``rabbitmq`` user, which cannot write
the test's directory.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

import fixtures

RABBIT_BIN = os.environ.get('CONTENTION_TEST_RABBIT_BIN',
                            '/usr/lib/rabbitmq/bin')
START_TIMEOUT = 120.0


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def available():
    """Why a private node cannot run here, or None."""
    if not os.path.exists(os.path.join(RABBIT_BIN, 'rabbitmq-server')):
        return 'no RabbitMQ in %s (CONTENTION_TEST_RABBIT_BIN)' % RABBIT_BIN
    return None


def start_for(test):
    """A :class:`PrivateRabbit` for ``test``, or skip it, or fail it.

    When ``CONTENTION_TEST_RABBIT_URL`` points at a broker elsewhere, this
    machine may have no RabbitMQ to start a node from: the test is
    skipped. Otherwise the default broker is this machine's RabbitMQ, so
    its server is installed, and a node that cannot start is a failure.
    """
    why = available()
    if why and 'CONTENTION_TEST_RABBIT_URL' in os.environ:
        test.skipTest(why)
    test.assertIsNone(why)
    return test.useFixture(PrivateRabbit())


class PrivateRabbit(fixtures.Fixture):
    """A running private RabbitMQ node; ``url`` is its transport URL."""

    def _setUp(self):
        self.base = tempfile.mkdtemp(prefix='contention-rabbit-')
        self.addCleanup(shutil.rmtree, self.base, True)
        self.port = free_port()
        self.dist_port = free_port()
        self.node = 'contention-test-%s@localhost' % uuid.uuid4().hex[:8]
        env_file = os.path.join(self.base, 'rabbitmq-env.conf')
        config = os.path.join(self.base, 'rabbitmq.conf')
        plugins = os.path.join(self.base, 'enabled_plugins')
        with open(env_file, 'w') as f:
            f.write('')
        with open(config, 'w') as f:
            f.write('listeners.tcp.local = 127.0.0.1:%d\n'
                    'loopback_users = none\n' % self.port)
        with open(plugins, 'w') as f:
            f.write('[].\n')
        self.env = dict(
            os.environ,
            HOME=self.base,
            RABBITMQ_CONF_ENV_FILE=env_file,
            RABBITMQ_NODENAME=self.node,
            RABBITMQ_NODE_IP_ADDRESS='127.0.0.1',
            RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(self.dist_port),
            RABBITMQ_CONFIG_FILE=config,
            RABBITMQ_ENABLED_PLUGINS_FILE=plugins,
            RABBITMQ_MNESIA_BASE=os.path.join(self.base, 'mnesia'),
            RABBITMQ_LOG_BASE=os.path.join(self.base, 'log'),
            RABBITMQ_PID_FILE=os.path.join(self.base, 'node.pid'),
            ERL_EPMD_ADDRESS='127.0.0.1',
        )
        self.env.pop('RABBITMQ_ADVANCED_CONFIG_FILE', None)
        self.url = 'rabbit://guest:guest@127.0.0.1:%d/' % self.port
        with open(os.path.join(self.base, 'server.out'), 'w') as out:
            self._server = subprocess.Popen(
                [os.path.join(RABBIT_BIN, 'rabbitmq-server')], env=self.env,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.addCleanup(self._stop_node)
        self.wait_up()

    def ctl(self, *args, timeout=120):
        """``rabbitmqctl -n <this node> args``."""
        return subprocess.run(
            [os.path.join(RABBIT_BIN, 'rabbitmqctl'), '-n', self.node]
            + list(args), env=self.env, capture_output=True, text=True,
            timeout=timeout)

    def accepting(self):
        try:
            with socket.create_connection(('127.0.0.1', self.port), 1):
                return True
        except OSError:
            return False

    def wait_up(self, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._server.poll() is not None:
                raise RuntimeError('private RabbitMQ %s exited (%s); see %s'
                                   % (self.node, self._server.returncode,
                                      self.base))
            if self.accepting():
                return
            time.sleep(0.5)
        raise RuntimeError('private RabbitMQ %s not up on port %d after '
                           '%.0f s' % (self.node, self.port, timeout))

    def stop_app(self):
        result = self.ctl('stop_app')
        if result.returncode != 0:
            raise RuntimeError(result.stderr)

    def start_app(self):
        result = self.ctl('start_app')
        if result.returncode != 0:
            raise RuntimeError(result.stderr)
        self.wait_up()

    def _stop_node(self):
        if self._server.poll() is None:
            self.ctl('stop', timeout=60)
            try:
                self._server.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self._server.pid, 9)
                self._server.wait(10)
