"""Watcher's own Tempest API tests against the system test's cloud.

``watcher-tempest-plugin``'s API tests (goals, strategies, audit
templates, audits, action plans, actions, services, data models, scoring
engines) are Watcher's contract with its clients. Run against a Watcher
that has our goal, strategies, actions and planner loaded, they show that
the plugins break none of it. Tempest and the plugin live in an
environment of their own (``.system/tempest``, pinned by
``constraints-2026.2-tempest.txt``): they only talk HTTP to the cloud.

Tempest creates a project and users of its own for each test class
(dynamic credentials, with the cloud's admin account) and removes them.
Its workspace, configuration and log are kept in ``.system/run/tempest``.
"""

import os
import re
import subprocess

import stack as stack_mod

TEMPEST_VENV = os.environ.get(
    'SYSTEM_TEMPEST_VENV', os.path.join(stack_mod.REPO, '.system', 'tempest'))
#: Every API test of the plugin; its scenario tests need a metrics
#: datasource (Gnocchi or Prometheus) and real load, which this cloud has
#: not.
REGEX = r'^watcher_tempest_plugin\.tests\.api\.'
#: Tests a run may skip, with why; any other skip is a failed check.
EXPECTED_SKIPS = {
    # @decorators.skip_because(bug="2134046") in the plugin itself.
    'test_list_with_limit': 'skipped by the plugin (Launchpad #2134046)',
}


def config():
    """tempest.conf for the cloud of :mod:`stack`, as sections."""
    return {
        'DEFAULT': {'log_file': os.path.join(stack_mod.RUN, 'logs',
                                             'tempest.log')},
        'auth': {'admin_username': 'admin',
                 'admin_password': stack_mod.PASSWORD,
                 'admin_project_name': 'admin',
                 'admin_domain_name': 'Default',
                 'use_dynamic_credentials': 'true'},
        'identity': {'uri_v3': stack_mod.url('keystone'),
                     'auth_version': 'v3',
                     'region': stack_mod.REGION},
        'identity-feature-enabled': {'api_v2': 'false'},
        'service_available': {'watcher': 'true', 'nova': 'true',
                              'glance': 'true', 'neutron': 'true',
                              'cinder': 'false', 'swift': 'false'},
        # No metrics datasource: the API tests need none. Every API
        # microversion Watcher serves, so no test class is left out.
        'optimize': {'datasource': '', 'min_microversion': '1.0',
                     'max_microversion': 'latest'},
    }


def totals(output):
    """{passed, skipped, failed} from ``tempest run``'s summary."""
    found = {}
    for key in ('Passed', 'Skipped', 'Failed'):
        match = re.search(r'^\s*- %s: (\d+)' % key, output, re.M)
        found[key.lower()] = int(match.group(1)) if match else None
    return found


def skipped(output):
    """What ``tempest run`` reports as skipped: a test or a whole class.

    A test by its method name, a class skipped in ``setUpClass`` (e.g.
    outside the configured microversions) by its class name.
    """
    found = set()
    for line in output.splitlines():
        head, sep, _ = line.partition(' ... SKIPPED')
        if not sep:
            continue
        name = head.split()[-1].strip('()')
        name = re.sub(r'\[[^\]]*\]$', '', name)
        found.add(name.rsplit('.', 1)[-1] if '.test_' in name else name)
    return sorted(found)


def failed(output):
    """Each failed test's short name and the last line of its traceback.

    ``tempest run`` follows a ``... FAILED`` line with the test's captured
    traceback, up to the next test's line; its last line is the
    exception, which is what a reader of a CI log needs first.
    """
    found, current = [], None
    for line in output.splitlines() + ['{end}']:
        if re.match(r'\{\d+\} |\{end\}|=+$', line):
            if current:
                found.append('%s: %s' % tuple(current))
            current = None
            test = re.match(r'\{\d+\} (\S+?)(\[[^\]]*\])? .*\.\.\. FAILED',
                            line)
            if test:
                current = [test.group(1).rsplit('.', 1)[-1], '']
        elif current and line.strip():
            current[1] = line.strip()
    return found


def run(checks, timeout=900):
    """Run the plugin's API tests; one check for the outcome."""
    tempest = os.path.join(TEMPEST_VENV, 'bin', 'tempest')
    if not os.path.exists(tempest):
        checks.check('Watcher\'s Tempest API tests ran', False,
                     '%s is missing: tools/system/run.sh builds it'
                     % TEMPEST_VENV)
        return
    workspace = os.path.join(stack_mod.RUN, 'tempest')
    # Its own workspace registry: nothing in ~/.tempest.
    stack_mod.run([tempest, 'init', '--name', 'contention-system',
                   '--workspace-path', os.path.join(stack_mod.RUN,
                                                    'tempest-workspaces.yaml'),
                   workspace])
    etc = os.path.join(workspace, 'etc')
    stack_mod.write_ini(os.path.join(etc, 'tempest.conf'), config())
    stack_mod.log('tempest: running watcher-tempest-plugin\'s API tests')
    env = dict(os.environ, PATH=os.path.dirname(tempest) + ':'
               + os.environ['PATH'], TEMPEST_CONFIG_DIR=etc,
               TEMPEST_CONFIG='tempest.conf')
    env.pop('PYTHONPATH', None)
    # One test at a time, as Watcher's own gate runs them
    # (``tempest_concurrency: 1`` in watcher-tempest-base, openstack/watcher
    # .zuul.yaml): the tests share one cloud, and an audit created while
    # another class's action plan is ONGOING is cancelled by Watcher
    # (ActionPlanIsOngoing), which two workers make a race.
    proc = subprocess.run(
        [tempest, 'run', '--regex', REGEX, '--concurrency', '1'],
        cwd=workspace, env=env, capture_output=True, text=True,
        timeout=timeout)
    output = proc.stdout + proc.stderr
    with open(os.path.join(stack_mod.RUN, 'logs', 'tempest-run.log'),
              'w') as f:
        f.write(output)
    counts = totals(output)
    unexpected = [t for t in skipped(output) if t not in EXPECTED_SKIPS]
    failures = failed(output)
    checks.check(
        'Watcher\'s Tempest API tests pass with our plugins loaded',
        proc.returncode == 0 and counts['failed'] == 0
        and bool(counts['passed']) and not unexpected,
        '%(passed)s passed, %(skipped)s skipped, %(failed)s failed' % counts
        + ('; unexpected skips: %s' % ', '.join(unexpected)
           if unexpected else '')
        + ('; failed: %s' % '; '.join(failures) if failures else ''))
