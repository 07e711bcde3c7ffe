"""Horizon with watcher-dashboard, served by the system test, and a browser.

Horizon brings Django 5 and its own client libraries, so it lives in an
environment of its own (``.system/horizon``). Sessions are signed cookies
(no memcached); watcher-dashboard's panels are enabled by copying its
``enabled`` files into Horizon's, as its install guide says; they appear
under Admin -> Optimization. A headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by Selenium from PyPI) logs in, opens the
action plans, reads the plan's efficacy indicators and actions, and takes
screenshots into ``.system/run/screenshots``.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import time

import stack as stack_mod

HORIZON_VENV = os.environ.get(
    'SYSTEM_HORIZON_VENV', os.path.join(stack_mod.REPO, '.system', 'horizon'))
PORT = 25080
BROWSER_FLAGS = ('--headless', '--no-sandbox', '--disable-gpu',
                 '--disable-quic', '--no-first-run',
                 '--disable-background-networking',
                 '--disable-component-update', '--disable-sync',
                 '--window-size=1400,1000')

SETTINGS = '''\
from openstack_dashboard.settings import *  # noqa

# DEBUG: Django serves the static files itself (no web server in front)
# and django-compressor compiles the SCSS on first use (no offline step).
DEBUG = True
COMPRESS_OFFLINE = False
ALLOWED_HOSTS = ['*']
SECRET_KEY = 'contention-system-test'
OPENSTACK_HOST = '127.0.0.1'
OPENSTACK_KEYSTONE_URL = %(keystone)r
OPENSTACK_KEYSTONE_DEFAULT_ROLE = 'member'
SESSION_ENGINE = 'django.contrib.sessions.backends.signed_cookies'
CACHES = {'default': {
    'BACKEND': 'django.core.cache.backends.locmem.LocMemCache'}}
OPENSTACK_SSL_NO_VERIFY = True
'''


WSGI = '''\
import os
os.environ['DJANGO_SETTINGS_MODULE'] = 'system_settings'
from django.core.wsgi import get_wsgi_application  # noqa: E402
application = get_wsgi_application()
'''


def site_packages():
    return glob.glob(os.path.join(HORIZON_VENV, 'lib', 'python3*',
                                  'site-packages'))[0]


def prepare():
    """Settings, watcher-dashboard's panels, static files (once)."""
    site = site_packages()
    enabled = os.path.join(site, 'openstack_dashboard', 'local', 'enabled')
    for path in glob.glob(os.path.join(site, 'watcher_dashboard', 'local',
                                       'enabled', '_*.py')):
        shutil.copy(path, enabled)
    run_dir = os.path.join(stack_mod.RUN, 'horizon')
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, 'system_settings.py'), 'w') as f:
        f.write(SETTINGS % {'keystone': stack_mod.url('keystone')})
    # openstack_dashboard.wsgi forces its own settings module; ours:
    with open(os.path.join(run_dir, 'system_wsgi.py'), 'w') as f:
        f.write(WSGI)
    return run_dir, horizon_env(run_dir)


def horizon_env(run_dir):
    return dict(os.environ, PYTHONPATH=run_dir,
                DJANGO_SETTINGS_MODULE='system_settings')


def start(st):
    run_dir, env = prepare()
    cmd = [os.path.join(HORIZON_VENV, 'bin', 'gunicorn'), '--chdir', run_dir,
           '--bind', '127.0.0.1:%d' % PORT, '--workers', '1', '--threads',
           '4', '--worker-class', 'gthread', '--timeout', '300',
           'system_wsgi:application']
    st.start('horizon', cmd, env=dict(env, PATH=os.path.join(
        HORIZON_VENV, 'bin') + ':' + os.environ['PATH']))
    stack_mod.wait_http('http://127.0.0.1:%d/auth/login/' % PORT,
                        timeout=300, what='horizon', stack=st)
    stack_mod.log('horizon is up on port %d' % PORT)


def browse(checks, plan_uuid, start_plan=False):
    """Log in, read the plan's page, screenshot; optionally start it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    shots = os.path.join(stack_mod.RUN, 'screenshots')
    os.makedirs(shots, exist_ok=True)
    options = webdriver.ChromeOptions()
    options.binary_location = '/usr/bin/chromium'
    for flag in BROWSER_FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service('/usr/bin/chromedriver'),
                              options=options)
    base = 'http://127.0.0.1:%d' % PORT
    try:
        driver.set_page_load_timeout(300)
        driver.get(base + '/auth/login/')
        driver.find_element(By.ID, 'id_username').send_keys('admin')
        driver.find_element(By.ID, 'id_password').send_keys(
            stack_mod.PASSWORD)
        driver.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
        time.sleep(3)
        driver.get(base + '/admin/action_plans/')
        time.sleep(2)
        driver.save_screenshot(os.path.join(shots, 'action-plans.png'))
        listing = driver.page_source
        checks.check('Horizon: Admin -> Optimization -> Action Plans lists '
                     'the plan', plan_uuid in listing)
        driver.get(base + '/admin/action_plans/%s/detail' % plan_uuid)
        time.sleep(2)
        driver.save_screenshot(os.path.join(shots, 'action-plan.png'))
        page = driver.page_source
        checks.check('Horizon: the plan page shows our efficacy indicators',
                     'llc_miss_spread' in page.replace(' ', '_').lower())
        # watcher-dashboard shows an action's type titled, underscores
        # replaced ("Contention Swap").
        checks.check('Horizon: the plan page lists the contention_swap '
                     'actions', 'Contention Swap' in page
                     or 'contention_swap' in page)
        if start_plan:
            _start(driver, base, checks, plan_uuid, shots)
    finally:
        driver.quit()


def _start(driver, base, checks, plan_uuid, shots):
    """Start the plan as an operator does: its row's button, confirmed.

    Horizon names a row action's button ``<table>__row_<id>__action_<name>``;
    watcher-dashboard's "Start Action Plan" asks for confirmation in a
    modal first.
    """
    from selenium.webdriver.common.by import By

    driver.get(base + '/admin/action_plans/')
    time.sleep(2)
    button = driver.find_elements(
        By.ID, 'action_plans__row_%s__action_start_action_plan' % plan_uuid)
    checks.check('Horizon: the plan has a Start Action Plan button',
                 bool(button))
    if not button:
        return
    button[0].click()
    time.sleep(2)
    confirm = driver.find_elements(
        By.CSS_SELECTOR, '.modal-footer .btn-primary, .modal-footer .btn-danger')
    if confirm:
        confirm[0].click()
    time.sleep(3)
    driver.save_screenshot(os.path.join(shots, 'action-plan-started.png'))
    page = driver.page_source
    checks.check('Horizon: Start Action Plan is confirmed and accepted',
                 'Action Plan started' in page,
                 'confirmation dialog %s' % ('clicked' if confirm
                                             else 'not shown'))


class _Printer(object):
    """Checks as JSON lines, read back by :func:`browse_in_horizon_env`."""

    def check(self, name, ok, detail=''):
        print('CHECK ' + json.dumps([name, bool(ok), str(detail)[:300]]))


def browse_in_horizon_env(checks, plan_uuid, start_plan=False):
    """Run :func:`browse` with Horizon's Python (Selenium lives there)."""
    proc = subprocess.run(
        [os.path.join(HORIZON_VENV, 'bin', 'python'),
         os.path.abspath(__file__), 'browse', plan_uuid]
        + (['start'] if start_plan else []),
        capture_output=True, text=True, timeout=900,
        env=dict(os.environ, SYSTEM_RUN_DIR=stack_mod.RUN))
    with open(os.path.join(stack_mod.RUN, 'logs', 'browser.log'), 'w') as f:
        f.write(proc.stdout + proc.stderr)
    seen = False
    for line in proc.stdout.splitlines():
        if line.startswith('CHECK '):
            name, ok, detail = json.loads(line[len('CHECK '):])
            checks.check(name, ok, detail)
            seen = True
    if proc.returncode or not seen:
        checks.check('the browser session ran', False,
                     'see logs/browser.log')


if __name__ == '__main__':
    if sys.argv[1:2] == ['browse']:
        browse(_Printer(), sys.argv[2], start_plan=sys.argv[3:4] == ['start'])
