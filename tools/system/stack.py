"""Bring up a small OpenStack cloud as separate processes, for `make system`.

Keystone, Placement, Glance, Neutron (API only), Nova (api, conductor,
scheduler, two fake-driver computes), Watcher (api, decision engine,
applier), contention-collector and one contention-agent per compute host
(the ``emulated`` counter source), each with its own configuration file,
log file and pid file under ``.system/run/``. The machine's RabbitMQ and
MariaDB are used through a vhost and databases of their own (created here,
nothing else of those services is touched).

The settings of Nova, Watcher, the collector and the agents that concern
this project are written by the devstack plugin's own functions
(``devstack/plugin.sh``, sourced through ``tools/system/devstack-shim.sh``),
so the plugin's configuration is the one exercised.

:class:`Stack` only starts and stops processes; ``scenario.py`` drives the
cloud through the ``openstack`` CLI.
"""

import configparser
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
VENV = os.environ.get('SYSTEM_VENV', os.path.join(REPO, '.system', 'venv'))
BIN = os.path.join(VENV, 'bin')
RUN = os.environ.get('SYSTEM_RUN_DIR', os.path.join(REPO, '.system', 'run'))
HOST_IP = '127.0.0.1'
PASSWORD = 'contention-sys'
VHOST = 'contention-sys'
RABBIT_USER = 'contention-sys'
DB_USER = 'contention_sys'
DB_PREFIX = 'csys_'
REGION = 'RegionOne'
COMPUTES = ('cmp-1', 'cmp-2')
MODEL_PATH = os.path.join(RUN, 'model.skops')
#: The agents' emulated source plays this scenario's hosts and profiles.
EMULATED_SCENARIO = os.path.join(REPO, 'tools', 'system', 'emulated.yaml')
#: Unusual ports, so the test can run beside other things on the machine.
PORTS = {'keystone': 25000, 'placement': 25778, 'glance': 25292,
         'neutron': 25696, 'nova': 25774, 'watcher': 25322}
SERVICES = {
    # name: (service type, URL path)
    'keystone': ('identity', '/v3'),
    'placement': ('placement', ''),
    'glance': ('image', ''),
    'neutron': ('network', ''),
    'nova': ('compute', '/v2.1'),
    'watcher': ('infra-optim', ''),
}


def log(msg):
    sys.stdout.write('system: %s\n' % msg)
    sys.stdout.flush()


def url(service):
    return 'http://%s:%d%s' % (HOST_IP, PORTS[service], SERVICES[service][1])


def db_url(name):
    return 'mysql+pymysql://%s:%s@%s/%s%s?charset=utf8' % (
        DB_USER, PASSWORD, HOST_IP, DB_PREFIX, name)


def transport_url():
    return 'rabbit://%s:%s@%s:5672/%s' % (RABBIT_USER, PASSWORD, HOST_IP,
                                          VHOST)


def write_ini(path, sections):
    """Write ``{section: {key: value or [values]}}`` (lists: repeated keys)."""
    lines = []
    for section, values in sections.items():
        lines.append('[%s]' % section)
        for key, value in values.items():
            for v in (value if isinstance(value, list) else [value]):
                lines.append('%s = %s' % (key, v))
        lines.append('')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write('\n'.join(lines))
    return path


def read_ini(path):
    parser = configparser.RawConfigParser(strict=False)
    parser.read(path)
    return parser


def authtoken(user):
    """A ``[keystone_authtoken]``-like section for ``user``."""
    return {'www_authenticate_uri': url('keystone'),
            'auth_url': url('keystone'), 'auth_type': 'password',
            'project_domain_name': 'Default', 'user_domain_name': 'Default',
            'project_name': 'service', 'username': user,
            'password': PASSWORD, 'region_name': REGION}


def run(cmd, env=None, check=True, quiet=True, **kwargs):
    """Run a set-up command; its output goes to the set-up log."""
    with open(os.path.join(RUN, 'logs', 'setup.log'), 'a') as out:
        out.write('$ %s\n' % ' '.join(cmd))
        out.flush()
        proc = subprocess.run(cmd, env=env, stdout=out if quiet else None,
                              stderr=subprocess.STDOUT if quiet else None,
                              **kwargs)
    if check and proc.returncode:
        raise RuntimeError('%s exited with %d (see %s/logs/setup.log)'
                           % (' '.join(cmd[:3]), proc.returncode, RUN))
    return proc


def wait_http(address, timeout=120, what=None, stack=None):
    deadline = time.time() + timeout
    while True:
        if stack is not None:
            stack.check_alive()
        try:
            urllib.request.urlopen(address, timeout=5).read()
            return
        except urllib.error.HTTPError:
            return          # it answered
        except (urllib.error.URLError, OSError):
            if time.time() > deadline:
                raise RuntimeError('%s did not answer at %s within %ds'
                                   % (what or address, address, timeout))
            time.sleep(1)


class Stack(object):
    """The processes of the cloud, by name: pid files, logs, teardown."""

    def __init__(self):
        self.procs = {}
        #: One-shot jobs started in the background, killed at teardown.
        self.jobs = []
        self.env = dict(os.environ, PATH=BIN + ':' + os.environ['PATH'])
        self.env.pop('PYTHONPATH', None)

    # -- processes -------------------------------------------------------

    def start(self, name, cmd, env=None):
        logf = open(os.path.join(RUN, 'logs', name + '.log'), 'a')
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                                env=dict(self.env, **(env or {})),
                                cwd=RUN, start_new_session=True)
        logf.close()
        with open(os.path.join(RUN, 'pids', name + '.pid'), 'w') as f:
            f.write('%d\n' % proc.pid)
        self.procs[name] = proc
        return proc

    def check_alive(self):
        dead = {n: p.returncode for n, p in self.procs.items()
                if p.poll() is not None}
        if dead:
            raise RuntimeError('process(es) exited: %s (logs in %s/logs)'
                               % (', '.join('%s (%s)' % i
                                            for i in sorted(dead.items())),
                                  RUN))

    def stop(self, name, timeout=15):
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)

    def teardown(self):
        """Stop every process this stack started, newest first, by pid."""
        for name in reversed(list(self.procs)):
            self.stop(name)
        for job in self.jobs:
            if job.poll() is None:
                os.killpg(job.pid, signal.SIGKILL)
                job.wait(5)
        log('all processes stopped')

    # -- WSGI services under gunicorn -------------------------------------

    def wsgi(self, name, module, argv, env=None, workers=1, preload=(),
             after=''):
        """Serve ``module``'s ``application`` with gunicorn.

        Keystone's, Neutron's and Watcher's WSGI modules parse the process
        arguments as their own: gunicorn's would be refused. A two-line
        wrapper sets the arguments they expect before importing them.
        """
        wrapper_dir = os.path.join(RUN, 'wsgi')
        os.makedirs(wrapper_dir, exist_ok=True)
        with open(os.path.join(wrapper_dir, '%s_wsgi.py' % name), 'w') as f:
            f.write('import sys\nsys.argv = %r\n%s'
                    'from %s import application  # noqa\n%s'
                    % ([name] + list(argv),
                       ''.join('import %s  # noqa\n' % m for m in preload),
                       module, after))
        cmd = [os.path.join(BIN, 'gunicorn'), '--chdir', wrapper_dir,
               '--bind', '%s:%d' % (HOST_IP, PORTS[name]),
               '--workers', str(workers), '--threads', '4',
               '--worker-class', 'gthread', '--timeout', '120',
               '--pid', os.path.join(RUN, 'pids', name + '-gunicorn.pid'),
               '%s_wsgi:application' % name]
        self.start(name, cmd, env=env)
        wait_http('http://%s:%d/' % (HOST_IP, PORTS[name]), what=name,
                  stack=self)
        log('%s is up on port %d' % (name, PORTS[name]))


# -- infrastructure ---------------------------------------------------------

def prepare_infra():
    """A RabbitMQ vhost and MariaDB databases of our own, created afresh."""
    users = subprocess.run(['rabbitmqctl', '-q', 'list_users'],
                           capture_output=True, text=True).stdout
    if RABBIT_USER not in users.split():
        run(['rabbitmqctl', 'add_user', RABBIT_USER, PASSWORD])
    run(['rabbitmqctl', 'delete_vhost', VHOST], check=False)
    run(['rabbitmqctl', 'add_vhost', VHOST])
    run(['rabbitmqctl', 'set_permissions', '-p', VHOST, RABBIT_USER,
         '.*', '.*', '.*'])
    dbs = ['keystone', 'placement', 'glance', 'neutron', 'nova_api',
           'nova', 'nova_cell0', 'watcher', 'contention']
    sql = ["CREATE USER IF NOT EXISTS '%s'@'%s' IDENTIFIED BY '%s';"
           % (DB_USER, HOST_IP, PASSWORD)]
    for db in dbs:
        sql += ['DROP DATABASE IF EXISTS %s%s;' % (DB_PREFIX, db),
                'CREATE DATABASE %s%s CHARACTER SET utf8mb4;'
                % (DB_PREFIX, db),
                "GRANT ALL PRIVILEGES ON %s%s.* TO '%s'@'%s';"
                % (DB_PREFIX, db, DB_USER, HOST_IP)]
    run(['mysql', '-uroot', '-h', HOST_IP, '-e', ' '.join(sql)])
    log('RabbitMQ vhost %s and %d MariaDB databases %s* ready'
        % (VHOST, len(dbs), DB_PREFIX))


def drop_infra():
    run(['rabbitmqctl', 'delete_vhost', VHOST], check=False)
    dbs = subprocess.run(
        ['mysql', '-uroot', '-h', HOST_IP, '-N', '-e', 'SHOW DATABASES'],
        capture_output=True, text=True).stdout.split()
    sql = ' '.join('DROP DATABASE %s;' % d for d in dbs
                   if d.startswith(DB_PREFIX))
    if sql:
        run(['mysql', '-uroot', '-h', HOST_IP, '-e', sql], check=False)


def conf_path(*parts):
    return os.path.join(RUN, 'etc', *parts)


def admin_env():
    return {'OS_AUTH_URL': url('keystone'), 'OS_USERNAME': 'admin',
            'OS_PASSWORD': PASSWORD, 'OS_PROJECT_NAME': 'admin',
            'OS_USER_DOMAIN_NAME': 'Default',
            'OS_PROJECT_DOMAIN_NAME': 'Default',
            'OS_REGION_NAME': REGION, 'OS_IDENTITY_API_VERSION': '3',
            'OS_INTERFACE': 'public'}


def openstack(stack, *args, json_out=False):
    cmd = [os.path.join(BIN, 'openstack')] + list(args)
    if json_out:
        cmd += ['-f', 'json']
    env = dict(stack.env, **admin_env())
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    with open(os.path.join(RUN, 'logs', 'openstack-cli.log'), 'a') as f:
        f.write('$ openstack %s\n%s%s\n' % (' '.join(args), proc.stdout,
                                            proc.stderr))
    if proc.returncode:
        raise RuntimeError('openstack %s failed: %s'
                           % (' '.join(args), proc.stderr.strip()[-2000:]))
    return json.loads(proc.stdout) if json_out else proc.stdout


# -- services ---------------------------------------------------------------

def keystone(stack):
    conf = write_ini(conf_path('keystone', 'keystone.conf'), {
        'DEFAULT': {'log_file': os.path.join(RUN, 'logs', 'keystone.log')},
        'database': {'connection': db_url('keystone')},
        'token': {'provider': 'fernet'},
        # bcrypt's default cost makes each user creation take seconds on a
        # loaded 2-core machine; a test cloud needs no such cost.
        'identity': {'password_hash_rounds': 4},
        'fernet_tokens': {'key_repository': conf_path('keystone', 'fernet')},
        'credential': {'key_repository': conf_path('keystone',
                                                   'credential')},
    })
    manage = [os.path.join(BIN, 'keystone-manage'), '--config-file', conf]
    run(manage + ['db_sync'])
    run(manage + ['fernet_setup', '--keystone-user', 'root',
                  '--keystone-group', 'root'])
    run(manage + ['credential_setup', '--keystone-user', 'root',
                  '--keystone-group', 'root'])
    run(manage + ['bootstrap', '--bootstrap-password', PASSWORD,
                  '--bootstrap-admin-url', url('keystone'),
                  '--bootstrap-public-url', url('keystone'),
                  '--bootstrap-internal-url', url('keystone'),
                  '--bootstrap-region-id', REGION])
    stack.wsgi('keystone', 'keystone.wsgi.api', [],
               env={'OS_KEYSTONE_CONFIG_FILES': conf,
                    'OS_KEYSTONE_CONFIG_DIR': os.path.dirname(conf)})
    # The catalogue, through openstacksdk in this process: forty
    # `openstack` commands would take minutes on a loaded 2-core machine.
    import openstack as sdk
    env = admin_env()
    conn = sdk.connect(auth_url=env['OS_AUTH_URL'], username='admin',
                       password=PASSWORD, project_name='admin',
                       user_domain_name='Default',
                       project_domain_name='Default', region_name=REGION)
    idn = conn.identity
    service_project = idn.create_project(name='service',
                                         domain_id='default')
    roles = {r.name: r for r in idn.roles()}
    if 'service' not in roles:
        roles['service'] = idn.create_role(name='service')
    for name in ('placement', 'glance', 'neutron', 'nova', 'watcher'):
        user = idn.create_user(name=name, password=PASSWORD,
                               domain_id='default')
        for role in ('admin', 'service'):
            idn.assign_project_role_to_user(service_project, user,
                                            roles[role])
        service = idn.create_service(name=name, type=SERVICES[name][0])
        for interface in ('public', 'internal', 'admin'):
            idn.create_endpoint(service_id=service.id, interface=interface,
                                url=url(name), region_id=REGION)
    conn.close()


def placement(stack):
    conf = write_ini(conf_path('placement', 'placement.conf'), {
        'DEFAULT': {'log_file': os.path.join(RUN, 'logs',
                                             'placement.log')},
        'placement_database': {'connection': db_url('placement')},
        'api': {'auth_strategy': 'keystone'},
        'keystone_authtoken': authtoken('placement'),
    })
    run([os.path.join(BIN, 'placement-manage'), '--config-file', conf,
         'db', 'sync'])
    stack.wsgi('placement', 'placement.wsgi.api', [],
               env={'OS_PLACEMENT_CONFIG_DIR': os.path.dirname(conf)})


def glance(stack):
    store = os.path.join(RUN, 'glance-images')
    os.makedirs(store, exist_ok=True)
    conf = write_ini(conf_path('glance', 'glance-api.conf'), {
        'DEFAULT': {'log_file': os.path.join(RUN, 'logs', 'glance.log'),
                    'enabled_backends': 'local:file', 'workers': 1},
        'database': {'connection': db_url('glance')},
        'glance_store': {'default_backend': 'local'},
        'local': {'filesystem_store_datadir': store},
        'os_glance_staging_store': {
            'filesystem_store_datadir': os.path.join(store, 'staging')},
        'os_glance_tasks_store': {
            'filesystem_store_datadir': os.path.join(store, 'tasks')},
        'paste_deploy': {'flavor': 'keystone'},
        'keystone_authtoken': authtoken('glance'),
        'oslo_concurrency': {'lock_path': os.path.join(RUN, 'lock')},
    })
    shutil.copy(os.path.join(VENV, 'etc', 'glance', 'glance-api-paste.ini'),
                os.path.dirname(conf))
    run([os.path.join(BIN, 'glance-manage'), '--config-file', conf,
         'db_sync'])
    stack.wsgi('glance', 'glance.wsgi.api', [],
               env={'OS_GLANCE_CONFIG_DIR': os.path.dirname(conf)})
    image = os.path.join(RUN, 'tiny.img')
    with open(image, 'wb') as f:
        f.write(b'\0' * (1 << 20))
    openstack(stack, 'image', 'create', '--disk-format', 'raw',
              '--container-format', 'bare', '--public', '--file', image,
              'tiny')


def neutron(stack):
    """Neutron's API only.

    Nova's server views ask it for ports, even for servers booted with
    ``--nic none``. ML2 with no mechanism driver and no agent answers that.
    Listing ports needs the port-forwarding model (its back-reference on
    ``Port``), which only that service plugin would import: the wrapper
    imports it and configures the mappers, so the back-reference exists
    before the first request.
    """
    conf = write_ini(conf_path('neutron', 'neutron.conf'), {
        'DEFAULT': {'log_file': os.path.join(RUN, 'logs', 'neutron.log'),
                    'core_plugin': 'ml2', 'service_plugins': '',
                    'auth_strategy': 'keystone',
                    'transport_url': transport_url(),
                    'api_workers': 1, 'rpc_workers': 0,
                    'notify_nova_on_port_status_changes': 'false',
                    'notify_nova_on_port_data_changes': 'false',
                    'api_paste_config': os.path.join(VENV, 'etc', 'neutron',
                                                     'api-paste.ini')},
        'database': {'connection': db_url('neutron')},
        'keystone_authtoken': authtoken('neutron'),
        'oslo_concurrency': {'lock_path': os.path.join(RUN, 'lock')},
    })
    ml2 = write_ini(conf_path('neutron', 'ml2_conf.ini'), {
        'ml2': {'type_drivers': 'flat', 'tenant_network_types': '',
                'mechanism_drivers': '', 'extension_drivers': ''},
    })
    args = ['--config-file', conf, '--config-file', ml2]
    run([os.path.join(BIN, 'neutron-db-manage')] + args
        + ['upgrade', 'heads'])
    stack.wsgi('neutron', 'neutron.wsgi.api', args,
               preload=['neutron.db.models.port_forwarding'],
               after='import sqlalchemy.orm\nsqlalchemy.orm.configure_mappers()\n')


def nova_conf(name, extra=None):
    sections = {
        'DEFAULT': {'log_file': os.path.join(RUN, 'logs', name + '.log'),
                    'transport_url': transport_url(),
                    'state_path': os.path.join(RUN, 'nova', name),
                    'my_ip': HOST_IP},
        'api': {'auth_strategy': 'keystone'},
        'api_database': {'connection': db_url('nova_api')},
        'database': {'connection': db_url('nova')},
        'keystone_authtoken': authtoken('nova'),
        'placement': authtoken('placement'),
        'neutron': authtoken('neutron'),
        'service_user': dict(authtoken('nova'),
                             send_service_user_token='true'),
        'glance': {'region_name': REGION},
        'oslo_concurrency': {'lock_path': os.path.join(RUN, 'lock')},
        'conductor': {'workers': 1},
        'scheduler': {'workers': 1, 'discover_hosts_in_cells_interval': 10},
        'notifications': {'notification_format': 'versioned'},
        'oslo_messaging_notifications': {'driver': 'messagingv2'},
        'vnc': {'enabled': 'false'},
        'wsgi': {'api_paste_config': os.path.join(VENV, 'etc', 'nova',
                                                  'api-paste.ini')},
    }
    for section, values in (extra or {}).items():
        sections.setdefault(section, {}).update(values)
    os.makedirs(os.path.join(RUN, 'nova', name), exist_ok=True)
    return write_ini(conf_path('nova', name + '.conf'), sections)


def nova(stack, shim):
    base = nova_conf('nova')
    # Our settings, exactly as the devstack plugin writes them.
    shim('configure_contention_nova', NOVA_CONF=base)
    manage = [os.path.join(BIN, 'nova-manage'), '--config-file', base]
    run(manage + ['api_db', 'sync'])
    run(manage + ['cell_v2', 'map_cell0', '--database_connection',
                  db_url('nova_cell0')])
    run(manage + ['cell_v2', 'create_cell', '--name', 'cell1', '--verbose'])
    run(manage + ['db', 'sync'])
    # Nova's WSGI application reads api-paste.ini and nova.conf from
    # OS_NOVA_CONFIG_DIR.
    shutil.copy(os.path.join(VENV, 'etc', 'nova', 'api-paste.ini'),
                os.path.dirname(base))
    stack.wsgi('nova', 'nova.wsgi.osapi_compute', [],
               env={'OS_NOVA_CONFIG_DIR': os.path.dirname(base)})
    for service in ('conductor', 'scheduler'):
        own = write_ini(conf_path('nova', service + '.conf'), {'DEFAULT': {
            'log_file': os.path.join(RUN, 'logs', 'nova-%s.log' % service),
            # The weigher logs its scores per request at debug level.
            'debug': str(service == 'scheduler')}})
        stack.start('nova-' + service, [os.path.join(BIN, 'nova-' + service),
                                        '--config-file', base,
                                        '--config-file', own])
    for host in COMPUTES:
        conf = nova_conf('nova-compute-' + host, {
            'DEFAULT': {'host': host, 'compute_driver': 'fake.FakeDriver',
                        'instances_path': os.path.join(RUN, 'nova', host,
                                                       'instances')}})
        stack.start('nova-compute-' + host,
                    [os.path.join(BIN, 'nova-compute'),
                     '--config-file', base, '--config-file', conf])
    deadline = time.time() + 120
    while True:
        stack.check_alive()
        services = openstack(stack, 'compute', 'service', 'list',
                             '--service', 'nova-compute', json_out=True)
        up = sorted(s['Host'] for s in services if s['State'] == 'up')
        if up == sorted(COMPUTES):
            break
        if time.time() > deadline:
            raise RuntimeError('nova-compute services up: %s' % up)
        time.sleep(3)
    run(manage + ['cell_v2', 'discover_hosts', '--verbose'])
    deadline = time.time() + 120
    while True:
        hv = openstack(stack, 'hypervisor', 'list', json_out=True)
        if len(hv) == len(COMPUTES):
            break
        if time.time() > deadline:
            raise RuntimeError('hypervisors: %s' % hv)
        time.sleep(3)
    for flavor in ('c1.mem', 'c1.cpu'):
        openstack(stack, 'flavor', 'create', '--vcpus', '1', '--ram',
                  '1024', '--disk', '1', flavor)
    log('nova: api, conductor, scheduler and %d fake computes up'
        % len(COMPUTES))
    return base


def contention(stack, shim, profiles):
    """Store, collector, bootstrap model and one agent per compute host."""
    collector = conf_path('contention', 'collector.conf')
    agent_base = conf_path('contention', 'agent.conf')
    shim('configure_contention_collector')
    shim('configure_contention_agent', NOVA_CONF=conf_path('nova',
                                                           'nova.conf'))
    run([os.path.join(BIN, 'contention-collector'), '--config-file',
         collector, '--upgrade-db'])
    stack.start('contention-collector',
                [os.path.join(BIN, 'contention-collector'),
                 '--config-file', collector])
    for host in COMPUTES:
        conf = write_ini(conf_path('contention', 'agent-%s.conf' % host), {
            # No hypervisor on a fake-driver cloud: the emulated source
            # plays the host, and the agent's re-pins and CPU caps act on
            # it (compute_agent.actions.EmulatedActions).
            'agent': {'host': host, 'sources': 'emulated', 'interval': 5},
            'emulated': dict(
                authtoken('nova'), auth_type='password',
                scenario=EMULATED_SCENARIO,
                profiles=','.join('%s:%s' % i for i in profiles.items())),
        })
        stack.start('contention-agent-' + host,
                    [os.path.join(BIN, 'contention-agent'),
                     '--config-file', agent_base, '--config-file', conf])
    log('contention: collector and %d agents (emulated source) started'
        % len(COMPUTES))


def watcher(stack, shim):
    conf = write_ini(conf_path('watcher', 'watcher.conf'), {
        'DEFAULT': {'log_file': os.path.join(RUN, 'logs', 'watcher.log'),
                    'transport_url': transport_url()},
        'database': {'connection': db_url('watcher')},
        'keystone_authtoken': authtoken('watcher'),
        'watcher_clients_auth': authtoken('watcher'),
        'api': {'host': HOST_IP, 'port': PORTS['watcher'], 'workers': 1},
        'oslo_concurrency': {'lock_path': os.path.join(RUN, 'lock')},
        'oslo_messaging_notifications': {'driver': 'messagingv2'},
        # Without Nova's notifications reaching it, Watcher's model is only
        # as fresh as its last periodic refresh: keep that short.
        'watcher_cluster_data_model_collectors.compute': {'period': 10},
        'watcher_cluster_data_model_collectors.baremetal': {'period': 3600},
        'watcher_cluster_data_model_collectors.storage': {'period': 3600},
    })
    shim('configure_contention_watcher', WATCHER_CONF=conf)
    run([os.path.join(BIN, 'watcher-db-manage'), '--config-file', conf,
         'upgrade'])
    logs = {}
    for service in ('decision-engine', 'applier'):
        name = 'watcher-' + service
        stack.start(name, [os.path.join(BIN, name), '--config-file', conf,
                           '--log-file', os.path.join(RUN, 'logs',
                                                      name + '.log')])
        logs[name] = os.path.join(RUN, 'logs', name + '.log')
    # watcher-api's own command refuses the threading backend: it is a
    # WSGI application like the others.
    stack.wsgi('watcher', 'watcher.wsgi.api',
               ['--config-file', conf, '--log-file',
                os.path.join(RUN, 'logs', 'watcher-api.log')])
    return conf


def bring_up(stack, profiles, shim):
    for d in ('logs', 'pids', 'etc', 'lock'):
        os.makedirs(os.path.join(RUN, d), exist_ok=True)
    prepare_infra()
    # The plugin's bootstrap model (contention-train --from-sim): a few
    # minutes of one core, trained while the services come up.
    cmd, env = shim_command('bootstrap_contention_model')
    trainer = stack.start('bootstrap-model', cmd, env=env)
    # A one-shot job, not a service: check_alive must not count its exit.
    stack.procs.pop('bootstrap-model')
    stack.jobs.append(trainer)
    keystone(stack)
    placement(stack)
    glance(stack)
    neutron(stack)
    if trainer.wait() != 0:
        raise RuntimeError('bootstrap_contention_model failed: see '
                           'logs/bootstrap-model.log')
    log('bootstrap placement model trained: %s' % MODEL_PATH)
    nova(stack, shim)
    contention(stack, shim, profiles)
    watcher(stack, shim)
    stack.check_alive()


def shim_command(function, **env):
    """(command, environment) running one function of devstack/plugin.sh.

    With devstack's few helpers (tools/system/devstack-shim.sh).
    """
    full = dict(os.environ, PATH=BIN + ':' + os.environ['PATH'],
                REPO=REPO, RUN=RUN, BIN=BIN,
                TRANSPORT_URL=transport_url(),
                STORE_URL=db_url('contention'),
                CONTENTION_CONF_DIR=conf_path('contention'),
                CONTENTION_MODEL_PATH=MODEL_PATH, **env)
    return (['bash', os.path.join(REPO, 'tools', 'system',
                                  'devstack-shim.sh'), function], full)


def make_shim():
    def shim(function, **env):
        cmd, full = shim_command(function, **env)
        run(cmd, env=full)
    return shim


def clean_run_dir():
    if os.path.exists(RUN):
        shutil.rmtree(RUN)
    os.makedirs(os.path.join(RUN, 'logs'))


def port_free(port):
    with socket.socket() as s:
        return s.connect_ex((HOST_IP, port)) != 0
