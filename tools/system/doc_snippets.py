"""The docs' snippets, checked against what the system test runs.

``doc/nova.md`` and ``doc/watcher.md`` show the settings an operator puts
into ``nova.conf`` and ``watcher.conf``, and ``doc/watcher.md``'s
walkthrough the commands an operator types. The system test configures
Nova and Watcher through the devstack plugin and types its own commands;
this module reads the docs' fenced blocks so the test can check that the
two agree: every setting a doc shows is in the running service's file with
the doc's value, and the audit the test creates is one the walkthrough
shows. A doc that drifts from the plugin fails ``make system``.
"""

import os
import re
import shlex

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

#: Settings whose value is the operator's own (a database URL, a file
#: path, a broker, the emulated source's scenario and profiles): the
#: doc's is an example; only their presence counts.
SITE_SETTINGS = frozenset(['connection', 'store_connection', 'model_path',
                           'transport_url', 'host', 'scenario', 'profiles',
                           'auth_url', 'username', 'password',
                           'project_name'])


def fenced(doc, lang):
    """The fenced code blocks of ``doc`` (a path under doc/) in ``lang``.

    Blocks may be indented (inside a list item); the indentation goes.
    """
    with open(os.path.join(REPO, 'doc', doc)) as f:
        text = f.read()
    blocks = []
    for match in re.finditer(r'^( *)```%s\n(.*?)^\1```' % re.escape(lang),
                             text, re.M | re.S):
        indent = len(match.group(1))
        blocks.append('\n'.join(line[indent:] for line in
                                match.group(2).splitlines()))
    return blocks


def ini_settings(text):
    """``{(section, key): [values]}`` of an ini snippet, comments left out.

    A key repeated in one section (``available_filters``) keeps every
    value, in order.
    """
    settings = {}
    section = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(('#', ';')):
            continue
        if line.startswith('[') and line.endswith(']'):
            section = line[1:-1]
            continue
        key, _, value = line.partition('=')
        settings.setdefault((section, key.strip()), []).append(value.strip())
    return settings


def inline_comments(text):
    """Settings of an ini snippet whose value holds a ``#`` comment.

    oslo.config takes everything after ``=`` as the value, so ``host =
    cmp-1  # the host`` configures a host named with the comment.
    """
    return [line.strip() for line in text.splitlines()
            if '=' in line and not line.strip().startswith(('#', ';'))
            and ' #' in line.partition('=')[2]]


def matches(shown, actual):
    """Whether a doc's value ``shown`` describes ``actual``.

    ``...`` in the doc stands for any list items (``ComputeFilter,...,
    ContentionFilter``).
    """
    pattern = '.*'.join(re.escape(part) for part in shown.split('...'))
    return re.fullmatch(pattern, actual) is not None


def differences(shown, running):
    """What of the doc's settings ``shown`` the ``running`` file lacks.

    ``running`` is the file's ``{(section, key): [values]}``. Returns
    readable lines, empty when the file has every setting as shown.
    """
    out = []
    for (section, key), values in sorted(shown.items()):
        have = running.get((section, key))
        if have is None:
            out.append('[%s] %s is not set' % (section, key))
        elif key not in SITE_SETTINGS and (
                len(have) != len(values)
                or not all(matches(s, a) for s, a in zip(values, have))):
            out.append('[%s] %s is %s, the doc shows %s'
                       % (section, key, have, values))
    return out


def commands(doc):
    """The ``openstack ...`` commands of a doc's ``text`` blocks, as argv.

    Continuation lines are joined; trailing comments go.
    """
    found = []
    for block in fenced(doc, 'text'):
        joined = re.sub(r'\\\n\s*', ' ', block)
        for line in joined.splitlines():
            line = line.split('#', 1)[0].strip()
            if line.startswith('$ openstack '):
                found.append(shlex.split(line[2:])[1:])
    return found
